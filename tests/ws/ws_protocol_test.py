#!/usr/bin/env python3
"""WebSocket protocol and hostile-client tests against strix-echo-server --ws.

A second client library (python3-websockets) for the ordinary exchanges, raw sockets for what no
library sends: unmasked frames, a 2^63 length, RSV bits, bad UTF-8 (also split across fragments),
endless fragments, ping floods, half-finished and oversized handshakes. Each must end with the
right close code (or HTTP status) and be counted; the server's counters are read from its exit
report and compared with what this script caused, exactly. Others stay served throughout.

    ws_protocol_test.py <strix-echo-server binary> <epoll|uring>
"""
import asyncio
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

try:
    import websockets
except ImportError:
    print("SKIP: the Python websockets library is missing (python3-websockets)")
    sys.exit(77)

MAX_MESSAGE = 65536
MAX_FRAGMENTS = 64
HANDSHAKE_MS = 500
PINGS_PER_SECOND = 50

failures = []
expected = {"handshakes": 0, "refused": 0, "handshake timeouts": 0, "handshake": 0, "protocol": 0,
            "invalid payload": 0, "too big": 0, "policy": 0}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    """A port below the ephemeral range (scripts/free_port.py says why)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "free_port.py")
    return int(subprocess.run([sys.executable, script], check=True, capture_output=True, text=True).stdout)


def frame(opcode, payload=b"", fin=True, masked=True, rsv=0, length=None):
    """One frame as a client sends it; length overrides the announced payload length."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    mask_bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([mask_bit | n])
    elif n <= 0xFFFF:
        head += bytes([mask_bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class raw_client:
    """A blocking socket that did the upgrade by hand."""

    def __init__(self, port, upgrade=True):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        if upgrade:
            self.s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            head = self.read_until(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101 "), head
            expected["handshakes"] += 1

    def read_until(self, sep):
        while sep not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self):
        """(opcode, payload) of the next server frame (which must be unmasked)."""
        b0, b1 = self.read_exact(2)
        assert b1 & 0x80 == 0, "server frames are not masked"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.read_exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.read_exact(8))[0]
        return b0 & 0x0F, self.read_exact(n)

    def expect_close(self, code):
        """Skips data and pongs up to the server's close frame; true if it has `code` and the
        server then closes the TCP connection."""
        try:
            while True:
                op, payload = self.read_frame()
                if op == 0x8:
                    break
            got = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
            self.s.settimeout(5)
            eof = self.s.recv(1) == b"" if not self.buf else False
            return got == code and eof
        except (EOFError, OSError, AssertionError):
            return False

    def send(self, data):
        self.s.sendall(data)

    def close(self):
        self.s.close()


async def library_client(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/", max_size=None) as ws:
        await ws.send("héllo wörld")
        check(await ws.recv() == "héllo wörld", "websockets: text echoed")
        blob = os.urandom(60000)
        await ws.send(blob)
        check(await ws.recv() == blob, "websockets: 60 KB binary echoed")
        await ws.send(["frag ", "mented ", "€"])
        check(await ws.recv() == "frag mented €", "websockets: fragmented text reassembled")
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        check(True, "websockets: ping answered")
        await ws.close(code=1000, reason="done")
    check(ws.close_code == 1000, f"websockets: close handshake echoes 1000 (got {ws.close_code})")
    expected["handshakes"] += 1
    expected["handshake"] += 1


def hostile(port):
    c = raw_client(port)
    c.send(frame(0x1, b"not masked", masked=False))
    check(c.expect_close(1002), "an unmasked client frame: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x2, masked=True, length=1 << 63)[:10])
    check(c.expect_close(1002), "a 2^63 length: close 1002 from the header alone")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x2, masked=True, length=1 << 62)[:14])
    check(c.expect_close(1009), "a 2^62 length: close 1009 from the header, before any payload")
    expected["too big"] += 1

    c = raw_client(port)
    c.send(frame(0x1, b"x", rsv=0x40))
    check(c.expect_close(1002), "RSV1 without an extension: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x1, b"ok \xff not utf-8"))
    check(c.expect_close(1007), "invalid UTF-8 text: close 1007")
    expected["invalid payload"] += 1

    c = raw_client(port)
    c.send(frame(0x1, b"euro \xe2\x82", fin=False) + frame(0x0, b"\xac!"))
    op, payload = c.read_frame()
    check(op == 0x1 and payload == "euro €!".encode(), "a code point split across fragments is valid")
    c.send(frame(0x1, b"bad \xe2\x82", fin=False) + frame(0x0, b"(", fin=False))
    check(c.expect_close(1007), "invalid UTF-8 split across fragments: close 1007 at the bad byte")
    expected["invalid payload"] += 1

    c = raw_client(port)
    c.send(frame(0x1, b"start", fin=False) + b"".join(frame(0x0, b"", fin=False) for _ in range(200)))
    check(c.expect_close(1009), f"endless empty fragments: close 1009 past {MAX_FRAGMENTS}")
    expected["too big"] += 1

    c = raw_client(port)
    c.send(frame(0x2, b"a" * 40000, fin=False) + frame(0x0, b"b" * 40000))
    check(c.expect_close(1009), "fragments adding up past max_message: close 1009")
    expected["too big"] += 1

    c = raw_client(port)
    c.send(b"".join(frame(0x9, b"p") for _ in range(PINGS_PER_SECOND * 4)))
    check(c.expect_close(1008), "a ping flood: close 1008")
    expected["policy"] += 1

    c = raw_client(port)
    c.send(frame(0x9, b"x" * 126))
    check(c.expect_close(1002), "a ping of 126 bytes: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x9, b"x", fin=False))
    check(c.expect_close(1002), "a fragmented ping: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x0, b"orphan"))
    check(c.expect_close(1002), "a continuation without a message: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x1, b"a", fin=False) + frame(0x9, b"mid") + frame(0x0, b"b"))
    op1, p1 = c.read_frame()
    op2, p2 = c.read_frame()
    check((op1, p1, op2, p2) == (0xA, b"mid", 0x1, b"ab"), "a ping between fragments is answered first")
    c.send(frame(0x8, struct.pack(">H", 1005)))
    check(c.expect_close(1002), "close code 1005 on the wire: close 1002")
    expected["protocol"] += 1

    c = raw_client(port)
    c.send(frame(0x8, struct.pack(">H", 1000) + b"\xc3\x28"))
    check(c.expect_close(1007), "a close reason that is not UTF-8: close 1007")
    expected["invalid payload"] += 1

    c = raw_client(port)
    c.send(frame(0x8, struct.pack(">H", 4321) + b"bye"))
    check(c.expect_close(4321), "a valid close is answered with its code")
    expected["handshake"] += 1

    c = raw_client(port, upgrade=False)
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 10000 + b"\r\n\r\n")
    head = c.read_until(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 431 "), "an oversized handshake: 431")
    expected["refused"] += 1


def half_open_handshakes(port, count):
    """Connections that send half a request and hold; returns the sockets."""
    held = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
        held.append(s)
    expected["handshake timeouts"] += count
    return held


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    binary, backend = sys.argv[1], sys.argv[2]
    port = free_port()
    server = subprocess.Popen(
        [binary, "--ws", "--io", backend, "--port", str(port), "--shards", "2", "--max-message", str(MAX_MESSAGE),
         "--max-fragments", str(MAX_FRAGMENTS), "--ws-handshake-timeout-ms", str(HANDSHAKE_MS),
         "--max-pings-per-second", str(PINGS_PER_SECOND)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = server.stdout.readline()
        check("listening" in line, f"server started: {line.strip()}")
        held = half_open_handshakes(port, 20)
        started = time.monotonic()
        asyncio.run(library_client(port))  # others are served while the half-open ones wait
        for s in held:
            s.settimeout(5)
            closed = False
            try:
                closed = s.recv(4096) == b""
            except ConnectionResetError:
                closed = True
            except socket.timeout:
                pass
            if not closed:
                check(False, "a half-finished handshake was not closed")
                break
            s.close()
        waited = time.monotonic() - started
        check(HANDSHAKE_MS / 1000 * 0.8 < waited < 3,
              f"20 half-finished handshakes closed at the {HANDSHAKE_MS} ms timeout ({waited:.2f} s after they began)")
        hostile(port)
        asyncio.run(library_client(port))
        rss = rss_kib(server.pid)
        check(rss < 64 * 1024, f"server RSS after the hostile clients: {rss} KiB (< 64 MiB)")
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=20)
    m = re.search(r"websocket: (\d+) handshakes, (\d+) refused, (\d+) handshake timeouts, \d+ messages in; "
                  r"closes: (\d+) handshake, (\d+) protocol, (\d+) invalid payload, (\d+) too big, (\d+) policy", out)
    check(server.returncode == 0, f"server exited cleanly (status {server.returncode}; a sanitizer report fails it)")
    check(m is not None, "server printed its WebSocket counters")
    if m:
        names = ["handshakes", "refused", "handshake timeouts", "handshake", "protocol", "invalid payload", "too big",
                 "policy"]
        got = dict(zip(names, map(int, m.groups())))
        for k in names:
            check(got[k] == expected[k], f"counter '{k}': {got[k]} (expected {expected[k]})")
    if failures:
        print(out)
        print(f"{len(failures)} checks failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
