#!/usr/bin/env python3
"""Prints a TCP port on 127.0.0.1 that nothing holds now, for a server a script starts next.

Chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range), as the C++ tests'
free_port() does (tests/support/free_port.hpp says why): a port from bind(0) comes from the range
every outgoing connection on the machine takes its local port from, so it may be taken before the
server binds it. Falls back to bind(0) where the range starts too low.
"""
import random
import socket

LOWEST = 10000  # above the well-known services' ports (PostgreSQL's 5432, Redis's 6379)


def bind_loopback(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return 0
    finally:
        s.close()


def free_port():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first_ephemeral = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 32768
    if LOWEST + 1000 <= first_ephemeral <= 65536:
        for _ in range(100):
            port = bind_loopback(random.randrange(LOWEST, first_ephemeral))
            if port:
                return port
    port = bind_loopback(0)
    if not port:
        raise SystemExit("free_port: no free TCP port on 127.0.0.1")
    return port


if __name__ == "__main__":
    print(free_port())
