#!/usr/bin/env python3
"""A TCP proxy that breaks a chat server on purpose, for chat.load_smoke's negative checks.

    fault_proxy.py --listen PORT --server PORT --fault drop|dup|swap|corrupt [--after N]

Relays every client connection to the server unchanged, except that the N-th chat_msg frame
(type 100) sent by the server, counted over all connections, is
    drop     not delivered
    dup      delivered twice
    swap     held back and delivered after the next chat_msg of the same connection
    corrupt  delivered with one byte of its text changed (the frame stays well-formed)
Exactly one fault is injected per run; strix-chat-load must notice it and fail.
Frames: 12-byte header, length (u32 little-endian, header included) at offset 0, type (u16) at 4.
"""
import argparse
import selectors
import socket
import struct

CHAT_MSG = 100


class Pipe:
    def __init__(self, client, server):
        self.client = client
        self.server = server
        self.down = bytearray()  # server -> client bytes not yet framed
        self.held = None         # a chat_msg frame held back by 'swap'


def corrupt(frame):
    # The text is the longest run of printable bytes; change one in its middle to another
    # printable byte so the FlatBuffer still verifies and only the content is wrong.
    best, start = (0, 0), None
    for i in range(12, len(frame) + 1):
        printable = i < len(frame) and 0x21 <= frame[i] <= 0x7E
        if printable and start is None:
            start = i
        elif not printable and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    mid = (best[0] + best[1]) // 2
    out = bytearray(frame)
    out[mid] = 0x21 if out[mid] != 0x21 else 0x22
    return bytes(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--server", type=int, required=True)
    ap.add_argument("--fault", choices=["drop", "dup", "swap", "corrupt"], required=True)
    ap.add_argument("--after", type=int, default=200)
    args = ap.parse_args()

    sel = selectors.DefaultSelector()
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", args.listen))
    lst.listen(1024)
    sel.register(lst, selectors.EVENT_READ, None)
    seen = 0
    armed = True

    def close(p):
        for s in (p.client, p.server):
            try:
                sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()

    while True:
        for key, _ in sel.select():
            if key.data is None:
                c, _ = lst.accept()
                print("accepted", flush=True)  # counted by the smoke test's targets mode
                s = socket.create_connection(("127.0.0.1", args.server))
                for x in (c, s):
                    x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                p = Pipe(c, s)
                sel.register(c, selectors.EVENT_READ, (p, "up"))
                sel.register(s, selectors.EVENT_READ, (p, "down"))
                continue
            p, direction = key.data
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                close(p)
                continue
            if direction == "up":
                p.server.sendall(data)
                continue
            p.down += data
            out = bytearray()
            while len(p.down) >= 12:
                length, ftype = struct.unpack_from("<IH", p.down, 0)
                if len(p.down) < length:
                    break
                frame = bytes(p.down[:length])
                del p.down[:length]
                if ftype != CHAT_MSG:
                    out += frame
                    continue
                if p.held is not None:
                    out += frame + p.held
                    p.held = None
                    continue
                seen += 1
                if not armed or seen < args.after:
                    out += frame
                    continue
                armed = False
                if args.fault == "dup":
                    out += frame + frame
                elif args.fault == "swap":
                    p.held = frame
                elif args.fault == "corrupt":
                    out += corrupt(frame)
                # drop: nothing
            if out:
                p.client.sendall(out)


if __name__ == "__main__":
    main()
