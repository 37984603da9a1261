#!/usr/bin/env python3
"""strix as an outside project gets it: install, find_package, pkg-config, and a server that runs.

1. `cmake --install <build dir> --prefix <temp>/prefix` (no build: ctest runs after it) and the
   installed tree, listed.
2. tests/package/consumer/ with strix's examples/echo/main.cpp, copied to <temp>/consumer so it
   cannot reach into the source tree, configured with find_package(strix) through
   CMAKE_PREFIX_PATH and built (verbose, so the compile and link lines show).
3. The same main.cpp built by hand: c++ main.cpp $(pkg-config --cflags --libs strix).
4. Each binary started on port 0: the printed port is read, frames are echoed byte-exact, and
   SIGTERM stops it with exit status 0.

Sanitizer builds install instrumented libraries, so --sanitize-flags (the flags the build used)
go to both consumer builds too. The temporary directory is removed whatever happens.
"""

import argparse
import glob
import os
import random
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def run(cmd, hint="", **kw):
    """Runs cmd, echoing it and its output; exits with a message on a non-zero status."""
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)
    print(p.stdout, end="", flush=True)
    if p.returncode != 0:
        raise SystemExit(f"FAILED (exit {p.returncode}): {' '.join(cmd[:2])}{hint}")
    return p.stdout


def frame(body):
    """The echo framing: 4-byte little-endian total length, then the body."""
    return struct.pack("<I", 4 + len(body)) + body


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise SystemExit(f"FAILED: connection closed after {len(out)} of {n} bytes")
        out += chunk
    return out


def check_echo(binary):
    """Starts binary on port 0, echoes frames through it, stops it with SIGTERM."""
    print(f"--- running {binary}", flush=True)
    proc = subprocess.Popen([binary, "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        line = proc.stdout.readline() if ready else ""
        prefix = "listening on 127.0.0.1:"
        if not line.startswith(prefix):
            proc.kill()
            raise SystemExit(f"FAILED: expected '{prefix}<port>', got {line!r}; stderr: {proc.communicate()[1]}")
        port = int(line[len(prefix):])
        print(line.strip(), flush=True)
        rng = random.Random(7)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for size in (0, 1, 13, 1000, 60000):
                f = frame(bytes(rng.getrandbits(8) for _ in range(size)))
                s.sendall(f)
                back = recv_exact(s, len(f))
                if back != f:
                    raise SystemExit(f"FAILED: a {size}-byte body came back different")
            # Two frames in one write, the second split across another.
            a, b = frame(b"hello"), frame(b"strix " * 50)
            s.sendall(a + b[:7])
            time.sleep(0.05)
            s.sendall(b[7:])
            if recv_exact(s, len(a) + len(b)) != a + b:
                raise SystemExit("FAILED: pipelined or split frames came back different")
        print(f"echoed 7 frames byte-exact through port {port}", flush=True)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            raise SystemExit("FAILED: no exit within 20 s of SIGTERM")
        if proc.returncode != 0:
            raise SystemExit(f"FAILED: exit status {proc.returncode} after SIGTERM; stderr: {err}")
        print(f"SIGTERM: exit status 0", flush=True)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--generator", default="")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--pkg-config", default="pkg-config")
    ap.add_argument("--sanitize-flags", default="", help="compile and link flags the strix build used")
    args = ap.parse_args()
    extra = shlex.split(args.sanitize_flags)

    tmp = tempfile.mkdtemp(prefix="strix-package-")
    try:
        prefix = os.path.join(tmp, "prefix")
        run([args.cmake, "--install", args.build_dir, "--prefix", prefix],
            hint=f"\n(cmake --install copies what the build made: build every library first, "
                 f"e.g. cmake --build {args.build_dir})")
        print("--- install tree (find <prefix> -type f | sort), <prefix> = " + prefix, flush=True)
        files = sorted(os.path.relpath(os.path.join(d, f), prefix) for d, _, fs in os.walk(prefix) for f in fs)
        for f in files:
            print("<prefix>/" + f)

        consumer = os.path.join(tmp, "consumer")
        os.makedirs(consumer)
        shutil.copy(os.path.join(args.source_dir, "tests", "package", "consumer", "CMakeLists.txt"), consumer)
        shutil.copy(os.path.join(args.source_dir, "examples", "echo", "main.cpp"), consumer)

        print("--- consumer: find_package(strix 0.2) + strix::net", flush=True)
        build = os.path.join(tmp, "consumer-build")
        cfg = [args.cmake, "-S", consumer, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={args.cxx}",
               # Only the prefix given may satisfy find_package, not a build tree someone registered.
               "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"]
        if args.generator:
            cfg += ["-G", args.generator]
        if extra:
            cfg += [f"-DCMAKE_CXX_FLAGS={' '.join(extra)}", f"-DCMAKE_EXE_LINKER_FLAGS={' '.join(extra)}"]
        run(cfg)
        with open(os.path.join(build, "CMakeCache.txt")) as cache:
            found = [l.strip() for l in cache if l.startswith("strix_DIR:")]
        print("found: " + ", ".join(found), flush=True)
        if not found or not found[0].split("=", 1)[1].startswith(prefix):
            raise SystemExit(f"FAILED: find_package(strix) did not use the installed package: {found}")
        run([args.cmake, "--build", build, "--verbose"])
        cmake_binary = os.path.join(build, "echo-consumer")

        print("--- consumer: c++ main.cpp $(pkg-config --cflags --libs strix)", flush=True)
        pc = glob.glob(os.path.join(prefix, "**", "pkgconfig", "strix.pc"), recursive=True)
        if len(pc) != 1:
            raise SystemExit(f"FAILED: expected one installed strix.pc, found {pc}")
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc[0]))
        flags = run([args.pkg_config, "--cflags", "--libs", "strix"], env=env)
        pkg_binary = os.path.join(tmp, "echo-pkg-config")
        run([args.cxx, "-O2", *extra, os.path.join(consumer, "main.cpp"), *shlex.split(flags), "-o", pkg_binary])

        check_echo(cmake_binary)
        check_echo(pkg_binary)
        print("package: OK", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
