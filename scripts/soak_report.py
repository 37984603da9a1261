#!/usr/bin/env python3
"""Writes <out> (build/bench/soak.md) from one scripts/soak.sh run and prints it.

Inputs in --runs: load.json (strix-chat-load: the interval rows and the verification), rows.tsv
(a server sample taken when each interval row was printed), rss.tsv (a server sample every 5 s);
a sample is "<unix time> <VmRSS kB> <VmHWM kB> <utime+stime clock ticks>".
"""
import argparse
import datetime
import json
import os

from report_common import die


def read(path, default="n/a"):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def samples(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 4:
                    out.append((float(p[0]), int(p[1]), int(p[2]), int(p[3])))
    except OSError:
        pass
    return out


def db_samples(path):
    """db.tsv: "<unix time> <kB>" per line."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2 and p[1].isdigit():
                    out.append((float(p[0]), int(p[1])))
    except OSError:
        pass
    return out


def mib(kb):
    return kb / 1024.0


def ms(us):
    return f"{us / 1000:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, required=True)
    args = ap.parse_args()

    path = os.path.join(args.runs, "load.json")
    if not os.path.exists(path):
        die(f"{path} is missing")
    with open(path) as f:
        run = json.load(f)
    rows = samples(os.path.join(args.runs, "rows.tsv"))
    periodic = samples(os.path.join(args.runs, "rss.tsv"))
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    intervals = run.get("intervals", [])

    L = ["# Soak (the Chat server portfolio's workload for a long run)", ""]
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    L.append(f"Written by `scripts/soak.sh` on {now}. Server: `{read(os.path.join(args.runs, 'server.cmd'))}`; "
             f"load: `{read(os.path.join(args.runs, 'load.cmd'))}`. Load average (1/5/15 min) at start "
             f"{read(os.path.join(args.runs, 'loadavg.start'))}, at end {read(os.path.join(args.runs, 'loadavg.end'))}.")
    L.append("")
    L.append("Latency: from the sender's send to each member's receipt (the load tool's clock). Server RSS and "
             "CPU: /proc/<pid>/status and /proc/<pid>/stat, sampled when each row was printed.")
    L.append("")
    L.append("| until | chat req/s | deliveries/s | p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | server CPU % | "
             "server RSS (MiB) | RSS drift (MiB) |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    first_rss = None
    prev = periodic[0] if periodic else None
    for i, r in enumerate(intervals):
        lat = r["latency_us"]
        s = rows[i] if i < len(rows) else None
        cpu = rss = drift = "n/a"
        if s:
            if prev and s[0] > prev[0]:
                cpu = f"{100.0 * (s[3] - prev[3]) / tick / (s[0] - prev[0]):.0f}"
            prev = s
            if first_rss is None:
                first_rss = s[1]
            rss = f"{mib(s[1]):.1f}"
            drift = f"{mib(s[1] - first_rss):+.1f}"
        L.append(f"| {r['sec']:g} s | {r['app_in_s']:,.0f} | {r['bc_deliv_s']:,.0f} | {ms(lat['p50'])} | "
                 f"{ms(lat['p99'])} | {ms(lat.get('p999', lat['p99']))} | {ms(lat.get('max', 0))} | {cpu} | {rss} | "
                 f"{drift} |")
    L.append("")

    lat = run["latency_us"]
    L.append(f"Whole run: {run['sent']:,} chat requests, {run['delivered']:,} of {run['expected_deliveries']:,} "
             f"deliveries verified; lost {run['lost']}, duplicates {run['duplicates']}, out of order "
             f"{run['out_of_order']}, corrupt {run['corrupt']}, errors {run['errors']['total']}, disconnects "
             f"{run['disconnects']}. Latency p50 {ms(lat['p50'])} / p99 {ms(lat['p99'])} / p99.9 "
             f"{ms(lat['p999'])} / max {ms(lat['max'])} ms.")
    if rows and first_rss is not None:
        last = rows[min(len(rows), len(intervals)) - 1]
        hours = (last[0] - rows[0][0]) / 3600.0
        drift = mib(last[1] - first_rss)
        # A rate from a short run would mostly extrapolate start-up growth: only past 10 minutes.
        rate = f", {drift / hours:+.1f} MiB per hour" if hours >= 1 / 6 else ""
        after = [p for p in periodic if p[0] >= rows[0][0]]
        lo = min((p[1] for p in after), default=first_rss)
        hi = max((p[1] for p in after), default=first_rss)
        hwm = max((p[2] for p in periodic), default=0)
        L.append("")
        L.append(f"**Server RSS drift: {drift:+.1f} MiB** from the end of the first interval ({mib(first_rss):.1f} MiB) "
                 f"to the end of the last ({mib(last[1]):.1f} MiB){rate}; between them it stayed within "
                 f"{mib(lo):.1f}-{mib(hi):.1f} MiB (5 s samples); peak RSS (VmHWM) {mib(hwm):.1f} MiB.")
    db_kb = read(os.path.join(args.runs, "db_kb"), "")
    server_cmd = read(os.path.join(args.runs, "server.cmd"), "")
    words = server_cmd.split()
    retention = " ".join(f"{w} {words[i + 1]}" for i, w in enumerate(words[:-1]) if w.startswith("--retention"))
    if db_kb.isdigit() and int(db_kb) > 0:
        L.append("")
        kept = f"retention {retention}" if retention else "every message is kept"
        L.append(f"Database directory at the end: {int(db_kb) / 1024:.1f} MiB ({kept}).")
    sizes = db_samples(os.path.join(args.runs, "db.tsv"))
    if len(sizes) >= 2:
        half = sizes[len(sizes) // 2:]
        L.append(f"Database directory over the run (5 s samples): {mib(sizes[0][1]):.1f} MiB at the first sample, "
                 f"{mib(max(p[1] for p in sizes)):.1f} MiB at most; over the second half of the run "
                 f"{mib(min(p[1] for p in half)):.1f}-{mib(max(p[1] for p in half)):.1f} MiB.")
    verdict = "passed" if run.get("ok") else f"FAILED: {run.get('failure')}"
    L.append("")
    L.append(f"Verification: {verdict}.")
    L.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    text = "\n".join(L)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    print(f"soak_report: wrote {args.out}")


if __name__ == "__main__":
    main()
