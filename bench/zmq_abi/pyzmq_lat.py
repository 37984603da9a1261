#!/usr/bin/env python3
"""REQ/REP round trips through pyzmq, each timed alone (what bench/zmq_abi/zmq_rtt.c does in C).

usage: pyzmq_lat.py rep|req <endpoint> <message-size> <roundtrip-count>

rep binds a REP socket and answers <roundtrip-count> requests with the message it got; req
connects a REQ socket, sends <message-size>-byte requests and times each round trip. Both print
the libzmq they loaded; req prints:
    library: /path/to/libzmq.so.5...
    message size: 64 [B]
    roundtrip count: N
    average roundtrip: X [us]
    p50 roundtrip: X [us]
    p99 roundtrip: X [us]
A message of another size exits 1.
"""
import math
import sys
import time

import zmq

from pyzmq_common import loaded_libzmq, parse


def reply(endpoint, size, count):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    print(f"library: {loaded_libzmq()}", flush=True)
    for _ in range(count):
        msg = sock.recv()
        if len(msg) != size:
            print(f"pyzmq_lat: request of {len(msg)} bytes, expected {size}", file=sys.stderr)
            sys.exit(1)
        sock.send(msg)
    sock.close()
    ctx.term()


def nearest_rank(sorted_values, p):
    rank = min(max(math.ceil(p / 100 * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def request(endpoint, size, count):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.connect(endpoint)
    print(f"library: {loaded_libzmq()}", flush=True)
    payload = b"\0" * size
    clock = time.perf_counter
    rtt = []
    for _ in range(count):
        t0 = clock()
        sock.send(payload)
        msg = sock.recv()
        rtt.append((clock() - t0) * 1e6)
        if len(msg) != size:
            print(f"pyzmq_lat: reply of {len(msg)} bytes, expected {size}", file=sys.stderr)
            sys.exit(1)
    sock.close()
    ctx.term()
    total = sum(rtt)
    rtt.sort()
    print(f"message size: {size} [B]")
    print(f"roundtrip count: {count}")
    print(f"average roundtrip: {total / count:.3f} [us]")
    print(f"p50 roundtrip: {nearest_rank(rtt, 50):.3f} [us]")
    print(f"p99 roundtrip: {nearest_rank(rtt, 99):.3f} [us]")


def main():
    role, endpoint, size, count = parse("pyzmq_lat.py rep|req <endpoint> <message-size> <roundtrip-count>",
                                        ("rep", "req"))
    (reply if role == "rep" else request)(endpoint, size, count)


if __name__ == "__main__":
    main()
