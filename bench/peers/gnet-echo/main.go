// gnet-echo: the gnet peer of strix's echo shoot-out (the Echo server shoot-out's method).
//
// Wire format: a 4-byte little-endian total length (the 4 header bytes included), then the body.
// Every message is echoed back unchanged as a message of its own.
//
// Written the way gnet's users write one: an event handler on gnet/v2's multicore engine
// (one event loop per CPU by default, connections spread over them by the kernel's
// SO_REUSEPORT or gnet's own balancing). OnTraffic peeks at everything buffered, walks the
// complete frames, writes all of them back with one Write and then discards them; a partial
// frame stays in gnet's inbound buffer for the next event. Because the complete frames lie
// back to back in the input, echoing each message and coalescing them is the same bytes as
// one Write of the run of complete frames: one write(2) per event, the coalescing the shoot-out
// asks of an engine, with nothing gnet users would not write (no extra goroutines, no
// AsyncWrite from other goroutines, no edge-triggered or locked-thread tuning).
//
// Options: --port P (default 7001), --loops N (event loops, default runtime.NumCPU(), which
// counts the CPUs this process may run on). Prints "listening on 127.0.0.1:P" when it accepts.
// Stops on SIGTERM or SIGINT with exit status 0.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

const (
	headerSize = 4
	// The largest message accepted, like strix-echo-server's default --max-frame.
	maxFrame = 64 * 1024
)

type echoServer struct {
	gnet.BuiltinEventEngine
	port   int
	engine chan gnet.Engine
}

func (s *echoServer) OnBoot(eng gnet.Engine) gnet.Action {
	fmt.Printf("listening on 127.0.0.1:%d\n", s.port)
	s.engine <- eng
	return gnet.None
}

func (s *echoServer) OnTraffic(c gnet.Conn) gnet.Action {
	buf, err := c.Peek(-1)
	if err != nil {
		return gnet.Close
	}
	// Find the end of the last complete frame.
	end := 0
	for len(buf)-end >= headerSize {
		n := int(binary.LittleEndian.Uint32(buf[end:]))
		if n < headerSize || n > maxFrame {
			return gnet.Close // malformed length: drop the connection
		}
		if len(buf)-end < n {
			break
		}
		end += n
	}
	if end == 0 {
		return gnet.None
	}
	// Write copies what the socket does not take into the outbound buffer, so the peeked
	// bytes may be discarded right after.
	if _, err := c.Write(buf[:end]); err != nil {
		return gnet.Close
	}
	_, _ = c.Discard(end)
	return gnet.None
}

func main() {
	port := flag.Int("port", 7001, "TCP port on 127.0.0.1")
	loops := flag.Int("loops", runtime.NumCPU(), "event loops (default: the CPUs this process may use)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "gnet-echo: the Echo server shoot-out's echo server on gnet/v2")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *port < 1 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "gnet-echo: --port must be a number from 1 to 65535")
		os.Exit(2)
	}
	if *loops < 1 || *loops > 1024 {
		fmt.Fprintln(os.Stderr, "gnet-echo: --loops must be a number from 1 to 1024")
		os.Exit(2)
	}

	s := &echoServer{port: *port, engine: make(chan gnet.Engine, 1)}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		eng := <-s.engine
		<-sigs
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = eng.Stop(ctx)
	}()

	err := gnet.Run(s, fmt.Sprintf("tcp://127.0.0.1:%d", *port),
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(*loops),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogLevel(logging.WarnLevel))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gnet-echo: 127.0.0.1:%d: %v\n", *port, err)
		os.Exit(1)
	}
}
