// gobwas-echo: the gobwas/ws peer of strix's WebSocket echo shoot-out, and the peer
// of its broadcast test.
//
// Written with gobwas/ws's low-level API, the way its README recommends for speed: ws.Upgrade
// reads the HTTP/1.1 upgrade straight from the net.Conn (no net/http server, no per-request
// allocations), then the loop reads frame headers with ws.ReadHeader, reads the payload into a
// reused buffer, unmasks it with ws.Cipher and writes the echo with ws.WriteHeader + Write. One
// goroutine per connection (Go's netpoller underneath), with a bufio.Reader and bufio.Writer on
// the connection: the writer is flushed only when the next read would block (the input holds
// no complete header or payload), so a read that brought 128 messages costs one write, the
// coalescing tokio-echo and gnet-echo do for the plain echo.
//
// Echo mode (default): every frame of a text or binary message is echoed back with its opcode
// and FIN bit, so a message comes back as the message it was; pings get a pong, a close gets a
// close with the same code, then the connection ends.
//
// --broadcast: every text or binary message from any client is sent to every connected client,
// the sender included, as one frame built once (header + payload in one []byte shared by all
// receivers). Each client has a writer goroutine fed by a channel; it flushes when the channel
// is empty. A full channel blocks the broadcasting reader: backpressure, never a dropped
// message.
//
// Options: --port P (default 7001), --threads N (GOMAXPROCS, default: the CPUs this process may
// run on), --broadcast. Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or
// SIGINT with exit status 0.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"github.com/gobwas/ws"
)

const (
	// The largest message accepted, like strix-echo-server's default --max-frame.
	maxMessage = 64 * 1024
	bufSize    = 16 * 1024
	// Frames queued per broadcast receiver before the broadcaster waits.
	queueDepth = 1024
)

// peer is one upgraded connection with its buffered reader and the reused payload buffer.
type peer struct {
	conn    net.Conn
	br      *bufio.Reader
	payload []byte
}

// readFrame reads the next frame and unmasks its payload (valid until the next call). flush
// runs before any read that would block, so no echo waits in the writer while we wait for input.
func (p *peer) readFrame(flush func() error) (ws.Header, []byte, error) {
	if p.br.Buffered() < ws.MinHeaderSize {
		if err := flush(); err != nil {
			return ws.Header{}, nil, err
		}
	}
	h, err := ws.ReadHeader(p.br)
	if err != nil {
		return h, nil, err
	}
	if !h.Masked {
		return h, nil, fmt.Errorf("unmasked client frame")
	}
	if h.Length > maxMessage {
		return h, nil, fmt.Errorf("frame of %d bytes is over the limit", h.Length)
	}
	n := int(h.Length)
	if cap(p.payload) < n {
		p.payload = make([]byte, n)
	}
	payload := p.payload[:n]
	if p.br.Buffered() < n {
		if err := flush(); err != nil {
			return h, nil, err
		}
	}
	if _, err := io.ReadFull(p.br, payload); err != nil {
		return h, nil, err
	}
	ws.Cipher(payload, h.Mask, 0)
	return h, payload, nil
}

// writeFrame appends one unmasked frame to w.
func writeFrame(w io.Writer, op ws.OpCode, fin bool, payload []byte) error {
	if err := ws.WriteHeader(w, ws.Header{Fin: fin, OpCode: op, Length: int64(len(payload))}); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

func serveEcho(conn net.Conn) {
	defer conn.Close()
	if _, err := ws.Upgrade(conn); err != nil {
		return
	}
	p := &peer{conn: conn, br: bufio.NewReaderSize(conn, bufSize)}
	bw := bufio.NewWriterSize(conn, bufSize)
	for {
		h, payload, err := p.readFrame(bw.Flush)
		if err != nil {
			return
		}
		switch h.OpCode {
		case ws.OpPing:
			err = writeFrame(bw, ws.OpPong, true, payload)
		case ws.OpPong:
		case ws.OpClose:
			// Return the client's close (its code and reason), then end.
			if writeFrame(bw, ws.OpClose, true, payload) == nil {
				bw.Flush()
			}
			return
		default:
			err = writeFrame(bw, h.OpCode, h.Fin, payload)
		}
		if err != nil {
			return
		}
	}
}

// ---- --broadcast ----------------------------------------------------------------------------

type client struct {
	out chan []byte
}

type hub struct {
	mu      sync.RWMutex
	clients map[*client]struct{}
}

func (hb *hub) join(c *client) {
	hb.mu.Lock()
	hb.clients[c] = struct{}{}
	hb.mu.Unlock()
}

func (hb *hub) leave(c *client) {
	hb.mu.Lock()
	delete(hb.clients, c)
	hb.mu.Unlock()
	close(c.out)
}

func (hb *hub) send(frame []byte) {
	hb.mu.RLock()
	for c := range hb.clients {
		c.out <- frame
	}
	hb.mu.RUnlock()
}

// writeLoop writes c's frames, flushing when none is waiting. After a write error it keeps
// draining the channel (a broadcaster must never wait on a dead client) until leave closes it.
func writeLoop(conn net.Conn, c *client) {
	bw := bufio.NewWriterSize(conn, bufSize)
	broken := false
	for frame := range c.out {
		if broken {
			continue
		}
		if _, err := bw.Write(frame); err != nil {
			broken = true
			conn.Close()
			continue
		}
		if len(c.out) == 0 && bw.Flush() != nil {
			broken = true
			conn.Close()
		}
	}
}

func encodeFrame(op ws.OpCode, payload []byte) []byte {
	var b bytes.Buffer
	b.Grow(ws.MaxHeaderSize + len(payload))
	writeFrame(&b, op, true, payload)
	return b.Bytes()
}

func serveBroadcast(conn net.Conn, hb *hub) {
	defer conn.Close()
	if _, err := ws.Upgrade(conn); err != nil {
		return
	}
	c := &client{out: make(chan []byte, queueDepth)}
	go writeLoop(conn, c)
	hb.join(c)
	defer hb.leave(c)
	p := &peer{conn: conn, br: bufio.NewReaderSize(conn, bufSize)}
	noFlush := func() error { return nil }
	var message []byte // a fragmented message being reassembled
	var messageOp ws.OpCode
	for {
		h, payload, err := p.readFrame(noFlush)
		if err != nil {
			return
		}
		switch h.OpCode {
		case ws.OpPing:
			c.out <- encodeFrame(ws.OpPong, payload)
		case ws.OpPong:
		case ws.OpClose:
			c.out <- encodeFrame(ws.OpClose, payload)
			return
		case ws.OpText, ws.OpBinary:
			if h.Fin {
				hb.send(encodeFrame(h.OpCode, payload))
			} else {
				messageOp = h.OpCode
				message = append(message[:0], payload...)
			}
		case ws.OpContinuation:
			message = append(message, payload...)
			if len(message) > maxMessage {
				return
			}
			if h.Fin {
				hb.send(encodeFrame(messageOp, message))
			}
		default:
			return
		}
	}
}

func main() {
	port := flag.Int("port", 7001, "TCP port on 127.0.0.1 (0 = any free port)")
	threads := flag.Int("threads", runtime.NumCPU(), "GOMAXPROCS (default: the CPUs this process may use)")
	broadcast := flag.Bool("broadcast", false, "send every message to every client instead of echoing it")
	flag.Parse()
	if *threads < 1 || *threads > 1024 {
		fmt.Fprintln(os.Stderr, "gobwas-echo: --threads must be a number from 1 to 1024")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gobwas-echo: 127.0.0.1:%d: %v\n", *port, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	hb := &hub{clients: make(map[*client]struct{})}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				// EMFILE and friends: keep serving the connections we have.
				fmt.Fprintf(os.Stderr, "gobwas-echo: accept: %v\n", err)
				continue
			}
			if *broadcast {
				go serveBroadcast(conn, hb)
			} else {
				go serveEcho(conn)
			}
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
