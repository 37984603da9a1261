#!/usr/bin/env python3
"""PUSH/PULL throughput through pyzmq, the way libzmq's perf/local_thr and remote_thr measure it.

usage: pyzmq_thr.py recv|send <endpoint> <message-size> <message-count>

recv binds a PULL socket, takes <message-count> messages (each must have <message-size> bytes)
and times them from the first to the last; send connects a PUSH socket and sends them, then
waits for them to leave (linger -1). Both print the libzmq they loaded; recv prints local_thr's
lines:
    library: /path/to/libzmq.so.5...
    message size: 64 [B]
    message count: N
    mean throughput: N [msg/s]
    mean throughput: X [Mb/s]
A message of another size exits 1.
"""
import sys
import time

import zmq

from pyzmq_common import loaded_libzmq, parse


def receive(endpoint, size, count):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.bind(endpoint)
    print(f"library: {loaded_libzmq()}", flush=True)
    first = sock.recv()
    start = time.perf_counter()
    bad = len(first) != size
    recv = sock.recv
    for _ in range(count - 1):
        if len(recv()) != size:
            bad = True
    elapsed = max(time.perf_counter() - start, 1e-6)
    sock.close()
    ctx.term()
    if bad:
        print("pyzmq_thr: message of incorrect size received", file=sys.stderr)
        sys.exit(1)
    rate = count / elapsed
    print(f"message size: {size} [B]")
    print(f"message count: {count}")
    print(f"mean throughput: {int(rate)} [msg/s]")
    print(f"mean throughput: {rate * size * 8 / 1e6:.3f} [Mb/s]")


def send(endpoint, size, count):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.connect(endpoint)
    print(f"library: {loaded_libzmq()}", flush=True)
    payload = b"\0" * size
    send = sock.send
    for _ in range(count):
        send(payload)
    sock.close()  # linger -1: returns at once; term() waits until the messages are out
    ctx.term()


def main():
    role, endpoint, size, count = parse("pyzmq_thr.py recv|send <endpoint> <message-size> <message-count>",
                                        ("recv", "send"))
    (receive if role == "recv" else send)(endpoint, size, count)


if __name__ == "__main__":
    main()
