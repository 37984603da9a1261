#!/usr/bin/env python3
"""zmq.interop: every ZeroMQ pattern between two zmq_interop_peer processes, each linked to its
own libzmq.so.5, both ways, over tcp and ipc, then CURVE and PLAIN (ZAP in the server process),
then parts of up to 40 MiB.

    tests/zmq/interop.py PEER_X [PEER_Y]

PEER_X and PEER_Y are zmq_interop_peer binaries (one linked to Debian's libzmq, one to strix's).
With one peer it plays both sides (libzmq against itself: proves the driver and the peer); with
two, every case runs once with X on the pattern's first side and Y on the second, and once the
other way round, and each side binds in turn. Ports are the kernel's (tcp://127.0.0.1:*, the
binder prints what it got); ipc paths live in a fresh temporary directory. Every case is bounded
(20 s); exit status 0 when all passed.
"""
import os
import selectors
import subprocess
import sys
import tempfile
import time

PATTERNS = ["pair", "pubsub", "xpubsub", "pushpull", "reqrep", "dealerrouter", "reqrouter"]
CASE_SECONDS = 20


class Case:
    def __init__(self, name, a, b, binder, endpoint, a_args=(), b_args=()):
        self.name, self.binder, self.endpoint = name, binder, endpoint
        self.argv = {"a": a, "b": b}
        self.extra = {"a": list(a_args), "b": list(b_args)}


def start(peer, pattern, side, mode, endpoint, extra):
    return subprocess.Popen([peer, "run", pattern, side, mode, endpoint] + extra, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)


def failed_early(proc):
    try:
        return proc.wait(timeout=2) != 0
    except subprocess.TimeoutExpired:
        return False


def run_case(pattern, case):
    """Starts the binder, then the connecter on the endpoint it prints; relays "synced" as "go"."""
    deadline = time.monotonic() + CASE_SECONDS
    binder = case.binder
    connecter = "b" if binder == "a" else "a"
    procs = {binder: start(case.argv[binder], pattern, binder, "bind", case.endpoint, case.extra[binder])}
    sel = selectors.DefaultSelector()
    sel.register(procs[binder].stdout, selectors.EVENT_READ, binder)
    output = {"a": [], "b": []}
    ended = set()
    try:
        while len(ended) < 2 and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                side = key.data
                line = key.fileobj.readline()
                if not line:
                    sel.unregister(key.fileobj)
                    ended.add(side)
                    if failed_early(procs[side]):
                        ended.update(("a", "b"))  # no use waiting for the other side's timeout
                    continue
                output[side].append(line.rstrip("\n"))
                if line.startswith("endpoint ") and connecter not in procs:
                    endpoint = line.split(" ", 1)[1].strip()
                    procs[connecter] = start(case.argv[connecter], pattern, connecter, "connect", endpoint,
                                             case.extra[connecter])
                    sel.register(procs[connecter].stdout, selectors.EVENT_READ, connecter)
                elif line.startswith("synced"):
                    other = "b" if side == "a" else "a"
                    procs[other].stdin.write("go\n")
                    procs[other].stdin.flush()
            if binder in ended and connecter not in procs:
                break  # the binder ended before binding
        failures = []
        first_failure = any(p.poll() not in (None, 0) for p in procs.values())
        for side, proc in procs.items():
            if first_failure and proc.poll() is None:
                proc.kill()  # its peer failed: its own answer says nothing more
                proc.wait()
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                failures.append(f"side {side} timed out")
                continue
            if proc.returncode != 0:
                err = proc.stderr.read().strip()
                failures.append(f"side {side} ({os.path.basename(case.argv[side])}) exit {proc.returncode}: {err}")
        if connecter not in procs:
            failures.append("the connecting side never started (no endpoint printed)")
        return failures
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for f in (proc.stdin, proc.stdout, proc.stderr):
                f.close()
        sel.close()


def label(peer):
    return os.path.basename(peer)


def pattern_cases(pairs, ipc_dir):
    n = 0
    for x, y in pairs:
        for pattern in PATTERNS:
            for transport in ("tcp", "ipc"):
                for binder in ("a", "b"):
                    n += 1
                    endpoint = "tcp://127.0.0.1:*" if transport == "tcp" else f"ipc://{ipc_dir}/{n}.sock"
                    name = f"{pattern} {transport} a={label(x)} b={label(y)} {binder} binds"
                    yield pattern, Case(name, x, y, binder, endpoint)


def security_cases(pairs, keypair_peer):
    """REQ (client, side a) to REP (server, side b) over tcp; the server binds."""
    def keys():
        out = subprocess.run([keypair_peer, "keypair"], check=True, capture_output=True, text=True, timeout=10)
        return out.stdout.split()

    server_pub, server_sec = keys()
    client_pub, client_sec = keys()
    other_pub, _ = keys()
    tcp = "tcp://127.0.0.1:*"
    for client, server in pairs:
        tag = f"client={label(client)} server={label(server)}"
        curve_client = ["curve-client", server_pub, client_pub, client_sec]
        yield "reqrep", Case(f"CURVE with ZAP, {tag}", client, server, "b", tcp, ["5"] + curve_client,
                             ["5", "curve-server", server_sec, "zap-curve", client_pub])
        yield "reqrep", Case(f"CURVE without ZAP, {tag}", client, server, "b", tcp, ["5"] + curve_client,
                             ["5", "curve-server", server_sec])
        yield "reqrep", Case(f"CURVE wrong server key refused, {tag}", client, server, "b", tcp,
                             ["curve-client", other_pub, client_pub, client_sec, "refused"],
                             ["curve-server", server_sec, "refused"])
        yield "reqrep", Case(f"CURVE client key refused by ZAP, {tag}", client, server, "b", tcp,
                             curve_client + ["refused"],
                             ["curve-server", server_sec, "zap-curve", other_pub, "refused"])
        yield "reqrep", Case(f"PLAIN with ZAP, {tag}", client, server, "b", tcp,
                             ["5", "plain-client", "alice", "secret"],
                             ["5", "plain-server", "zap-plain", "alice", "secret"])
        yield "reqrep", Case(f"PLAIN wrong password refused, {tag}", client, server, "b", tcp,
                             ["plain-client", "alice", "wrong", "refused"],
                             ["plain-server", "zap-plain", "alice", "secret", "refused"])


def large_cases(pairs, keypair_peer):
    """PUSH (side a) to PULL (side b, binding) over tcp: three messages with parts of 16 MiB + 1 to
    40 MiB, in the clear and under CURVE (whose boxes are larger than the parts they carry)."""
    out = subprocess.run([keypair_peer, "keypair"], check=True, capture_output=True, text=True, timeout=10)
    server_pub, server_sec = out.stdout.split()
    out = subprocess.run([keypair_peer, "keypair"], check=True, capture_output=True, text=True, timeout=10)
    client_pub, client_sec = out.stdout.split()
    tcp = "tcp://127.0.0.1:*"
    for x, y in pairs:
        tag = f"a={label(x)} b={label(y)}"
        yield "large", Case(f"large parts {tag}", x, y, "b", tcp, ["3"], ["3"])
        yield "large", Case(f"large parts under CURVE {tag}", x, y, "b", tcp,
                            ["3", "curve-client", server_pub, client_pub, client_sec], ["3", "curve-server", server_sec])


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    x = os.path.abspath(sys.argv[1])
    y = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else x
    pairs = [(x, y)] if x == y else [(x, y), (y, x)]
    passed, failed = 0, []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zmq-interop-") as ipc_dir:
        cases = list(pattern_cases(pairs, ipc_dir)) + list(security_cases(pairs, x)) + list(large_cases(pairs, x))
        for pattern, case in cases:
            failures = run_case(pattern, case)
            if failures:
                failed.append(case.name)
                print(f"FAIL {case.name}: " + "; ".join(failures), flush=True)
            else:
                passed += 1
                print(f"ok   {case.name}", flush=True)
    print(f"interop: {passed} passed, {len(failed)} failed in {time.monotonic() - started:.1f} s")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
