#!/usr/bin/env python3
"""Writes <out>/echo-ws.md from the files of one scripts/bench-echo-ws.sh run.

Echo runs are <layout>_s<size>_<server>_d<depth>_r<rep>.json (.failed, .where), read with
scripts/echo_report.py's loader (the payload size stands where its client mode stands); broadcast
runs are bc_s<size>_<server>_d<depth>_r<rep>.json. servers.txt and bc-servers.txt list the
servers. Failed runs are left out of the medians and flagged; a cell with no passing run shows
"failed".

Sections scripts/readme_tables.py may copy: "## Summary: strix against the best WebSocket peer",
"## Broadcast".
"""
import argparse
import datetime
import os
import platform
import sys

from echo_report import Server, fmt, layout_short, load, range_cell, ratio
from report_common import cpu_model

DEFAULT = "strix-ws"  # strix-echo-server --ws, otherwise its defaults
TARGET_PEER = 1.2     # issue 18: >= 1.2x the best peer at depths 16 and 128
TARGET_PEER_D1 = 1.0  # ... and >= 1.0x at depth 1
ROLE_ORDER = {"strix": 0, "peer": 1}


def mode(size):
    return f"s{size}"


def best_peer(cells, servers, lay, size, d):
    best = (None, None)
    for s in servers:
        if s.built and s.role == "peer":
            m = cells[(lay, mode(size), s.name, d)].med()
            if m is not None and (best[1] is None or m > best[1]):
                best = (s.name, m)
    return best


def cpu_us_per_msg(c):
    """Server CPU microseconds per echoed message: the median run's CPU % over its msgs/s."""
    vals = [r["server_cpu_pct"] / 100 / r["msgs_in_per_s"] * 1e6 for r in c.rows
            if r.get("server_cpu_pct") is not None and r.get("msgs_in_per_s")]
    if not vals:
        return None
    vals.sort()
    return vals[len(vals) // 2]


def server_line(s):
    if s.built:
        return f"- **{s.name}** ({'the engine under test' if s.role == 'strix' else 'peer'}): " \
               f"`{' '.join([os.path.basename(s.binary), '--port P', s.args]).strip()}`"
    if s.why.startswith("pending: "):
        return f"- **{s.name}**: **pending**: {s.why[len('pending: '):]}"
    return f"- **{s.name}**: **not built**: {s.why}"


def write_markdown(args, servers, bc_servers, layouts, sizes, depths, bc_depths, cells, bc, out_md):
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    ordered = sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9))
    has_strix = any(s.name == DEFAULT and s.built for s in servers)
    L = ["# WebSocket echo shoot-out (issue 18)", ""]
    L.append(f"Written by `scripts/bench-echo-ws.sh` on {now}. Every figure is the median of {args.reps} "
             "interleaved runs, with the slowest and fastest run in brackets, read from this run's JSON files "
             "in `echo-ws-runs/`. msgs/s means messages echoed back and verified per second.")
    L += ["", "## Machine", ""]
    L.append(f"- CPUs (nproc): {len(os.sched_getaffinity(0))}")
    L.append(f"- CPU model: {cpu_model()}")
    L.append(f"- Kernel: {platform.release()}")
    L.append(f"- Load average when the run started: {args.loadavg}; when it ended: {args.loadavg_end}")
    L.append("- **The client and the server share these CPUs** (and with anything else running): every "
             "figure is what the server did while the load tool took the rest, not a server's ceiling.")
    L += ["", "## Method", ""]
    L.append("One load tool for every server, so none gets a friendlier client: `strix-echo-bench --ws` "
             "(bench/echo/echo_ws.cpp). Each connection does the HTTP/1.1 upgrade (its Sec-WebSocket-Accept "
             "checked), then keeps D binary messages in flight: each message is one FIN frame, masked with a "
             "new key per frame as RFC 6455 requires, whose payload (S bytes) is a pattern made once per run "
             "and stamped with the connection and the message's number at its head and tail (so an echo sent "
             "to the wrong connection, out of order or spliced fails); every echo must come back as a binary "
             "message with exactly those bytes, "
             "in order, or the run fails. Each received echo sends the next message; a connection's pending "
             "frames go out with one write per loop turn, or at once when they reach 32 KiB.")
    L += ["", "```", args.command, "```", ""]
    L.append("Layouts: " + "; ".join(
        (f"**pinned apart**: server on CPU {args.server_cpus}, client on CPU {args.client_cpus} (taskset)"
         if lay == "pinned" else "**client free**: no taskset") for lay in layouts) + ".")
    L += ["", "Servers:", ""]
    L += [server_line(s) for s in ordered]
    L.append("")
    L.append("How each peer is written (bench/peers/): **fastwebsockets** 0.10 as its README sets it up: hyper 1 "
             "serves the request, `upgrade::upgrade` answers 101, a `FragmentCollector` reads whole messages and "
             "`write_frame` writes each echo; its frames go through a small buffer of ours that is sent when a read "
             "would wait (fastwebsockets has no batching API; without it, `--per-frame-writes`, it does one write "
             "per message and runs about 10x slower at depth 128 in our trials). "
             "**tungstenite**: tokio-tungstenite 0.30, `accept_async`, every message already readable is fed "
             "to the sink and the sink flushed once when the stream would wait (what `StreamExt::forward` does). "
             "**gobwas**: gobwas/ws v1.5.0's low-level API (`ws.Upgrade` on the net.Conn, `ReadHeader`, "
             "`Cipher`, `WriteHeader`), a goroutine per connection, bufio writer flushed before a read that "
             "would block. All three on all the CPUs the process may use (tokio worker threads, GOMAXPROCS); "
             "64 KiB message limit.")
    L.append("")

    if has_strix:
        L += ["## Summary: strix against the best WebSocket peer", ""]
        L.append(f"Targets (issue 18): at least {TARGET_PEER_D1}x the best peer (fastwebsockets, tungstenite, "
                 f"gobwas) at depth 1 and {TARGET_PEER}x at depths 16 and 128.")
        L += ["", "| layout | payload | depth | strix-ws msgs/s | best peer msgs/s | strix / best | target |",
              "|---|---:|---:|---:|---:|---:|---|"]
        for lay in layouts:
            for size in sizes:
                for d in depths:
                    dm = cells[(lay, mode(size), DEFAULT, d)].med()
                    bn, bm = best_peer(cells, servers, lay, size, d)
                    want = TARGET_PEER_D1 if d == 1 else TARGET_PEER
                    verdict = f"≥ {want}x: {'met' if dm / bm >= want else 'NOT met'}" if dm and bm else "n/a"
                    L.append(f"| {layout_short(lay)} | {size} B | {d} | {fmt(dm, sep=True)} | {fmt(bm, sep=True)} "
                             f"({bn or 'n/a'}) | {ratio(dm, bm)} | {verdict} |")
        L.append("")
    else:
        L += ["## Summary: strix against the best WebSocket peer", "",
              "**strix: pending.** " + next((s.why.removeprefix("pending: ") for s in servers if s.name == DEFAULT),
                                           "strix-ws was not asked for (ECHO_WS_SERVERS)")
              + ". The peers' figures below are the bar strix has to meet (issue 18: 1.0x the best peer at "
              "depth 1, 1.2x at depths 16 and 128).", ""]

    L += ["## Echo", ""]
    L.append(f"Million msgs/s echoed, median of {args.reps} runs (min–max); server CPU µs per message "
             f"(server CPU time over messages, median run) in the last column; client = {args.client_threads} "
             "threads.")
    for lay in layouts:
        L += ["", f"### {layout_short(lay)}", "",
              "| server | payload | depth | M msgs/s | server CPU µs/msg |", "|---|---:|---:|---|---:|"]
        for size in sizes:
            for d in depths:
                for s in ordered:
                    if not s.built:
                        L.append(f"| {s.name} | {size} B | {d} | {'pending' if 'pending' in s.why else 'not built'} | |")
                        continue
                    c = cells[(lay, mode(size), s.name, d)]
                    us = cpu_us_per_msg(c)
                    L.append(f"| {s.name} | {size} B | {d} | {range_cell(c)} | {'n/a' if us is None else f'{us:.2f}'} |")
                if has_strix:
                    bn, bm = best_peer(cells, servers, lay, size, d)
                    L.append(f"| **strix-ws / best peer** | {size} B | {d} | "
                             f"{ratio(cells[(lay, mode(size), DEFAULT, d)].med(), bm)} ({bn}) | |")
    L.append("")

    if args.broadcast != "0":
        L += ["## Broadcast", ""]
        L.append("Every client sends, every client receives every message: each of the connections keeps D of "
                 "its own 64-byte messages in flight (a message counts as back when the broadcast brings it to its "
                 "sender), and every connection must receive every connection's messages, each sender's in order, "
                 "none lost or twice (checked at the end against each sender's count). msgs/s counts deliveries "
                 "(messages received by a client); sends are deliveries / connections.")
        L += ["", "```", args.bc_command, "```", ""]
        L.append("Servers (client free, no taskset):")
        L.append("")
        L += [server_line(s) for s in bc_servers]
        L.append("")
        L.append("strix-ws-broadcast-server (bench/echo/ws_broadcast_server.cpp): each shard keeps its WebSocket "
                 "sessions in a hub (sharded<hub>); a message is encoded once (ws_encode: header + payload in one "
                 "shared buffer) and handed to every shard's hub through the mesh (invoke_on_all), whose members "
                 "each queue the same buffer for the turn's gather write; a member whose queue passes 16 MiB is "
                 "dropped as a slow consumer (none was in our trials).")
        L.append("")
        L.append("Decision: the broadcast test measures strix and one peer, gobwas (gobwas-echo --broadcast: "
                 "each message's frame built once, handed to a writer goroutine per client that flushes when its "
                 "queue is empty; a full queue blocks the sender, so nothing is dropped). A broadcast server is an "
                 "application, not a library feature: each peer needs a hub we write, and what is measured is the "
                 "fan-out (one encode, N writes), which one good peer shows. gobwas is the best peer in most echo "
                 "cells of our trials, and its low-level API leaves the least of our code in the path.")
        L += ["", "| server | depth | M deliveries/s | server CPU % | server CPU µs/delivery |",
              "|---|---:|---|---:|---:|"]
        for d in bc_depths:
            for s in bc_servers:
                if not s.built:
                    L.append(f"| {s.name} | {d} | {'pending' if 'pending' in s.why else 'not built'} | | |")
                    continue
                c = bc[("bc", mode(64), s.name, d)]
                us = cpu_us_per_msg(c)
                L.append(f"| {s.name} | {d} | {range_cell(c)} | {fmt(c.med('server_cpu_pct'))} "
                         f"| {'n/a' if us is None else f'{us:.3f}'} |")
        L.append("")

    L += ["## Every run", ""]
    L += ["| layout | server | payload | depth | msgs/s, each run | server CPU % | RSS MiB | client CPU % "
          "| server threads |", "|---|---|---:|---:|---|---:|---:|---:|---|"]
    rows = [(lay, s, size, d, cells.get((lay, mode(size), s.name, d)))
            for lay in layouts for s in ordered if s.built for size in sizes for d in depths]
    if args.broadcast != "0":
        rows += [("broadcast", s, 64, d, bc.get(("bc", mode(64), s.name, d)))
                 for s in bc_servers if s.built for d in bc_depths]
    for lay, s, size, d, c in rows:
        each = ", ".join(f"{r['msgs_in_per_s']:,.0f}" for r in c.rows)
        if c.failed:
            each += ("; " if each else "") + f"{len(c.failed)} failed: " + "; ".join(dict.fromkeys(c.failed))
        lay_txt = lay if lay == "broadcast" else layout_short(lay)
        L.append(f"| {lay_txt} | {s.name} | {size} B | {d} | {each} | {fmt(c.med('server_cpu_pct'))} "
                 f"| {fmt(c.med('server_rss_mib'))} | {fmt(c.med('client_cpu_pct'))} | {c.where or 'n/a'} |")
    L.append("")
    L.append("Server CPU % is utime+stime over the measured window (100 % = one CPU); RSS is VmRSS at its end; "
             "client CPU % is the load tool's own.")
    L.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for a in ("--runs", "--out", "--depths", "--sizes", "--command", "--bc-command"):
        ap.add_argument(a, required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--layouts", default="pinned free")
    ap.add_argument("--broadcast", default="1")
    ap.add_argument("--bc-depths", default="1 16")
    for a in ("--client-threads", "--server-cpus", "--client-cpus"):
        ap.add_argument(a, default="?")
    ap.add_argument("--loadavg", default="unknown")
    ap.add_argument("--loadavg-end", default="unknown")
    args = ap.parse_args()

    def servers_of(name):
        path = os.path.join(args.runs, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [Server(line) for line in f if line.strip()]

    servers = servers_of("servers.txt")
    bc_servers = servers_of("bc-servers.txt")
    depths = [int(d) for d in args.depths.split()]
    bc_depths = [int(d) for d in args.bc_depths.split()]
    sizes = [int(s) for s in args.sizes.split()]
    layouts = args.layouts.split()
    cells = load(args, servers, layouts, [mode(s) for s in sizes], depths)
    bc = load(args, bc_servers, ["bc"], [mode(64)], bc_depths) if args.broadcast != "0" else {}
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "echo-ws.md")
    write_markdown(args, servers, bc_servers, layouts, sizes, depths, bc_depths, cells, bc, out_md)
    print(f"echo_ws_report: wrote {out_md}")
    with open(out_md) as f:
        on = False
        for line in f:
            if line.startswith("## "):
                on = line.startswith(("## Summary", "## Echo", "## Broadcast"))
            if on and (line.startswith(("|", "#", "**"))):
                print(line, end="")


if __name__ == "__main__":
    sys.exit(main())
