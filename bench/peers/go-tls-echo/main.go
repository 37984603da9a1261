// go-tls-echo: the Go crypto/tls peer of strix's TLS echo shoot-out.
//
// Wire format: a 4-byte little-endian total length (the 4 header bytes included), then the body.
// Every message is echoed back unchanged as a message of its own.
//
// Written the way a Go user writes a TLS echo server: net.Listen, crypto/tls.Server on every
// accepted connection, one goroutine per connection. gnet (the plain peer) has no TLS of its
// own, so this peer uses the standard library's net poller instead; its threads are the Go
// runtime's: --threads sets GOMAXPROCS (default runtime.NumCPU(), the CPUs this process may run
// on), the counterpart of gnet-echo's --loops and tokio's --threads.
//
// Write coalescing as in gnet-echo and tokio-echo: after each Read the goroutine walks the
// complete frames at the front of its input and writes all of them back with one Write (which
// crypto/tls seals into as few records as fit); a partial frame stays for the next Read.
//
// TLS: 1.2 and 1.3 (crypto/tls's defaults for cipher suites and curves), session resumption by
// tickets (crypto/tls issues them by default, for both versions), ALPN when --alpn is given.
//
// Options: --port P (default 7001), --threads N, --cert FILE --key FILE (PEM, required),
// --alpn NAME. Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or SIGINT
// with exit status 0.
package main

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

const (
	headerSize = 4
	// The largest message accepted, like strix-echo-server's default --max-frame.
	maxFrame  = 64 * 1024
	readChunk = 64 * 1024
	// A client that opens a connection and never finishes its handshake is dropped.
	handshakeTimeout = 10 * time.Second
)

// serve echoes frames on one connection until the peer closes it or sends a malformed length.
func serve(raw net.Conn, cfg *tls.Config) {
	conn := tls.Server(raw, cfg)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := conn.Handshake(); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	buf := make([]byte, readChunk+maxFrame)
	have := 0
	for {
		if have == len(buf) {
			return // cannot happen: a frame is at most maxFrame and the buffer holds more
		}
		n, err := conn.Read(buf[have:])
		have += n
		// Find the end of the last complete frame.
		end := 0
		for have-end >= headerSize {
			size := int(binary.LittleEndian.Uint32(buf[end:]))
			if size < headerSize || size > maxFrame {
				return // malformed length: drop the connection
			}
			if have-end < size {
				break
			}
			end += size
		}
		if end > 0 {
			if _, werr := conn.Write(buf[:end]); werr != nil {
				return
			}
			// What is left is at most a partial frame: cheap to move to the front.
			have = copy(buf, buf[end:have])
		}
		if err != nil {
			return // io.EOF or a reset: the connection is over
		}
	}
}

func loadConfig(certFile, keyFile, alpn string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert %s / --key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		MaxVersion:   tls.VersionTLS13,
		// Tickets are on by default; said here because the benchmark measures resumption.
		SessionTicketsDisabled: false,
	}
	if alpn != "" {
		cfg.NextProtos = []string{alpn}
	}
	return cfg, nil
}

func main() {
	port := flag.Int("port", 7001, "TCP port on 127.0.0.1")
	threads := flag.Int("threads", runtime.NumCPU(), "GOMAXPROCS (default: the CPUs this process may use)")
	certFile := flag.String("cert", "", "server certificate chain, PEM (required)")
	keyFile := flag.String("key", "", "server private key, PEM (required)")
	alpn := flag.String("alpn", "", "ALPN protocol to accept (default: no ALPN)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "go-tls-echo: the echo shoot-out's server on Go crypto/tls")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *port < 0 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "go-tls-echo: --port must be a number from 0 to 65535")
		os.Exit(2)
	}
	if *threads < 1 || *threads > 1024 {
		fmt.Fprintln(os.Stderr, "go-tls-echo: --threads must be a number from 1 to 1024")
		os.Exit(2)
	}
	if *certFile == "" || *keyFile == "" {
		fmt.Fprintln(os.Stderr, "go-tls-echo: --cert FILE and --key FILE are required")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)

	cfg, err := loadConfig(*certFile, *keyFile, *alpn)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-tls-echo: %v\n", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-tls-echo: 127.0.0.1:%d: %v\n", *port, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		// Open connections' goroutines end with the process; don't wait for them.
		_ = ln.Close()
		os.Exit(0)
	}()

	for {
		raw, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				select {} // shutting down: the signal goroutine exits the process
			}
			// EMFILE and friends: keep serving the connections we have.
			fmt.Fprintf(os.Stderr, "go-tls-echo: accept: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		// net sets TCP_NODELAY on accepted TCP connections by default.
		go serve(raw, cfg)
	}
}
