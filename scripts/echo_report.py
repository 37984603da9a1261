#!/usr/bin/env python3
"""Writes <out>/echo.md and <out>/echo.png from the JSON files of one scripts/bench-echo.sh run.

Every figure comes from the strix-echo-bench JSON summaries in --runs (named
<server>_d<depth>_r<rep>.json); a missing file or a run that did not pass fails the report.
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

FIELDS = ["msgs_in_per_s", "msgs_out_per_s", "mb_in_per_s", "mb_out_per_s",
          "server_cpu_pct", "server_rss_mib", "client_cpu_pct"]
REFERENCE = "raw-epoll"


def die(why):
    print(f"echo_report: FAILED: {why}", file=sys.stderr)
    sys.exit(1)



def load_runs(runs, servers, depths, reps):
    data = {}
    for name, _, _ in servers:
        for d in depths:
            rows = []
            for r in range(1, reps + 1):
                path = os.path.join(runs, f"{name}_d{d}_r{r}.json")
                if not os.path.exists(path):
                    die(f"{path} is missing")
                with open(path) as f:
                    js = json.load(f)
                if not js.get("ok") or js.get("errors") != 0:
                    die(f"{path}: the run did not pass (ok={js.get('ok')}, errors={js.get('errors')})")
                rows.append(js)
            data[(name, d)] = rows
    return data


def median(rows, field):
    vals = [r[field] for r in rows if r.get(field) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=1, sep=False):
    if v is None:
        return "n/a"
    if sep:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def write_markdown(args, servers, depths, data, out_md):
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    lines = []
    lines.append("# Echo shoot-out (seed 001)")
    lines.append("")
    lines.append(f"Written by `scripts/bench-echo.sh` on {now}. Every figure below is the median of "
                 f"{args.reps} runs read from this run's JSON files in `echo-runs/`.")
    lines.append("")
    lines.append("## Machine")
    lines.append("")
    lines.append(f"- CPUs (nproc): {os.cpu_count() if not hasattr(os, 'sched_getaffinity') else len(os.sched_getaffinity(0))}")
    lines.append(f"- CPU model: {cpu_model()}")
    lines.append(f"- Kernel: {platform.release()}")
    lines.append(f"- Load average when the run started: {args.loadavg} "
                 "(the client and the server share these cores with anything else running)")
    lines.append("")
    lines.append("## Method")
    lines.append("")
    lines.append("Client command, per server, depth and repetition:")
    lines.append("")
    lines.append("```")
    lines.append(args.command)
    lines.append("```")
    lines.append("")
    lines.append("Servers (each restarted for every run, interleaved within each repetition):")
    lines.append("")
    for name, binary, targ in servers:
        lines.append(f"- **{name}**: `{os.path.basename(binary)} --port P {targ}`")
    lines.append("")
    lines.append("Each connection keeps `depth` messages in flight and sends one more per echo; every "
                 "echoed byte and the order of the echoes are verified (all runs: errors=0). "
                 "msgs/s out counts messages whose last byte the client wrote. MB/s counts wire "
                 "bytes (4-byte header + body), 1 MB = 10^6 bytes. Server CPU % is utime+stime over "
                 "the measured window (100 % = one core); RSS is VmRSS at the end of the window. "
                 f"The ratio column is msgs/s in over {REFERENCE}'s at the same depth.")
    lines.append("")
    for d in depths:
        lines.append(f"## Depth {d}")
        lines.append("")
        lines.append("| server | msgs/s in | msgs/s out | MB/s in | MB/s out | server CPU % | RSS MiB "
                     "| client CPU % | vs raw epoll | msgs/s in, each run |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        ref = median(data[(REFERENCE, d)], "msgs_in_per_s") if (REFERENCE, d) in data else None
        for name, _, _ in servers:
            rows = data[(name, d)]
            m = {f: median(rows, f) for f in FIELDS}
            ratio = f"{m['msgs_in_per_s'] / ref:.2f}x" if ref else "n/a"
            each = ", ".join(f"{r['msgs_in_per_s']:,.0f}" for r in rows)
            lines.append(f"| {name} | {fmt(m['msgs_in_per_s'], sep=True)} | {fmt(m['msgs_out_per_s'], sep=True)} "
                         f"| {fmt(m['mb_in_per_s'], 2)} | {fmt(m['mb_out_per_s'], 2)} "
                         f"| {fmt(m['server_cpu_pct'])} | {fmt(m['server_rss_mib'])} "
                         f"| {fmt(m['client_cpu_pct'])} | {ratio} | {each} |")
        lines.append("")
    lines.append("![msgs/s received by depth, one line per server](echo.png)")
    lines.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(lines))


def write_plot(servers, depths, data, out_dir):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        die("gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)")
    dat = os.path.join(out_dir, "echo-plot.dat")
    with open(dat, "w") as f:
        f.write("depth " + " ".join(name for name, _, _ in servers) + "\n")
        for d in depths:
            f.write(f"{d} " + " ".join(f"{median(data[(name, d)], 'msgs_in_per_s'):.0f}"
                                       for name, _, _ in servers) + "\n")
    terms = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
    term = "pngcairo size 900,560" if "pngcairo" in (terms.stdout + terms.stderr) else "png size 900,560"
    png = os.path.join(out_dir, "echo.png")
    script = f"""
set terminal {term}
set output '{png}'
set title 'Echo shoot-out: 100 connections, 8-byte bodies (median msgs/s received)'
set xlabel 'messages in flight per connection (depth)'
set ylabel 'messages/s received'
set logscale xy
set xrange [0.7:{max(depths) * 1.4}]
set xtics ({", ".join(f'"{d}" {d}' for d in depths)})
set format y '%.0s%c'
set grid
set key left top
plot for [i=2:{len(servers) + 1}] '{dat}' using 1:i with linespoints lw 2 pt 7 title columnheader(i)
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
    ap.add_argument("--command", required=True)
    ap.add_argument("--loadavg", default="unknown")
    args = ap.parse_args()

    servers = []
    with open(os.path.join(args.runs, "servers.txt")) as f:
        for line in f:
            if line.strip():
                name, binary, targ = line.rstrip("\n").split("|")
                servers.append((name, binary, targ))
    depths = [int(d) for d in args.depths.split()]
    data = load_runs(args.runs, servers, depths, args.reps)
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "echo.md")
    write_markdown(args, servers, depths, data, out_md)
    write_plot(servers, depths, data, args.out)
    print(f"echo_report: wrote {out_md} and {os.path.join(args.out, 'echo.png')}")
    with open(out_md) as f:
        for line in f:
            if line.startswith("|") or line.startswith("## Depth"):
                print(line, end="")


if __name__ == "__main__":
    main()
