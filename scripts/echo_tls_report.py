#!/usr/bin/env python3
"""Writes <out>/echo-tls.md from the files of one scripts/bench-echo-tls.sh run.

Echo runs are read as scripts/echo_report.py reads the plain shoot-out's
(<layout>_multi_<server>_d<depth>_r<rep>.json, .failed, .where; servers.txt), with its loader.
Handshake runs are hs_<full|resumed>_<server>_r<rep>.json (strix-echo-bench --handshakes).
Failed runs are left out of the medians and flagged; a cell with no passing run shows "failed".

Sections scripts/readme_tables.py copies: "## Summary: strix over TLS against the best TLS peer"
and "## Handshakes".
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys

from echo_report import Server, fmt, layout_short, load, ratio, range_cell
from report_common import cpu_model

DEFAULT = "strix-tls"  # strix-echo-server with a certificate and otherwise its defaults
TARGET_PEER = 1.1      # issue 17: >= 1.1x the best TLS peer at depths 16 and 128
TARGET_PEER_D1 = 1.0   # ... and >= 1.0x at depth 1
ROLE_ORDER = {"strix": 0, "peer": 1}
MODE = "multi"


class HsCell:
    """The handshake runs of one server and kind (full or resumed)."""

    def __init__(self):
        self.rows, self.failed = [], []

    def med(self, field):
        vals = [r[field] for r in self.rows if r.get(field) is not None]
        return statistics.median(vals) if vals else None

    def span(self, field):
        vals = [r[field] for r in self.rows if r.get(field) is not None]
        return (min(vals), max(vals)) if vals else (None, None)


def load_handshakes(args, servers, kinds):
    cells = {}
    for s in servers:
        if not s.built:
            continue
        for kind in kinds:
            c = HsCell()
            for r in range(1, args.reps + 1):
                base = os.path.join(args.runs, f"hs_{kind}_{s.name}_r{r}")
                if os.path.exists(base + ".failed"):
                    c.failed.append(open(base + ".failed").read().strip())
                elif not os.path.exists(base + ".json"):
                    c.failed.append(f"{os.path.basename(base)}.json is missing")
                else:
                    with open(base + ".json") as f:
                        js = json.load(f)
                    if js.get("ok") and js.get("errors") == 0:
                        c.rows.append(js)
                    else:
                        c.failed.append(f"ok={js.get('ok')}, errors={js.get('errors')}")
            cells[(s.name, kind)] = c
    return cells


def best_tls_peer(cells, servers, lay, d):
    best = (None, None)
    for s in servers:
        if s.built and s.role == "peer":
            m = cells[(lay, MODE, s.name, d)].med()
            if m is not None and (best[1] is None or m > best[1]):
                best = (s.name, m)
    return best


def hs_range(c, field, digits=0):
    m = c.med(field) if c else None
    if m is None:
        return "failed" if c else "n/a"
    lo, hi = c.span(field)
    txt = f"{fmt(m, sep=True)} ({fmt(lo, sep=True)}–{fmt(hi, sep=True)})"
    if c.failed:
        txt += f", {len(c.failed)} failed"
    return txt


def sessions(rows):
    """The distinct 'TLSv1.3 TLS_AES_128_GCM_SHA256' strings the client reported."""
    return ", ".join(sorted({r.get("tls_session") or "?" for r in rows})) or "n/a"


def write_markdown(args, servers, hs_args, layouts, depths, kinds, cells, hs, out_md):
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    ordered = sorted(servers, key=lambda s: ROLE_ORDER.get(s.role, 9))
    has_strix = any(s.name == DEFAULT and s.built for s in servers)
    key = {"ec": "ECDSA P-256", "rsa": "RSA 2048"}.get(args.key, args.key)
    L = ["# Echo shoot-out over TLS (issue 17)", ""]
    L.append(f"Written by `scripts/bench-echo-tls.sh` on {now}. Every figure is the median of {args.reps} "
             "interleaved runs, with the slowest and fastest run in brackets, read from this run's JSON files "
             "in `echo-tls-runs/`. msgs/s means messages echoed back and verified per second.")
    L += ["", "## Machine", ""]
    L.append(f"- CPUs (nproc): {len(os.sched_getaffinity(0))}")
    L.append(f"- CPU model: {cpu_model()}")
    L.append(f"- Kernel: {platform.release()}")
    L.append(f"- Load average when the run started: {args.loadavg}; when it ended: {args.loadavg_end} "
             "(the client and the servers share these CPUs with anything else running)")
    L += ["", "## Method", ""]
    L.append(f"The plain shoot-out's test (100 connections, 8-byte bodies behind a 4-byte little-endian "
             f"length, each message echoed on its own) over TLS: a throwaway CA and a server certificate ({key}) "
             "for 127.0.0.1 (CERT, KEY) from `bench/echo/echo_tls_cert.sh`, verified by the client (chain and IP address) on "
             "every connection. Echo runs (multi-threaded client, OpenSSL 3 over the same epoll loop, one "
             "`SSL_write` of a connection's pending messages per loop turn):")
    L += ["", "```", args.command, "```", ""]
    L.append("Handshake runs: every connection does a full or resumed handshake (`--resume` offers the "
             "session from the slot's previous connection, a TLS 1.3 ticket), one verified echo, then "
             "close_notify and close. The server runs one thread (`--threads 1`, strix `--shards 1`)"
             + (f" on CPU {args.server_cpus} (taskset), the client on CPU {args.client_cpus}"
                if args.hs_pinned == "1" else ", unpinned (no taskset or one CPU)") + ":")
    L += ["", "```", args.hs_command, "```", ""]
    if args.hs_pinned == "1":
        L.append("**Per core:** handshakes/s is what one server core did while the client (one core, OpenSSL "
                 "3.0, which spends more CPU per handshake than the servers) kept it busy; handshakes per "
                 "server CPU-second (handshakes over the server's utime+stime in the window) is what a "
                 "saturated core would do.")
        L.append("")
    L.append("Layouts: " + "; ".join(
        (f"**pinned apart**: server on CPU {args.server_cpus}, client on CPU {args.client_cpus} (taskset)"
         if lay == "pinned" else "**client free**: no taskset") for lay in layouts) + ".")
    L += ["", "Servers:", ""]
    for s in ordered:
        what = "the engine under test" if s.role == "strix" else "peer"
        if s.built:
            L.append(f"- **{s.name}** ({what}): echo `{os.path.basename(s.binary)} --port P {s.args}`; "
                     f"handshakes `... {hs_args.get(s.name, '')}`")
        else:
            L.append(f"- **{s.name}** ({what}): **not built**: {s.why}")
    L.append("")
    L.append("tokio-tls-echo (bench/peers/tokio-tls-echo): tokio-echo behind tokio-rustls (rustls 0.23, "
             "aws-lc-rs), one task per connection, one `write_all` + `flush` per read. go-tls-echo "
             "(bench/peers/go-tls-echo): Go crypto/tls on net, one goroutine per connection, one `Write` "
             "per read, GOMAXPROCS = --threads. Both: TLS 1.2 and 1.3, session tickets. Every server "
             "picks the TLS 1.3 cipher suite by its own preference, as its users get it; negotiated (as the "
             "client reported it):")
    L.append("")
    for s in ordered:
        if s.built:
            rows = [r for k, c in cells.items() if k[2] == s.name for r in c.rows]
            rows += [r for k, c in hs.items() if k[0] == s.name for r in c.rows]
            L.append(f"- {s.name}: {sessions(rows)}")
    L.append("")

    if has_strix:
        L += ["## Summary: strix over TLS against the best TLS peer", ""]
        L.append(f"Targets (issue 17): at least {TARGET_PEER_D1}x the best TLS peer (tokio-tls, go-tls) at depth "
                 f"1 and {TARGET_PEER}x at depths 16 and 128.")
        L += ["", "| layout | depth | strix-tls msgs/s | best TLS peer msgs/s | strix-tls / best | target |",
              "|---|---:|---:|---:|---:|---|"]
        for lay in layouts:
            for d in depths:
                dm = cells[(lay, MODE, DEFAULT, d)].med()
                bn, bm = best_tls_peer(cells, servers, lay, d)
                want = TARGET_PEER_D1 if d == 1 else TARGET_PEER
                verdict = f"≥ {want}x: {'met' if dm / bm >= want else 'NOT met'}" if dm and bm else "n/a"
                L.append(f"| {layout_short(lay)} | {d} | {fmt(dm, sep=True)} | {fmt(bm, sep=True)} "
                         f"({bn or 'n/a'}) | {ratio(dm, bm)} | {verdict} |")
        L.append("")

    L += ["## Echo over TLS", ""]
    L.append(f"Million msgs/s echoed, median of {args.reps} runs (min–max); multi client = "
             f"{args.client_threads} client threads.")
    L += ["", "| server | depth | " + " | ".join(layout_short(l) for l in layouts) + " |",
          "|---|---:|" + "---:|" * len(layouts)]
    for d in depths:
        for s in ordered:
            if not s.built:
                L.append(f"| {s.name} | {d} | " + " | ".join("not built" for _ in layouts) + " |")
                continue
            L.append(f"| {s.name} | {d} | " + " | ".join(range_cell(cells[(l, MODE, s.name, d)]) for l in layouts)
                     + " |")
        if has_strix:
            row = []
            for lay in layouts:
                bn, bm = best_tls_peer(cells, servers, lay, d)
                row.append(f"{ratio(cells[(lay, MODE, DEFAULT, d)].med(), bm)} ({bn})" if bn else "n/a")
            L.append(f"| **strix-tls / best TLS peer** | {d} | " + " | ".join(row) + " |")
    L.append("")

    if kinds:
        L += ["## Handshakes", ""]
        L.append("Per server: handshakes/s (each with one verified echo) and handshakes per second of server CPU "
                 f"time, median (min–max) of {args.reps} runs; the share resumed (SSL_session_reused) and the "
                 "server's and client's CPU %, medians.")
        L += ["", "| server | kind | handshakes/s | per server CPU-second | resumed | server CPU % | client CPU % |",
              "|---|---|---:|---:|---:|---:|---:|"]
        for s in ordered:
            for kind in kinds:
                if not s.built:
                    L.append(f"| {s.name} | {kind} | not built | | | | |")
                    continue
                c = hs[(s.name, kind)]
                rp = c.med("resumed_pct")
                L.append(f"| {s.name} | {kind} | {hs_range(c, 'handshakes_per_s')} "
                         f"| {hs_range(c, 'handshakes_per_server_cpu_s')} "
                         f"| {'n/a' if rp is None else f'{rp:.1f} %'} | {fmt(c.med('server_cpu_pct'))} "
                         f"| {fmt(c.med('client_cpu_pct'))} |")
        L.append("")

    L += ["## Every run", ""]
    L += ["| layout | server | depth | msgs/s median (min–max) | server CPU % | RSS MiB | client CPU % "
          "| server threads | msgs/s, each run |", "|---|---|---:|---|---:|---:|---:|---|---|"]
    for lay in layouts:
        for s in ordered:
            if not s.built:
                continue
            for d in depths:
                c = cells[(lay, MODE, s.name, d)]
                each = ", ".join(f"{r['msgs_in_per_s']:,.0f}" for r in c.rows)
                if c.failed:
                    each += ("; " if each else "") + f"{len(c.failed)} failed: " + "; ".join(dict.fromkeys(c.failed))
                med = "failed" if c.med() is None else \
                    f"{fmt(c.med(), sep=True)} ({fmt(c.lo(), sep=True)}–{fmt(c.hi(), sep=True)})"
                L.append(f"| {layout_short(lay)} | {s.name} | {d} | {med} | {fmt(c.med('server_cpu_pct'))} "
                         f"| {fmt(c.med('server_rss_mib'))} | {fmt(c.med('client_cpu_pct'))} | {c.where or 'n/a'} "
                         f"| {each} |")
    for (name, kind), c in hs.items():
        if c.failed:
            L.append("")
            L.append(f"Handshakes, {name}, {kind}: {len(c.failed)} failed: " + "; ".join(dict.fromkeys(c.failed)))
    L.append("")
    L.append("Server CPU % is utime+stime over the measured window (100 % = one CPU); RSS is VmRSS at its end; "
             "client CPU % is the load tool's own.")
    L.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for a in ("--runs", "--out", "--depths", "--command", "--hs-command"):
        ap.add_argument(a, required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--layouts", default="pinned free")
    ap.add_argument("--kinds", default="full resumed")
    ap.add_argument("--hs-pinned", default="0")
    ap.add_argument("--key", default="ec")
    for a in ("--client-threads", "--server-cpus", "--client-cpus"):
        ap.add_argument(a, default="?")
    ap.add_argument("--loadavg", default="unknown")
    ap.add_argument("--loadavg-end", default="unknown")
    args = ap.parse_args()

    with open(os.path.join(args.runs, "servers.txt")) as f:
        servers = [Server(line) for line in f if line.strip()]
    hs_args = {}
    hs_file = os.path.join(args.runs, "handshake-args.txt")
    if os.path.exists(hs_file):
        with open(hs_file) as f:
            hs_args = dict(line.rstrip("\n").split("|", 1) for line in f if "|" in line)
    depths = [int(d) for d in args.depths.split()]
    layouts = args.layouts.split()
    kinds = args.kinds.split()
    cells = load(args, servers, layouts, [MODE], depths)
    hs = load_handshakes(args, servers, kinds)
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "echo-tls.md")
    write_markdown(args, servers, hs_args, layouts, depths, kinds, cells, hs, out_md)
    print(f"echo_tls_report: wrote {out_md}")
    with open(out_md) as f:
        on = False
        for line in f:
            if line.startswith("## "):
                on = line.startswith(("## Summary", "## Echo over TLS", "## Handshakes"))
            if on and (line.startswith("|") or line.startswith("## ")):
                print(line, end="")


if __name__ == "__main__":
    sys.exit(main())
