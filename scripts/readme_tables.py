#!/usr/bin/env python3
"""Refreshes README.md's benchmark section from the reports under build/bench/.

usage: scripts/readme_tables.py [build_dir]
Copies the tables the benchmark scripts wrote (with the commands that made them) between the
<!-- bench:begin --> and <!-- bench:end --> markers, so the README never carries a hand-typed figure.
A report that is not in this build directory (that benchmark did not run here) keeps the README's
current subsection for it, which an earlier run of this script copied from its report.
"""
import os
import re
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build"
bench = os.path.join(build, "bench")


def section(md, start_pat, stop_pat=r"^## "):
    """Lines of md from the first line matching start_pat up to the next heading."""
    lines = md.splitlines()
    out, on = [], False
    for ln in lines:
        if re.match(start_pat, ln):
            on = True
            continue
        if on and re.match(stop_pat, ln):
            break
        if on:
            out.append(ln)
    return "\n".join(out).strip()


def read(name):
    p = os.path.join(bench, name)
    return open(p).read() if os.path.exists(p) else None


readme = open("README.md").read()
old_block = re.search(r"<!-- bench:begin -->\n(.*)\n<!-- bench:end -->", readme, flags=re.S)
old_sections = {}
if old_block:
    for chunk in re.split(r"(?m)^(?=### )", old_block.group(1)):
        if chunk.startswith("### "):
            old_sections[chunk.splitlines()[0]] = chunk.strip()


def keep(heading):
    """The README's current subsection under `heading`, when its report is missing."""
    old = old_sections.get(heading)
    if old:
        parts.append("\n" + old)


parts = []
comp = read("components.md")
if comp:
    cmd = re.search(r"Command: `([^`]*)`", comp)
    parts.append("### Components (the [Apex Core benchmark report](docs/references.md#apex-core-benchmark-report)'s methodology table)\n")
    parts.append(f"`make bench-components` (`{cmd.group(1) if cmd else ''}`), medians, same run:\n")
    parts.append(section(comp, r"^## Methodology comparison"))
else:
    keep("### Components (the [Apex Core benchmark report](docs/references.md#apex-core-benchmark-report)'s methodology table)")
echo = read("echo.md")
if echo:
    parts.append("\n### Echo shoot-out (the [echo server shoot-out](docs/references.md#echo-server-shoot-out): 100 connections, 8-byte messages, one send() per message)\n")
    parts.append("`make bench-echo` (strix vs raw epoll, tokio, gnet and, unless left out, naive asio; two layouts x three client modes), "
                 "million msgs/s, medians of 5 interleaved runs (min-max), same clients, same run; placement and "
                 "details in build/bench/echo.md:\n")
    parts.append(section(echo, r"^## Summary: the default configuration against the best peer$") + "\n")
    for depth in ("1", "16", "128"):
        parts.append(f"Depth {depth}:\n")
        parts.append(section(echo, rf"^## Depth {depth}$") + "\n")
else:
    keep("### Echo shoot-out (the [echo server shoot-out](docs/references.md#echo-server-shoot-out): 100 connections, 8-byte messages, one send() per message)")
tls = read("echo-tls.md")
tls_heading = "### Echo shoot-out over TLS (strix vs tokio-rustls and Go crypto/tls)"
if tls:
    parts.append("\n" + tls_heading + "\n")
    parts.append("`make bench-echo` (its TLS section; `make bench-echo-tls` alone): the same 100 connections and "
                 "8-byte messages over TLS, certificate verified by the client, million msgs/s, medians of 5 "
                 "interleaved runs (min-max); handshakes/s with one server thread; details in "
                 "build/bench/echo-tls.md:\n")
    summary = section(tls, r"^## Summary: strix over TLS against the best TLS peer$")
    if summary:
        parts.append(summary + "\n")
    parts.append(section(tls, r"^## Echo over TLS$") + "\n")
    parts.append("Handshakes:\n")
    parts.append(section(tls, r"^## Handshakes$") + "\n")
else:
    keep(tls_heading)
ws = read("echo-ws.md")
WS = "### WebSocket echo shoot-out (strix vs fastwebsockets, tokio-tungstenite and gobwas/ws)"
if ws:
    written = re.search(r"Written by `scripts/bench-echo\.sh[^`]*` on ([^.]*)\.", ws)
    load = re.search(r"Load average when the run started: ([^;]*)", ws)
    parts.append("\n" + WS + "\n")
    parts.append("`make bench-echo-ws` (`make bench-echo` runs it too): 100 connections, one masked binary frame per "
                 "message, every echo verified, medians of 5 interleaved runs"
                 + (f", {written.group(1)}" if written else "")
                 + (f", load average {load.group(1)} at the start" if load else "")
                 + "; pinned apart = server on CPU 0, client on CPU 1, client free = both on both CPUs (the "
                 "default runs both layouts; a run of one layout shows that one). Server CPU per message, the "
                 "broadcast test and the last run of each layout are in build/bench/echo-ws.md and "
                 "docs/websocket.md:\n")
    parts.append(section(ws, r"^## Summary: strix against the best WebSocket peer$") + "\n")
else:
    keep(WS)
link = read("link.md")
if link and re.search(r"(?m)^## Throughput, PUSH/PULL", link):
    parts.append("\n### strix::link vs libzmq (the [ServerLink porting log](docs/references.md#serverlink-porting-log)'s tables)\n")
    parts.append("`make bench-link`: the same perf tools written against strix::link and against libzmq's C API, "
                 "interleaved in one run; full tables (bandwidth, PUB/SUB, fan-out, p99, cross-runs) in build/bench/link.md.\n")
    parts.append("Throughput, PUSH/PULL (msg/s):\n")
    parts.append(section(link, r"^## Throughput, PUSH/PULL") + "\n")
    parts.append("Latency, p50 round trip (µs):\n")
    parts.append(section(link, r"^## Latency: p50 round trip") + "\n")
    parts.append("Targets:\n")
    parts.append(section(link, r"^## Targets$") + "\n")
else:
    keep("### strix::link vs libzmq (the [ServerLink porting log](docs/references.md#serverlink-porting-log)'s tables)")
# The blocking-API family (bench-link's suite 'blocking'), its own subsection so that a run of that
# suite alone (LINK_SUITES=blocking) refreshes it without touching the tables above.
BLOCKING = "### strix::link's blocking API vs libzmq's zmq_send/zmq_recv (application threads)"
if link and re.search(r"(?m)^## Blocking API", link):
    written = re.search(r"Written by `scripts/bench-link.sh` on ([^,]*), commit `([^`]*)`", link)
    load = re.search(r"Load average when the run started: (.*)", link)
    parts.append("\n" + BLOCKING + "\n")
    parts.append("`make bench-link` (suite `blocking`; `LINK_SUITES=blocking make bench-link` runs it alone): "
                 "strix-link-blocking-* against zmq-blocking-*, 64 B, medians of 5 interleaved runs (min-max)"
                 + (f", {written.group(1)}, commit `{written.group(2)}`" if written else "")
                 + (f", load average {load.group(1)} on the 2 shared cores" if load else "")
                 + "; client and server share the cores. Details in build/bench/link.md.\n")
    table = section(link, r"^## Blocking API")
    parts.append("\n".join(l for l in table.splitlines() if l.startswith("|")) + "\n")
    targets = [l for l in section(link, r"^## Targets$").splitlines() if l.startswith("| blocking API")]
    if targets:
        parts.append("| target | strix | libzmq | strix/libzmq | required | status |\n|---|---:|---:|---:|---:|---|\n"
                     + "\n".join(targets) + "\n")
else:
    keep(BLOCKING)
# strix's libzmq.so.5 against Debian's libzmq (make bench-zmq). A report whose two families loaded
# the same library (the method check) or that has no strix library keeps the README's subsection.
ZMQ = "### strix's libzmq.so.5 vs libzmq (libzmq's own perf programs, unchanged, built against each)"
zmq = read("zmq.md")
zmq_targets = section(zmq, r"^## Summary: targets$") if zmq else ""
if zmq and "**Method check:**" not in zmq and re.search(r"(?m)^\| .* \| [0-9.]+x \| (>=|<=) ", zmq_targets):
    written = re.search(r"Written by `scripts/bench-zmq\.sh` on ([^,]*), commit `([^`]*)`", zmq)
    command = re.search(r"Command: `([^`]*)`", zmq)
    runs = re.search(r"\((\d+) per family and configuration\)", zmq)
    load = re.search(r"load average when the run started: (.*)", zmq)
    parts.append("\n" + ZMQ + "\n")
    parts.append("`make bench-zmq`" + (f" (`{command.group(1)}`)" if command else "")
                 + ": libzmq 4.3.4's perf programs and a pyzmq PUSH/PULL script, each built against Debian's "
                 "libzmq and against strix's libzmq.so.5, interleaved"
                 + (f", medians of {runs.group(1)} runs" if runs else "")
                 + (f", {written.group(1)}, commit `{written.group(2)}`" if written else "")
                 + (f", load average {load.group(1)}" if load else "")
                 + ("; receiver and sender on the same 2 vCPUs, pinned to one each (taskset)"
                    if "Placement (PIN=1" in zmq else "; receiver and sender on the same 2 vCPUs, not pinned")
                 + ". p50 comes from our REQ client built "
                 "both ways (the perf programs print only a mean). Throughput, latency, p99, the cross-library "
                 "pairs and libzmq measured against itself are in build/bench/zmq.md:\n")
    parts.append(zmq_targets + "\n")
    check = [l for l in section(zmq, r"^## Method check: libzmq against itself$").splitlines() if l.startswith("| ")][1:]
    ratios = [l.rstrip(" |").rsplit("| ", 1)[-1] for l in check]
    if ratios:
        parts.append("Method check, libzmq against itself in the same run (again/libzmq): " + ", ".join(
            f"{l.split('|')[1].strip()} {r}" for l, r in zip(check, ratios)) + ".\n")
else:
    keep(ZMQ)
scal = read("scaling.md")
if scal:
    cmd = re.search(r"Command: `([^`]*)`", scal)
    parts.append("\n### Per-core vs shared io_context (the [Apex Core benchmark report](docs/references.md#apex-core-benchmark-report), §10)\n")
    parts.append(f"`make bench-scaling` (`{cmd.group(1) if cmd else ''}`), medians; this machine has 2 cores:\n")
    parts.append("\n".join(l for l in scal.splitlines() if l.startswith("|")))
else:
    keep("### Per-core vs shared io_context (the [Apex Core benchmark report](docs/references.md#apex-core-benchmark-report), §10)")
chat = read("chat.md")
if chat:
    parts.append("\n### Chat (the [chat server portfolio](docs/references.md#chat-server-portfolio)'s workload)\n")
    cmds = re.search(r"## Commands\s*```\s*(.*?)```", chat, re.S)
    server_cmd = cmds.group(1).strip().splitlines()[0] if cmds else ""
    parts.append("`make bench-chat` (500 clients, 10 rooms, 10 messages/s each, payload mix 64:80,256:18,1024-2048:2, "
                 "over TCP, then over a Unix socket); server: `" + server_cmd + "`. The machine's floor "
                 "(clock hiccups, loopback segment costs), interval tables, latency buckets and the sweeps are in "
                 "build/bench/chat.md.\n")
    parts.append(section(chat, r"^## Summary"))
    readme_layout = section(chat, r"^## The README layout")
    if readme_layout:
        parts.append("\nThe README layout (every option at its default, nothing pinned; same run):\n")
        parts.append(readme_layout)
    floor = section(chat, r"^## What this machine allows")
    if floor:
        parts.append("\nWhat this machine allows (from the same run):\n")
        parts.append(floor)
    for best in re.findall(r"^\*\*Highest sustained.*$", chat, re.M):
        parts.append("\nSweep (rate raised until p99 > 10 ms): " + best)
else:
    keep("### Chat (the [chat server portfolio](docs/references.md#chat-server-portfolio)'s workload)")
cluster = read("cluster.md")
CLUSTER = "### Chat cluster: two nodes and Redis next to one node"
if cluster:
    head = re.search(r"^# Chat cluster: .*\((.*)\)$", cluster, re.M)
    parts.append("\n" + CLUSTER + "\n")
    parts.append("`make bench-cluster`" + (f" ({head.group(1)})" if head else "")
                 + ": the chat load of the Chat server portfolio (docs/references.md), every delivery verified by "
                 "strix-chat-load; load tool, nodes, Redis and PostgreSQL on the same 2 cores. Fault runs (Redis "
                 "killed, a node killed, clients dropped) and the cross-node hop are in build/bench/cluster.md and "
                 "docs/architecture.md:\n")
    parts.append(section(cluster, r"^## Steady runs$") + "\n")
    for m in re.finditer(r"^### (\S+): .*$\n\n- delivery check[^*]*\*\*(\w+)\*\*", cluster, re.M):
        parts.append(f"- fault run `{m.group(1)}`: delivery check {m.group(2)}")
else:
    keep(CLUSTER)
block = "\n".join(parts).strip()
new = re.sub(r"<!-- bench:begin -->.*<!-- bench:end -->",
             "<!-- bench:begin -->\n" + block + "\n<!-- bench:end -->", readme, flags=re.S)
open("README.md", "w").write(new)
print("README.md benchmark section refreshed from", bench)
