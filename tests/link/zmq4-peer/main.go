// zmq4-peer: one socket of go-zeromq/zmq4 (a ZMTP 3 implementation in pure Go that shares no
// code with libzmq), driven line by line over stdin/stdout by tests/link/zmq4_interop_test.cpp.
//
//	zmq4-peer <PUSH|PULL|PUB|SUB|REQ|REP|DEALER|ROUTER|PAIR> <bind|connect> <endpoint>
//
// It prints "ready" once the socket is bound (or its dial started), then for each command line:
//
//	send P1 P2 ...  sends one message whose parts are P1, P2, ... ("x" + hex of the bytes:
//	                "x" alone is an empty part); answers "sent" or "error <why>"
//	recv            receives one message; answers "msg P1 P2 ..." (same encoding) or "error <why>"
//	sub P           subscribes to topic P (SUB); answers "ok" or "error <why>"
//	quit            closes the socket and exits 0
//
// A receive waits at most 10 s (then "error timeout"); stdin closing exits too.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"
)

func newSocket(ctx context.Context, kind string) (zmq4.Socket, error) {
	opts := []zmq4.Option{zmq4.WithDialerRetry(20 * time.Millisecond), zmq4.WithDialerMaxRetries(500)}
	switch kind {
	case "PUSH":
		return zmq4.NewPush(ctx, opts...), nil
	case "PULL":
		return zmq4.NewPull(ctx, opts...), nil
	case "PUB":
		return zmq4.NewPub(ctx, opts...), nil
	case "SUB":
		return zmq4.NewSub(ctx, opts...), nil
	case "REQ":
		return zmq4.NewReq(ctx, opts...), nil
	case "REP":
		return zmq4.NewRep(ctx, opts...), nil
	case "DEALER":
		return zmq4.NewDealer(ctx, opts...), nil
	case "ROUTER":
		return zmq4.NewRouter(ctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("zmq4-router")))...), nil
	case "PAIR":
		return zmq4.NewPair(ctx, opts...), nil
	}
	return nil, fmt.Errorf("unknown socket type %q", kind)
}

func decode(fields []string) ([][]byte, error) {
	parts := make([][]byte, 0, len(fields))
	for _, f := range fields {
		if !strings.HasPrefix(f, "x") {
			return nil, fmt.Errorf("part %q lacks the x prefix", f)
		}
		b, err := hex.DecodeString(f[1:])
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
	}
	return parts, nil
}

func encode(parts [][]byte) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteByte('x')
		sb.WriteString(hex.EncodeToString(p))
	}
	return sb.String()
}

type received struct {
	msg zmq4.Msg
	err error
}

func main() {
	if len(os.Args) != 4 || (os.Args[2] != "bind" && os.Args[2] != "connect") {
		fmt.Fprintln(os.Stderr, "usage: zmq4-peer <TYPE> <bind|connect> <endpoint>")
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock, err := newSocket(ctx, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer sock.Close()
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, a ...any) {
		fmt.Fprintf(out, format+"\n", a...)
		out.Flush()
	}
	if os.Args[2] == "bind" {
		err = sock.Listen(os.Args[3])
	} else {
		// Dial blocks until the peer answers (retrying): run it aside so that commands flow.
		go func() {
			if err := sock.Dial(os.Args[3]); err != nil {
				fmt.Fprintln(os.Stderr, "dial:", err)
				os.Exit(1)
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	say("ready")

	// One receiver goroutine, so that a timed-out recv leaves no second reader behind.
	inbox := make(chan received)
	wantRecv := make(chan struct{})
	go func() {
		for range wantRecv {
			m, err := sock.Recv()
			inbox <- received{m, err}
		}
	}()
	pending := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "send":
			parts, err := decode(fields[1:])
			if err == nil {
				// zmq4's REQ fails a send at once while its connection is not in its pool yet
				// (libzmq's would queue it): the peer's handshake may end before ours. Retry
				// that one error for up to 5 s.
				deadline := time.Now().Add(5 * time.Second)
				for {
					err = sock.SendMulti(zmq4.NewMsgFrom(parts...))
					if err == nil || !strings.Contains(err.Error(), "no connections available") || time.Now().After(deadline) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err != nil {
				say("error %v", err)
			} else {
				say("sent")
			}
		case "recv":
			if pending == 0 {
				wantRecv <- struct{}{}
				pending = 1
			}
			select {
			case r := <-inbox:
				pending = 0
				if r.err != nil {
					say("error %v", r.err)
				} else {
					say("msg %s", encode(r.msg.Frames))
				}
			case <-time.After(10 * time.Second):
				say("error timeout")
			}
		case "sub":
			parts, err := decode(fields[1:])
			if err == nil && len(parts) != 1 {
				err = fmt.Errorf("sub takes one topic")
			}
			if err == nil {
				err = sock.SetOption(zmq4.OptionSubscribe, string(parts[0]))
			}
			if err != nil {
				say("error %v", err)
			} else {
				say("ok")
			}
		case "quit":
			return
		default:
			say("error unknown command %q", fields[0])
		}
	}
}
