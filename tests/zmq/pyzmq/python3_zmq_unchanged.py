#!/usr/bin/env python3
"""An unchanged binary on a libzmq: Debian's python3-zmq (built against the system's
libzmq.so.5) run by Debian's python3 with LD_LIBRARY_PATH pointing at another libzmq.so.5 (make
test, label zmq-suite).

  LD_LIBRARY_PATH=<build>/zmq/lib /usr/bin/python3 python3_zmq_unchanged.py <expected libzmq.so.5>

Proves first that the zmq module is Debian's and that the process mapped exactly one libzmq, the
expected file (/proc/self/maps), then does real work over it and checks every message's
contents: PUSH/PULL, REQ/REP and PUB/SUB over tcp and inproc, multipart messages, a Poller over
several sockets, and a clean context term.
Exit 0: all of it held; 1: a check failed (printed); 77 (skip): python3-zmq is not installed.
"""

import os
import sys
import time

try:
    import zmq
except ImportError:
    print("python3-zmq: SKIP: Debian's python3-zmq is not installed (scripts/install-deps.sh)")
    sys.exit(77)

TIMEOUT_MS = 5000


def loaded_libzmq():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libzmq"):
                paths.add(fields[5].strip())
    return sorted(paths)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def recv(sock, multipart=False):
    check(sock.poll(TIMEOUT_MS, zmq.POLLIN), f"{sock.type}: nothing to receive in {TIMEOUT_MS} ms")
    return sock.recv_multipart() if multipart else sock.recv()


def bind_connect(ctx, bind_type, connect_type, transport):
    a, b = ctx.socket(bind_type), ctx.socket(connect_type)
    for s in (a, b):
        s.linger = 0
    if transport == "tcp":
        port = a.bind_to_random_port("tcp://127.0.0.1")
        endpoint = f"tcp://127.0.0.1:{port}"
        check(a.getsockopt(zmq.LAST_ENDPOINT).decode() == endpoint, "ZMQ_LAST_ENDPOINT")
    else:
        endpoint = f"inproc://unchanged-{bind_type}-{connect_type}"
        a.bind(endpoint)
    b.connect(endpoint)
    return a, b


def push_pull(ctx, transport):
    pull, push = bind_connect(ctx, zmq.PULL, zmq.PUSH, transport)
    sent = [f"push {i} over {transport}".encode() * (1 + i % 7) for i in range(200)]
    for m in sent:
        push.send(m)
    got = [recv(pull) for _ in sent]
    check(got == sent, f"PUSH/PULL over {transport}: messages differ or arrive out of order")
    push.send_multipart([b"a", b"", b"c" * 100000])
    check(recv(pull, True) == [b"a", b"", b"c" * 100000], f"PUSH/PULL over {transport}: multipart")
    for s in (push, pull):
        s.close()


def req_rep(ctx, transport):
    rep, req = bind_connect(ctx, zmq.REP, zmq.REQ, transport)
    for i in range(50):
        req.send_multipart([b"question", str(i).encode()])
        q = recv(rep, True)
        check(q == [b"question", str(i).encode()], f"REQ/REP over {transport}: request {q}")
        rep.send(b"answer %d" % (i * i))
        check(recv(req) == b"answer %d" % (i * i), f"REQ/REP over {transport}: reply")
    try:
        req.recv(zmq.NOBLOCK)
        check(False, "REQ recv out of turn did not fail")
    except zmq.ZMQError as e:
        check(e.errno == zmq.EFSM, f"REQ recv out of turn: errno {e.errno}, not EFSM")
    for s in (req, rep):
        s.close()


def pub_sub(ctx, transport):
    pub, sub = bind_connect(ctx, zmq.PUB, zmq.SUB, transport)
    sub.setsockopt(zmq.SUBSCRIBE, b"wanted.")
    # A subscription reaches the publisher asynchronously: publish until the first one arrives.
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not sub.poll(10, zmq.POLLIN):
        check(time.monotonic() < deadline, f"PUB/SUB over {transport}: the subscription never took")
        pub.send(b"wanted.probe")
    for i in range(100):
        pub.send_multipart([b"unwanted.%d" % i, b"x"])
        pub.send_multipart([b"wanted.%d" % i, b"payload %d" % i])
    got = []
    while len(got) < 100:
        message = recv(sub, True)
        if message != [b"wanted.probe"]:  # probes still on their way come first
            got.append(message)
    check(got == [[b"wanted.%d" % i, b"payload %d" % i] for i in range(100)],
          f"PUB/SUB over {transport}: the filter or the contents are wrong")
    check(not sub.poll(100, zmq.POLLIN), f"PUB/SUB over {transport}: an unsubscribed topic arrived")
    for s in (pub, sub):
        s.close()


def poller(ctx):
    pulls, pushes = [], []
    for transport in ("tcp", "inproc", "tcp"):
        pull, push = bind_connect(ctx, zmq.PULL, zmq.PUSH, transport)
        pulls.append(pull)
        pushes.append(push)
    p = zmq.Poller()
    for s in pulls:
        p.register(s, zmq.POLLIN)
    check(p.poll(50) == [], "Poller: an event with nothing sent")
    pushes[2].send(b"third")
    pushes[0].send(b"first")
    seen = {}
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while len(seen) < 2 and time.monotonic() < deadline:
        for s, ev in p.poll(100):
            check(ev == zmq.POLLIN, f"Poller: event {ev}")
            seen[pulls.index(s)] = s.recv()
    check(seen == {0: b"first", 2: b"third"}, f"Poller: saw {seen}")
    check(p.poll(50) == [], "Poller: an event after everything was read")
    for s in pulls + pushes:
        s.close()


def main():
    expected = sys.argv[1]
    check(zmq.__file__.startswith("/usr/lib/python3/dist-packages/"),
          f"zmq is {zmq.__file__}, not Debian's python3-zmq")
    libs = loaded_libzmq()
    check(len(libs) == 1 and os.path.samefile(libs[0], expected),
          f"the process mapped {libs}, not {os.path.realpath(expected)}")
    print(f"python3-zmq {zmq.pyzmq_version()} ({os.path.dirname(zmq.__file__)}) loaded {libs[0]}, "
          f"zmq_version {zmq.zmq_version()}, LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')}")
    ctx = zmq.Context()
    for transport in ("tcp", "inproc"):
        push_pull(ctx, transport)
        req_rep(ctx, transport)
        pub_sub(ctx, transport)
        print(f"PUSH/PULL, REQ/REP, PUB/SUB over {transport}: contents as sent")
    poller(ctx)
    print("Poller over tcp and inproc PULL sockets: the right sockets, the right messages")
    ctx.term()
    print("context terminated")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"python3-zmq: FAIL: {e}")
        sys.exit(1)
