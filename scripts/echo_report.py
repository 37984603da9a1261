#!/usr/bin/env python3
"""Writes <out>/echo.md and <out>/echo.png from the files of one scripts/bench-echo.sh run.

Every figure comes from the strix-echo-bench and strix-echo-loop JSON summaries in --runs, named
<layout>_<mode>_<server>_d<depth>_r<rep>.json; <same>.failed holds why a run failed and
<same>.where the CPUs each server thread was allowed. servers.txt lists the servers
(name|binary|arguments|role|status). Failed runs are left out of the medians and flagged; a cell
with no passing run shows "failed".

Sections scripts/readme_tables.py copies: "## Depth 1", "## Depth 16", "## Depth 128".
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

from report_common import cpu_model

REFERENCE = "raw-epoll"
FIELDS = ["msgs_in_per_s", "msgs_out_per_s", "mb_in_per_s", "mb_out_per_s",
          "server_cpu_pct", "server_rss_mib", "client_cpu_pct"]
ROLE_ORDER = {"strix": 0, "strix-base": 1, "reference": 2, "peer": 3, "baseline": 4}
DEFAULT = "strix"      # strix-echo-server with no option but --port: what a user gets
TARGET_PEER = 1.1      # issue 15: the default configuration >= 1.1x the best peer at depths 16 and 128
TARGET_PEER_D1 = 1.0   # ... and >= 1.0x at depth 1


def die(why):
    print(f"echo_report: FAILED: {why}", file=sys.stderr)
    sys.exit(1)


class Server:
    def __init__(self, line):
        name, binary, targ, role, status = line.rstrip("\n").split("|", 4)
        self.name, self.binary, self.args, self.role = name, binary, targ, role
        self.built = status == "built"
        self.why = status.split("|", 1)[1] if "|" in status else status


class Cell:
    """The runs of one server in one layout, client mode and depth."""

    def __init__(self):
        self.rows = []      # passing JSON summaries
        self.failed = []    # reasons
        self.where = None   # server threads' CPUs, from the first run that recorded them

    def med(self, field="msgs_in_per_s"):
        vals = [r[field] for r in self.rows if r.get(field) is not None]
        return statistics.median(vals) if vals else None

    def lo(self):
        return min(r["msgs_in_per_s"] for r in self.rows) if self.rows else None

    def hi(self):
        return max(r["msgs_in_per_s"] for r in self.rows) if self.rows else None


def load(args, servers, layouts, modes, depths):
    cells = {}
    for lay in layouts:
        for mode in modes:
            for s in servers:
                if not s.built:
                    continue
                for d in depths:
                    c = Cell()
                    for r in range(1, args.reps + 1):
                        base = os.path.join(args.runs, f"{lay}_{mode}_{s.name}_d{d}_r{r}")
                        if c.where is None and os.path.exists(base + ".where"):
                            c.where = open(base + ".where").read().strip() or None
                        if os.path.exists(base + ".failed"):
                            c.failed.append(open(base + ".failed").read().strip())
                            continue
                        if not os.path.exists(base + ".json"):
                            c.failed.append(f"{os.path.basename(base)}.json is missing")
                            continue
                        with open(base + ".json") as f:
                            js = json.load(f)
                        if not js.get("ok") or js.get("errors") != 0:
                            c.failed.append(f"ok={js.get('ok')}, errors={js.get('errors')}")
                            continue
                        c.rows.append(js)
                    cells[(lay, mode, s.name, d)] = c
    return cells


def millions(v):
    return "n/a" if v is None else f"{v / 1e6:.3f}"


def fmt(v, digits=1, sep=False):
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if sep else f"{v:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def layout_title(lay, args):
    if lay == "pinned":
        return f"client pinned apart (server on CPU {args.server_cpus}, client on CPU {args.client_cpus})"
    return "client free (no taskset; servers as they run by default)"


def layout_short(lay):
    return "pinned apart" if lay == "pinned" else "client free"


def mode_title(mode, args):
    if mode == "multi":
        return f"multi-threaded client ({args.client_threads} threads)"
    if mode == "loop":
        return "independent single-threaded client (strix-echo-loop)"
    return "single-threaded client"


def mode_short(mode):
    return {"multi": "multi client", "loop": "loop client"}.get(mode, "single client")


def best_peer(cells, servers, lay, mode, d):
    """(name, median) of the fastest peer or reference (tokio, gnet, raw epoll) in a cell."""
    best = (None, None)
    for s in servers:
        if s.built and s.role in ("peer", "reference"):
            m = cells[(lay, mode, s.name, d)].med()
            if m is not None and (best[1] is None or m > best[1]):
                best = (s.name, m)
    return best


def best_strix(cells, servers, lay, mode, d):
    """(name, median) of strix's best backend in a cell (strix = the default, strix-epoll = epoll)."""
    best = (None, None)
    for s in servers:
        if s.built and s.role == "strix":
            m = cells[(lay, mode, s.name, d)].med()
            if m is not None and (best[1] is None or m > best[1]):
                best = (s.name, m)
    return best


def range_cell(c):
    if c.med() is None:
        return "failed"
    txt = f"{millions(c.med())} ({millions(c.lo())}–{millions(c.hi())})"
    if c.failed:
        txt += f", {len(c.failed)} failed"
    return txt


def write_markdown(args, servers, layouts, modes, depths, cells, out_md):
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    has_strix = any(s.role == "strix" and s.built for s in servers)
    combos = [(lay, mode) for lay in layouts for mode in modes]
    L = []
    L.append("# Echo shoot-out (seed 001)")
    L.append("")
    L.append(f"Written by `scripts/bench-echo.sh` on {now}. Every figure is the median of {args.reps} "
             "interleaved runs, with the slowest and fastest run in brackets, read from this run's JSON "
             "files in `echo-runs/`. msgs/s means messages echoed back and verified per second.")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append(f"- CPUs (nproc): {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}")
    L.append(f"- CPU model: {cpu_model()}")
    L.append(f"- Kernel: {platform.release()}")
    L.append(f"- Load average when the run started: {args.loadavg}; when it ended: {args.loadavg_end} "
             "(the client and the servers share these CPUs with anything else running)")
    L.append("")
    L.append("## Method")
    L.append("")
    L.append("Seed 001's test: 100 connections, 8-byte bodies behind a 4-byte little-endian length, "
             "each message echoed with its own send() (the servers coalesce). Client command, per "
             "server, layout, client mode, depth and repetition:")
    L.append("")
    L.append("```")
    L.append(args.command + " --mode multi --threads " + str(args.client_threads) + "   # multi-threaded client")
    L.append(args.command + " --mode single   # single-threaded client")
    if "loop" in modes:
        L.append(args.command.replace("strix-echo-bench", "strix-echo-loop", 1) +
                 "   # independent single-threaded client")
    L.append("```")
    L.append("")
    L.append("Layouts:")
    L.append("")
    if "pinned" in layouts:
        L.append(f"- **pinned apart**: `taskset -c {args.server_cpus} <server> ...` and "
                 f"`taskset -c {args.client_cpus} strix-echo-bench ...`, the same CPU set for every server.")
    if "free" in layouts:
        L.append("- **client free**: no taskset; every server runs as it does by default (raw epoll pins "
                 "thread i to the i-th CPU it may use; strix (unless `--pin`), tokio, gnet and asio leave their "
                 "threads to the scheduler) and the client runs wherever the scheduler puts it.")
    L.append("")
    L.append("Client modes: **multi**: `--mode multi`, worker threads each with their own epoll loop and "
             "a slice of the connections, plus a thread that samples once a second; **single**: "
             "`--mode single`, one thread and one epoll loop driving every connection and sampling "
             "between loop turns (an independent single-threaded pipelined client). In both, every "
             "connection keeps `depth` messages in flight, sends one more per echo, and checks every "
             "echoed byte, the count and the order." +
             (" **loop**: `strix-echo-loop` (bench/echo/echo_loop_client.cpp), an independent "
              "single-threaded client written the way a user writes one: one level-triggered epoll loop, "
              "and per readable event one read, the check of every whole echo it completes (length, "
              "connection and sequence number, body), and one write of as many new messages as came "
              "back; no batch-then-flush pass, no read until a short read." if "loop" in modes else ""))
    L.append("")
    L.append("Servers (each restarted for every run; within a repetition, layout, client mode and "
             "depth they run one after the other):")
    L.append("")
    for s in sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9)):
        what = {"strix": "the engine under test", "strix-base": "the engine at the A/B's baseline build",
                "reference": "reference: a raw epoll loop with the same batching",
                "peer": "peer", "baseline": "naive baseline: seed 001's asio server"}.get(s.role, s.role)
        if s.built:
            L.append(f"- **{s.name}** ({what}): `{os.path.basename(s.binary)} --port P {s.args}`")
        else:
            L.append(f"- **{s.name}** ({what}): **not built**: {s.why}")
    L.append("")
    L.append("tokio-echo (bench/peers/tokio-echo): tokio's multi-thread runtime, one task per connection, "
             "every complete frame of a read appended to one buffer and written with one `write_all`. "
             "gnet-echo (bench/peers/gnet-echo): gnet/v2 multicore engine, OnTraffic peeks the complete "
             "frames and writes them back with one `Write`. The **best peer** in a cell is the fastest "
             "of raw epoll, tokio and gnet by median; the naive asio server is shown but is not a peer. "
             f"Targets (issue 15): the default configuration (strix) at least {TARGET_PEER_D1}x the best "
             f"peer at depth 1 and {TARGET_PEER}x at depths 16 and 128.")
    L.append("")

    # --- where each process ran ---------------------------------------------------------------------
    L.append("## Where each process ran")
    L.append("")
    L.append("The CPUs each server thread was allowed to run on (its `Cpus_allowed_list`, read at the end "
             "of the first run of the cell), and the client's.")
    L.append("")
    L.append("| layout | server | server threads | " + " | ".join(f"client ({m})" for m in modes) + " |")
    L.append("|---|---|---|" + "---|" * len(modes))
    for lay in layouts:
        for s in servers:
            if not s.built:
                continue
            where = next((cells[(lay, m, s.name, d)].where for m in modes for d in depths
                          if cells[(lay, m, s.name, d)].where), "unknown")
            client = {}
            for m in modes:
                rows = [r for d in depths for r in cells[(lay, m, s.name, d)].rows]
                cpus = sorted({r.get("client_cpus", "?") for r in rows})
                thr = sorted({r.get("client_threads", "?") for r in rows})
                client[m] = (f"{thr[0]} thread{'s' if thr[0] != 1 else ''} on {', '.join(cpus)}"
                             if rows else "n/a")
            L.append(f"| {layout_short(lay)} | {s.name} | {where} | "
                     + " | ".join(client.get(m, "-") for m in modes) + " |")
    L.append("")

    # --- summary ------------------------------------------------------------------------------------
    if has_strix:
        L.append("## Summary: the default configuration against the best peer")
        L.append("")
        L.append(f"strix is strix-echo-server as a user starts it (no option but --port: io_uring where the "
                 f"kernel allows it, one shard per CPU). Targets: at least {TARGET_PEER_D1}x the best peer (tokio, gnet, raw epoll) at depth 1 "
                 f"and {TARGET_PEER}x at depths 16 and 128. strix's best backend is shown beside it.")
        L.append("")
        L.append("| layout | client | depth | strix (default) msgs/s | best peer msgs/s | default / best peer | "
                 "target | strix best backend | best / best peer |")
        L.append("|---|---|---:|---:|---:|---:|---|---|---:|")
        for lay, mode in combos:
            for d in depths:
                dc = cells.get((lay, mode, DEFAULT, d))
                dm = dc.med() if dc else None
                sn, st = best_strix(cells, servers, lay, mode, d)
                bn, bm = best_peer(cells, servers, lay, mode, d)
                want = TARGET_PEER_D1 if d == 1 else TARGET_PEER
                verdict = (f"≥ {want}x: {'met' if dm / bm >= want else 'NOT met'}" if dm and bm else "n/a")
                L.append(f"| {layout_short(lay)} | {mode} | {d} | {fmt(dm, sep=True)} "
                         f"| {fmt(bm, sep=True)} ({bn or 'n/a'}) | {ratio(dm, bm)} | {verdict} "
                         f"| {fmt(st, sep=True)} ({sn or 'n/a'}) | {ratio(st, bm)} |")
        L.append("")

    # --- A/B against a baseline build -------------------------------------------------------------
    built = {s.name for s in servers if s.built}
    pairs = [(a, a + "-base") for a in ("strix", "strix-epoll") if a in built and a + "-base" in built]
    if pairs:
        L.append("## A/B: this build against the baseline build")
        L.append("")
        L.append("Each server of this build beside the same server from ECHO_BASELINE_BIN, in the same "
                 "interleaved run: median (min–max), million msgs/s, and the ratio of the medians.")
        L.append("")
        L.append("| layout | client | depth | " + " | ".join(f"{a} | {b} | ratio" for a, b in pairs) + " |")
        L.append("|---|---|---:|" + "---:|---:|---:|" * len(pairs))
        for lay, mode in combos:
            for d in depths:
                row = []
                for a, b in pairs:
                    ca, cb = cells[(lay, mode, a, d)], cells[(lay, mode, b, d)]
                    row += [range_cell(ca), range_cell(cb), ratio(ca.med(), cb.med())]
                L.append(f"| {layout_short(lay)} | {mode} | {d} | " + " | ".join(row) + " |")
        L.append("")

    # --- per depth (the README's view) --------------------------------------------------------------
    for d in depths:
        L.append(f"## Depth {d}")
        L.append("")
        L.append(f"Million msgs/s echoed at depth {d}, median of {args.reps} runs (min–max); server "
                 f"threads: {args.threads_note}; pinned apart = server on CPU {args.server_cpus}, client "
                 f"on CPU {args.client_cpus}; multi client = {args.client_threads} client threads.")
        L.append("")
        L.append("| server | " + " | ".join(f"{layout_short(l)}, {mode_short(m)}" for l, m in combos) + " |")
        L.append("|---|" + "---:|" * len(combos))
        for s in sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9)):
            if not s.built:
                L.append(f"| {s.name} | " + " | ".join("not built" for _ in combos) + " |")
                continue
            L.append(f"| {s.name} | " + " | ".join(range_cell(cells[(l, m, s.name, d)]) for l, m in combos) + " |")
        if has_strix:
            peer_cells, raw_cells = [], []
            for l, m in combos:
                dc = cells.get((l, m, DEFAULT, d))
                dm = dc.med() if dc else None
                bn, bm = best_peer(cells, servers, l, m, d)
                peer_cells.append(f"{ratio(dm, bm)} ({bn})" if bn else "n/a")
                rc = cells.get((l, m, REFERENCE, d))
                raw_cells.append(ratio(dm, rc.med() if rc else None))
            L.append("| **strix (default) / best peer** | " + " | ".join(peer_cells) + " |")
            L.append("| **strix (default) / raw epoll** | " + " | ".join(raw_cells) + " |")
        L.append("")

    # --- per layout and client mode -----------------------------------------------------------------
    for lay, mode in combos:
        L.append(f"## {layout_title(lay, args)[0].upper() + layout_title(lay, args)[1:]}, {mode_title(mode, args)}")
        L.append("")
        L.append("| server | depth | msgs/s median (min–max) | msgs/s out | MB/s in | server CPU % | RSS MiB "
                 "| client CPU % | vs best peer | vs raw epoll | msgs/s, each run |")
        L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for s in sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9)):
            if not s.built:
                L.append(f"| {s.name} | all | not built | | | | | | | | |")
                continue
            for d in depths:
                c = cells[(lay, mode, s.name, d)]
                m = {f: c.med(f) for f in FIELDS}
                bn, bm = best_peer(cells, servers, lay, mode, d)
                rc = cells.get((lay, mode, REFERENCE, d))
                each = ", ".join(f"{r['msgs_in_per_s']:,.0f}" for r in c.rows)
                if c.failed:
                    reasons = "; ".join(dict.fromkeys(c.failed))  # each distinct reason once
                    each += ("; " if each else "") + f"{len(c.failed)} failed: {reasons}"
                med = ("failed" if m["msgs_in_per_s"] is None else
                       f"{fmt(m['msgs_in_per_s'], sep=True)} ({fmt(c.lo(), sep=True)}–{fmt(c.hi(), sep=True)})")
                L.append(f"| {s.name} | {d} | {med} | {fmt(m['msgs_out_per_s'], sep=True)} "
                         f"| {fmt(m['mb_in_per_s'], 2)} | {fmt(m['server_cpu_pct'])} | {fmt(m['server_rss_mib'])} "
                         f"| {fmt(m['client_cpu_pct'])} | {ratio(m['msgs_in_per_s'], bm)} "
                         f"| {ratio(m['msgs_in_per_s'], rc.med() if rc else None)} | {each} |")
        L.append("")
    L.append("MB/s counts wire bytes (4-byte header + body), 1 MB = 10^6 bytes. msgs/s out counts messages "
             "whose last byte the client wrote. Server CPU % is utime+stime over the measured window "
             "(100 % = one CPU); RSS is VmRSS at the end of the window; client CPU % is the load tool's own.")
    L.append("")
    L.append("## Plot")
    L.append("")
    L.append("![msgs/s echoed by depth, one panel per layout and client mode, one line per server](echo.png)")
    L.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(L))


def write_plot(servers, layouts, modes, depths, cells, args, out_dir):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        die("gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)")
    built = [s for s in sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9)) if s.built]
    combos = [(lay, mode) for lay in layouts for mode in modes]
    plots = []
    for i, (lay, mode) in enumerate(combos):
        dat = os.path.join(out_dir, f"echo-plot-{lay}-{mode}.dat")
        with open(dat, "w") as f:
            f.write("depth " + " ".join(s.name for s in built) + "\n")
            for d in depths:
                vals = [cells[(lay, mode, s.name, d)].med() for s in built]
                f.write(f"{d} " + " ".join("NaN" if v is None else f"{v:.0f}" for v in vals) + "\n")
        plots.append(f"""
set title '{layout_short(lay)}, {mode_title(mode, args)}'
plot for [i=2:{len(built) + 1}] '{dat}' using 1:i with linespoints lw 2 pt 7 title columnheader(i)
""")
    cols = 2 if len(combos) > 1 else 1
    rows = (len(combos) + cols - 1) // cols
    width, height = 560 * cols, 420 * rows
    terms = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
    term = (f"pngcairo size {width},{height}" if "pngcairo" in (terms.stdout + terms.stderr)
            else f"png size {width},{height}")
    png = os.path.join(out_dir, "echo.png")
    script = f"""
set terminal {term}
set output '{png}'
set multiplot layout {rows},{cols} title 'Echo shoot-out: 100 connections, 8-byte bodies (median msgs/s echoed)'
set xlabel 'messages in flight per connection (depth)'
set ylabel 'messages/s'
set logscale xy
set xrange [0.7:{max(depths) * 1.4}]
set xtics ({", ".join(f'"{d}" {d}' for d in depths)})
set format y '%.0s%c'
set grid
set key left top
{''.join(plots)}
unset multiplot
"""
    res = subprocess.run([gnuplot], input=script, capture_output=True, text=True)
    if res.returncode != 0 or not os.path.exists(png):
        die(f"gnuplot failed: {res.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--depths", required=True)
    ap.add_argument("--layouts", default="pinned free")
    ap.add_argument("--modes", default="multi single loop")
    ap.add_argument("--command", required=True)
    ap.add_argument("--client-threads", default="?")
    ap.add_argument("--server-cpus", default="?")
    ap.add_argument("--client-cpus", default="?")
    ap.add_argument("--loadavg", default="unknown")
    ap.add_argument("--loadavg-end", default="unknown")
    args = ap.parse_args()

    with open(os.path.join(args.runs, "servers.txt")) as f:
        servers = [Server(line) for line in f if line.strip()]
    targs = sorted({s.args.split()[1] for s in servers if s.built and s.role in ("reference", "peer")
                    and len(s.args.split()) > 1})
    args.threads_note = (f"strix its default (one shard per CPU), {targs[0]} for raw epoll, tokio and gnet, "
                         "20 for asio" if len(targs) == 1 else "see Method")
    depths = [int(d) for d in args.depths.split()]
    layouts = args.layouts.split()
    modes = args.modes.split()
    cells = load(args, servers, layouts, modes, depths)
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "echo.md")
    write_markdown(args, servers, layouts, modes, depths, cells, out_md)
    write_plot(servers, layouts, modes, depths, cells, args, args.out)
    print(f"echo_report: wrote {out_md} and {os.path.join(args.out, 'echo.png')}")
    with open(out_md) as f:
        on = False
        for line in f:
            if line.startswith("## Summary") or line.startswith("## Depth"):
                on = True
            elif line.startswith("## "):
                on = False
            if on and (line.startswith("|") or line.startswith("## ")):
                print(line, end="")


if __name__ == "__main__":
    main()
