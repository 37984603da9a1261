#!/usr/bin/env python3
"""Writes <out>/link.md and <out>/link.png from one scripts/bench-link.sh run.

Reads --runs/meta.json (how the run was made) and --runs/runs.jsonl (one JSON line per run:
suite, transport, size, family, status ok|failed|not_built, and the figures the tool printed).
Every cell is the median of the family's passing runs with their min-max; ratios are
strix / libzmq of the medians. A configuration with failed runs says so; it never aborts the report.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess

from report_common import Cell as report_common_cell
from report_common import cpu_model, die, fmt_int, fmt_us, ratio, run_gnuplot

SIZES = [64, 256, 1024, 8192, 65536]
DR_SIZES = [64, 256, 1024]
LAT_SIZES = [64, 1024, 8192]
CURVE_SIZES = [64, 1024]
TRANSPORTS = ["tcp", "ipc", "inproc"]
FAMILIES = [("strix", "strix"), ("zmq", "libzmq")]


def size_label(size):
    return {64: "64 B", 1024: "1 KB", 8192: "8 KB", 65536: "64 KB"}.get(size, f"{size} B")


def build_targets(subscribers):
    """The ServerLink porting log's goals for strix::link: (label, suite, transport, size, metric, op, ratio).
    Ratios are strix / libzmq: throughput at least x, latency at most x; a ratio of None is a row
    shown without a target. PUB/SUB at 64 KB is held to the 64 KB target (copy-bound), PUB/SUB at
    64 B and fan-out to the PUB/SUB one."""
    t = [(f"64 B throughput, {tr}", "thr", tr, 64, "msg_s", ">=", 2.0) for tr in TRANSPORTS]
    t += [("PUB/SUB 64 B, tcp", "pubsub", "tcp", 64, "msg_s", ">=", 1.5),
          ("PUB/SUB 64 KB, tcp (the 64 KB target)", "pubsub", "tcp", 65536, "msg_s", ">=", 1.0)]
    t += [(f"fan-out to {subscribers} subscribers, {tr}", "fanout", tr, 64, "deliveries_s", ">=", 1.5)
          for tr in ("tcp", "inproc")]
    t += [(f"{size_label(s)} throughput, {tr}", "thr", tr, s, "msg_s", ">=", 1.2)
          for s in (1024, 8192) for tr in TRANSPORTS]
    t += [(f"64 KB throughput, {tr}", "thr", tr, 65536, "msg_s", ">=", 1.0) for tr in TRANSPORTS]
    # The link performance targets (the ASIO batching experiment's grid): DEALER -> ROUTER.
    t += [(f"DEALER/ROUTER {size_label(s)}, {tr}", "dr", tr, s, "msg_s", ">=", 2.0 if s == 64 else 1.5)
          for s in DR_SIZES for tr in TRANSPORTS]
    t += [(f"p50 round trip {size_label(s)}, {tr}", "lat", tr, s, "p50_us", "<=", 0.7)
          for tr in TRANSPORTS for s in LAT_SIZES]
    # The link performance targets: the blocking API against zmq_send/zmq_recv, both from application threads.
    t += [(f"blocking API 64 B throughput, {tr}", "bthr", tr, 64, "msg_s", ">=", 1.5) for tr in TRANSPORTS]
    t += [(f"blocking API p50 round trip 64 B, {tr}", "blat", tr, 64, "p50_us", "<=", 1.0) for tr in TRANSPORTS]
    # The link performance targets: CURVE against libzmq's CURVE, a throughput target only; the round
    # trip is shown beside it without one.
    t += [("CURVE 64 B throughput, tcp", "curve-thr", "tcp", 64, "msg_s", ">=", 1.5),
          ("CURVE p50 round trip 64 B, tcp", "curve-lat", "tcp", 64, "p50_us", "<=", None)]
    return t


class Cell(report_common_cell):
    """report_common.Cell with this report's marks: (min-max) and [failed runs]."""

    ranges = "()"
    failures = "[]"


def fmt_mb(v):
    return f"{v:,.2f}"


def fmt_ratio(r, a, b):
    if r is not None:
        return f"{r:.2f}x"
    if a.not_built:
        return "strix not built"
    return "n/a"


def load(runs_dir):
    meta_path = os.path.join(runs_dir, "meta.json")
    jsonl = os.path.join(runs_dir, "runs.jsonl")
    if not os.path.exists(meta_path) or not os.path.exists(jsonl):
        die(f"{runs_dir} lacks meta.json or runs.jsonl (run scripts/bench-link.sh)")
    with open(meta_path) as f:
        meta = json.load(f)
    rows = []
    with open(jsonl) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    die(f"{jsonl}:{n}: {e}")
    return meta, rows


def with_mb(rows):
    """Adds MB/s (msg/s x size / 10^6, decimal megabytes) to throughput rows."""
    for r in rows:
        if r.get("msg_s") is not None:
            r["mb_s"] = r["msg_s"] * r["size"] / 1e6
    return rows


class Data:
    def __init__(self, rows):
        self.rows = rows

    def select(self, suite, transport, size, family):
        return [r for r in self.rows if r["suite"] == suite and r["transport"] == transport
                and r["size"] == size and r["family"] == family]

    def cell(self, suite, transport, size, family, metric):
        return Cell(self.select(suite, transport, size, family), metric)

    def has(self, suite):
        return any(r["suite"] == suite for r in self.rows)


def family_table(lines, data, suite, transports, sizes, metric, fmt, lower_better=False):
    """The ServerLink porting log's shape: transport rows x size columns, one row per family and one for the ratio."""
    lines.append("| Transport | | " + " | ".join(size_label(s) for s in sizes) + " |")
    lines.append("|---|---|" + "---:|" * len(sizes))
    for tr in transports:
        cells = {fam: [data.cell(suite, tr, s, fam, metric) for s in sizes] for fam, _ in FAMILIES}
        for fam, name in FAMILIES:
            lines.append(f"| {tr} | {name} | " + " | ".join(c.text(fmt) for c in cells[fam]) + " |")
        rat = [fmt_ratio(ratio(a, b), a, b) for a, b in zip(cells["strix"], cells["zmq"])]
        label = "strix/libzmq (lower is better)" if lower_better else "strix/libzmq"
        lines.append(f"| {tr} | **{label}** | " + " | ".join(f"**{x}**" for x in rat) + " |")
    lines.append("")


def libzmq_version():
    try:
        res = subprocess.run(["pkg-config", "--modversion", "libzmq"], capture_output=True, text=True)
        return res.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def write_markdown(meta, data, out_md, targets):
    lines = []
    test_mode = meta["strix_prefix"] == meta["zmq_prefix"]
    dirty = (f" (the working tree had {meta['dirty_files']} modified tracked files)"
             if meta.get("dirty_files") else "")
    lines.append("# strix::link against libzmq (ServerLink porting log, ASIO batching experiment)")
    lines.append("")
    lines.append(f"Written by `scripts/bench-link.sh` on {meta['started']}, commit `{meta['commit']}`"
                 f"{dirty}. Each cell is the median of the family's passing runs "
                 f"({meta['runs']} per family and configuration) with their min-max in parentheses, "
                 "read from `link-runs/runs.jsonl`; ratios are strix / libzmq of the medians. The two "
                 "families ran alternately (strix, libzmq, strix, ...) in one run on one machine, so "
                 "drift hits both alike; absolute figures drift between runs.")
    lines.append("")
    if test_mode:
        lines.append(f"> **Test mode:** `STRIX_LINK_PREFIX={meta['strix_prefix']}` pointed the strix family "
                     "at the libzmq tools, so the 'strix' rows below are libzmq too (ratios near 1.0x show "
                     "the noise floor of this machine, not strix). Run without the override to compare.")
        lines.append("")
    if meta.get("missing"):
        lines.append(f"> **Not built:** `{meta['missing']}`; those strix cells say \"not built\" and only "
                     "libzmq was measured for them.")
        lines.append("")

    lines.append("## Machine")
    lines.append("")
    lines.append(f"- CPUs (nproc): {meta['nproc']}; CPU model: {cpu_model()}; kernel {platform.release()}")
    lines.append(f"- libzmq {libzmq_version()} (Debian's libzmq3-dev) for the zmq-* tools")
    lines.append(f"- Load average when the run started: {meta['loadavg_start']}")
    if meta["pin"]:
        lines.append("- Pinned (PIN=1): receiver on CPU 0, sender on CPU 1 (taskset); the one-process "
                     "runs (inproc, fan-out) are not pinned")
    else:
        lines.append(f"- Client and server share the {meta['nproc']} cores, not pinned (PIN=1 pins the "
                     "receiver to CPU 0 and the sender to CPU 1)")
    lines.append("")

    c = meta["counts"]
    lines.append("## Method")
    lines.append("")
    lines.append(f"Families: **strix** = `{meta['strix_prefix']}*`, **libzmq** = `{meta['zmq_prefix']}*` "
                 f"(bench/link/zmq/, on libzmq), both in `bin/`. Every process ran under "
                 f"`timeout {meta['timeout_s']}`; the receiver started first and the sender only once "
                 "its tcp port listened (ss) or its ipc socket existed. F is the family's prefix:")
    lines.append("")
    lines.append("```")
    lines.append("# throughput, tcp and ipc (receiver, then sender); pubsub adds --pattern pubsub to both")
    lines.append("F-local-thr tcp://127.0.0.1:PORT SIZE COUNT &  F-remote-thr tcp://127.0.0.1:PORT SIZE COUNT")
    lines.append("F-local-thr ipc:///tmp/strix-link-bench.XXXXXX/rN.sock SIZE COUNT &  F-remote-thr ipc://... SIZE COUNT")
    lines.append("F-inproc-thr SIZE COUNT")
    lines.append("# DEALER -> ROUTER (suite dr): the same three, with --pattern dealerrouter on each")
    lines.append("# latency")
    lines.append(f"F-local-lat tcp://127.0.0.1:PORT SIZE {meta['roundtrips']} &  F-remote-lat tcp://127.0.0.1:PORT SIZE {meta['roundtrips']}")
    lines.append(f"F-inproc-lat SIZE {meta['roundtrips']}")
    lines.append("# fan-out")
    lines.append(f"F-fanout tcp://127.0.0.1:PORT {meta['subscribers']} 64 {meta['fanout_count']}")
    lines.append(f"F-fanout inproc://strix-link-fanout {meta['subscribers']} 64 {meta['fanout_count']}")
    lines.append("# cross-runs: one family's sender (or REQ) against the other's receiver (or REP), tcp, 64 B")
    lines.append("# blocking API (suite blocking): F = strix-link-blocking or zmq-blocking, 64 B")
    lines.append(f"F-local-thr tcp://127.0.0.1:PORT 64 {meta.get('blocking_count', 300000)} &  "
                 f"F-remote-thr tcp://127.0.0.1:PORT 64 {meta.get('blocking_count', 300000)}   (and ipc, inproc-thr)")
    lines.append(f"F-local-lat tcp://127.0.0.1:PORT 64 {meta['roundtrips']} &  "
                 f"F-remote-lat tcp://127.0.0.1:PORT 64 {meta['roundtrips']}   (and ipc, inproc-lat)")
    cc = meta.get("curve_counts")
    if cc:
        lines.append("# CURVE over tcp (suite curve): L = strix or zmq, both halves in one process")
        lines.append(f"strix-link-curve-thr L 64 {cc['64']}   strix-link-curve-thr L 1024 {cc['1024']}")
        lines.append(f"strix-link-curve-lat L 64 {meta['roundtrips']}")
    lines.append("```")
    lines.append("")
    lines.append(f"Messages per throughput run (COUNT): 64 B: {c['64']:,}; 256 B: {c.get('256', 0):,}; "
                 f"1 KB: {c['1024']:,}; "
                 f"8 KB: {c['8192']:,}; 64 KB: {c['65536']:,} (LINK_COUNT_<size>). Round trips per latency "
                 f"run: {meta['roundtrips']:,}. Fan-out: {meta['fanout_count']:,} messages to "
                 f"{meta['subscribers']} subscribers. Suites run: {meta['suites']}.")
    lines.append("")
    lines.append("Throughput is the receiver's count over the time from its first message to its last "
                 "(libzmq's local_thr clock); MB/s = msg/s x size / 10^6. Every message carries its "
                 "sequence number (message 0 the marker that turns the check on) and every receiver "
                 "checks size, count and order, so a lossy run fails rather than scores. Latency: each round trip timed alone on the REQ side; p50 and p99 "
                 "are nearest-rank percentiles of the whole round trips (libzmq's 'average latency', "
                 "half a round trip, is in the JSON). PUB/SUB and fan-out use HWM 0 on both sides and "
                 "the publisher waits for every subscription before sending.")
    lines.append("")
    lines.append(f"Link tests (`ctest --test-dir BUILD -N -L link`): {meta['tests_line']}")
    lines.append("")

    if data.has("thr"):
        lines += ["## Throughput, PUSH/PULL (msg/s)", ""]
        family_table(lines, data, "thr", TRANSPORTS, SIZES, "msg_s", fmt_int)
        lines += ["## Bandwidth, PUSH/PULL (MB/s)", ""]
        family_table(lines, data, "thr", TRANSPORTS, SIZES, "mb_s", fmt_mb)
    if data.has("dr"):
        lines += ["## Throughput, DEALER -> ROUTER (msg/s)", "",
                  "The ROUTER receives [identity, message] and checks the message part.", ""]
        family_table(lines, data, "dr", TRANSPORTS, DR_SIZES, "msg_s", fmt_int)
    if data.has("pubsub"):
        lines += ["## PUB/SUB throughput (msg/s), XPUB -> SUB, HWM 0", ""]
        family_table(lines, data, "pubsub", ["tcp"], [64, 65536], "msg_s", fmt_int)
        lines += ["PUB/SUB bandwidth (MB/s):", ""]
        family_table(lines, data, "pubsub", ["tcp"], [64, 65536], "mb_s", fmt_mb)
    if data.has("fanout"):
        lines.append(f"## Fan-out: one publisher, {meta['subscribers']} subscribers, 64 B")
        lines.append("")
        lines.append("Published messages per second and deliveries (messages x subscribers) per second, "
                     "from the first send to the last subscriber's last message; one process.")
        lines.append("")
        lines.append("| Transport | | published msg/s | deliveries/s |")
        lines.append("|---|---|---:|---:|")
        for tr in ("tcp", "inproc"):
            m = {fam: data.cell("fanout", tr, 64, fam, "msg_s") for fam, _ in FAMILIES}
            d = {fam: data.cell("fanout", tr, 64, fam, "deliveries_s") for fam, _ in FAMILIES}
            for fam, name in FAMILIES:
                lines.append(f"| {tr} | {name} | {m[fam].text(fmt_int)} | {d[fam].text(fmt_int)} |")
            lines.append(f"| {tr} | **strix/libzmq** | **{fmt_ratio(ratio(m['strix'], m['zmq']), m['strix'], m['zmq'])}** "
                         f"| **{fmt_ratio(ratio(d['strix'], d['zmq']), d['strix'], d['zmq'])}** |")
        lines.append("")
    if data.has("lat"):
        lines.append(f"## Latency: p50 round trip (µs), REQ/REP, {meta['roundtrips']:,} round trips")
        lines.append("")
        family_table(lines, data, "lat", TRANSPORTS, LAT_SIZES, "p50_us", fmt_us, lower_better=True)
        write_floor(lines, data)
        lines.append("## Latency: p99 round trip (µs)")
        lines.append("")
        family_table(lines, data, "lat", TRANSPORTS, LAT_SIZES, "p99_us", fmt_us, lower_better=True)
    if data.has("cross-thr") or data.has("cross-lat"):
        write_cross(lines, data)
    if data.has("bthr") or data.has("blat"):
        write_blocking(lines, meta, data)
    if data.has("curve-thr") or data.has("curve-lat"):
        write_curve(lines, meta, data)
    write_targets(lines, data, targets)
    write_failures(lines, data)
    lines.append("![strix / libzmq ratios per configuration](link.png)")
    lines.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(lines))


def write_floor(lines, data):
    """The floor under both libraries' round trips at 64 B (family 'floor')."""
    rows = []
    for tr in TRANSPORTS:
        floor = data.cell("lat", tr, 64, "floor", "p50_us")
        if floor.median is None:
            continue
        cells = [data.cell("lat", tr, 64, fam, "p50_us") for fam, _ in FAMILIES]
        above = [f"{fmt_us(c.median)} ({c.median / floor.median:.2f}x)" if c.median is not None else "-" for c in cells]
        rows.append(f"| {tr} | {floor.text(fmt_us)} | " + " | ".join(above) + " |")
    if not rows:
        return
    lines.append("**The floor at 64 B** (`wake-floor-lat`, no messaging library): two threads of one process, "
                 "pinned to two different CPUs, pass the message back and forth over the transport (inproc: a "
                 "token through eventfds), each sleeping until the other writes. The round trips above do that "
                 "and more, so a ratio between the libraries goes towards 1 where the floor is most of both. "
                 "p50 µs, and each library's p50 as a multiple of the floor:")
    lines.append("")
    lines.append("| transport | floor | " + " | ".join(name for _, name in FAMILIES) + " |")
    lines.append("|---|---:|" + "---:|" * len(FAMILIES))
    lines.extend(rows)
    lines.append("")


def write_cross(lines, data):
    """The 2 x 2 matrices: sender (or requester) family by receiver (or replier) family."""
    lines.append("## Cross-runs, tcp, 64 B (interop, and which side limits)")
    lines.append("")
    lines.append("Each family's sender against each family's receiver. The diagonal is the same "
                 "family's own run (from the tables above, same configuration); the off-diagonal "
                 "cells are the cross-runs. If a row stays flat across receivers the sender limits; "
                 "if a column stays flat the receiver does.")
    lines.append("")
    same = {"strix": "strix", "zmq": "zmq"}
    names = dict(FAMILIES)
    for suite, own, metric, fmt, title in (
            ("cross-thr", "thr", "msg_s", fmt_int, "Throughput (msg/s): sender \\ receiver"),
            ("cross-lat", "lat", "p50_us", fmt_us, "p50 round trip (µs): requester (REQ) \\ replier (REP)")):
        if not data.has(suite):
            continue
        lines.append(f"{title}:")
        lines.append("")
        lines.append("| | " + " | ".join(f"{names[f]} receiver" if suite == "cross-thr" else f"{names[f]} REP"
                                         for f in same) + " |")
        lines.append("|---|---:|---:|")
        for s in same:
            cells = []
            for r in same:
                if s == r:
                    c = data.cell(own, "tcp", 64, s, metric)
                else:
                    c = data.cell(suite, "tcp", 64, f"{s}->{r}", metric)
                cells.append(c.text(fmt))
            who = "sender" if suite == "cross-thr" else "REQ"
            lines.append(f"| {names[s]} {who} | " + " | ".join(cells) + " |")
        lines.append("")
    cross_rows = [r for r in data.rows if r["suite"] in ("cross-thr", "cross-lat") and r["status"] != "not_built"]
    ok = sum(1 for r in cross_rows if r["status"] == "ok")
    if cross_rows:
        lines.append(f"Interop: {ok} of {len(cross_rows)} cross-runs passed (every message's size, count "
                     "and order checked by the receiving family).")
    else:
        lines.append("Interop: no cross-runs (strix not built).")
    lines.append("")


def write_blocking(lines, meta, data):
    """The blocking-API family: throughput and round trips with both libraries called from
    application threads."""
    lines.append("## Blocking API: both libraries called from application threads, 64 B")
    lines.append("")
    lines.append("strix: `blocking_socket::send`/`recv` (`strix-link-blocking-*`: each call goes through "
                 "the socket's shard, one shard per process); libzmq: `zmq_send`/`zmq_recv` "
                 "(`zmq-blocking-*`, one I/O thread per process). PUSH/PULL throughput over "
                 f"{meta.get('blocking_count', 300000):,} messages, REQ/REP round trips over "
                 f"{meta['roundtrips']:,}; inproc runs both halves in one process on two application "
                 "threads. Client and server processes share the machine's cores.")
    lines.append("")
    lines.append("| Transport | | msg/s | p50 round trip (µs) | p99 round trip (µs) |")
    lines.append("|---|---|---:|---:|---:|")
    for tr in TRANSPORTS:
        thr = {fam: data.cell("bthr", tr, 64, fam, "msg_s") for fam, _ in FAMILIES}
        p50 = {fam: data.cell("blat", tr, 64, fam, "p50_us") for fam, _ in FAMILIES}
        p99 = {fam: data.cell("blat", tr, 64, fam, "p99_us") for fam, _ in FAMILIES}
        for fam, name in FAMILIES:
            lines.append(f"| {tr} | {name} | {thr[fam].text(fmt_int)} | {p50[fam].text(fmt_us)} "
                         f"| {p99[fam].text(fmt_us)} |")
        r = [fmt_ratio(ratio(c["strix"], c["zmq"]), c["strix"], c["zmq"]) for c in (thr, p50, p99)]
        lines.append(f"| {tr} | **strix/libzmq** | **{r[0]}** | **{r[1]}** (lower is better) "
                     f"| **{r[2]}** (lower is better) |")
    lines.append("")


def write_curve(lines, meta, data):
    """CURVE against libzmq's CURVE over tcp: throughput at 64 B and 1 KB, round trips at 64 B."""
    cc = meta.get("curve_counts", {})
    lines.append("## CURVE (tcp)")
    lines.append("")
    lines.append("Both libraries with CURVE (a fresh server and client key pair per run, every message "
                 "boxed), each tool running its two halves in one process over tcp loopback "
                 "(bench/link/curve): strix on two shards (server on shard 0, client on shard 1), "
                 "libzmq on two application threads with a context of one I/O thread each. "
                 "`strix-link-curve-thr` sends PUSH -> PULL "
                 f"({cc.get('64', 0):,} messages at 64 B, {cc.get('1024', 0):,} at 1 KB; "
                 "LINK_CURVE_COUNT_<size>); `strix-link-curve-lat` makes "
                 f"{meta['roundtrips']:,} REQ/REP round trips at 64 B. Every message's size and "
                 "sequence number is checked.")
    lines.append("")
    if data.has("curve-thr"):
        lines.append("Throughput (msg/s):")
        lines.append("")
        family_table(lines, data, "curve-thr", ["tcp"], CURVE_SIZES, "msg_s", fmt_int)
    if data.has("curve-lat"):
        lines.append("Round trip, 64 B (µs):")
        lines.append("")
        lines.append("| Transport | | p50 round trip (µs) | p99 round trip (µs) |")
        lines.append("|---|---|---:|---:|")
        p50 = {fam: data.cell("curve-lat", "tcp", 64, fam, "p50_us") for fam, _ in FAMILIES}
        p99 = {fam: data.cell("curve-lat", "tcp", 64, fam, "p99_us") for fam, _ in FAMILIES}
        for fam, name in FAMILIES:
            lines.append(f"| tcp | {name} | {p50[fam].text(fmt_us)} | {p99[fam].text(fmt_us)} |")
        r = [fmt_ratio(ratio(c["strix"], c["zmq"]), c["strix"], c["zmq"]) for c in (p50, p99)]
        lines.append(f"| tcp | **strix/libzmq (lower is better)** | **{r[0]}** | **{r[1]}** |")
        lines.append("")


def write_targets(lines, data, targets):
    lines.append("## Targets")
    lines.append("")
    lines.append("| target | strix | libzmq | strix/libzmq | required | status |")
    lines.append("|---|---:|---:|---:|---:|---|")
    for label, suite, tr, size, metric, op, x in targets:
        if not data.has(suite):
            continue
        a = data.cell(suite, tr, size, "strix", metric)
        b = data.cell(suite, tr, size, "zmq", metric)
        fmt = fmt_us if metric.endswith("_us") else fmt_int
        r = ratio(a, b)
        if a.not_built:
            status = "not built"
        elif r is None:
            status = "no data (runs failed)"
        elif x is None:
            status = "(no target)"
        else:
            met = r >= x if op == ">=" else r <= x
            status = "met" if met else "NOT met"
            failed = len(a.failed) + len(b.failed)
            if failed:
                status += f" ({failed} runs failed)"
        lines.append(f"| {label} | {fmt(a.median) if a.median is not None else '-'} "
                     f"| {fmt(b.median) if b.median is not None else '-'} "
                     f"| {f'{r:.2f}x' if r is not None else '-'} | {f'{op} {x}x' if x is not None else '(no target)'} "
                     f"| {status} |")
    lines.append("")


def write_failures(lines, data):
    failed = [r for r in data.rows if r["status"] == "failed"]
    if not failed:
        lines.append("All runs passed.")
        lines.append("")
        return
    lines.append(f"## Failed runs ({len(failed)})")
    lines.append("")
    lines.append("| suite | transport | size | family | run | why | log |")
    lines.append("|---|---|---:|---|---:|---|---|")
    for r in failed:
        why = r["why"].replace("|", "\\|")
        lines.append(f"| {r['suite']} | {r['transport']} | {r['size']} | {r['family']} | {r['run']} "
                     f"| {why} | `link-runs/{r['log']}.*` |")
    lines.append("")


def short_label(suite, tr, size):
    base = {"thr": "", "lat": "", "dr": "dealer/router ", "pubsub": "pubsub ", "fanout": "fan-out ", "bthr": "blocking ", "blat": "blocking ",
            "curve-thr": "CURVE ", "curve-lat": "CURVE "}[suite]
    return f"{base}{tr} {size_label(size).replace(' ', '')}"


def write_plot(meta, data, out_dir):
    if not shutil.which("gnuplot"):
        die("gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)")
    thr_cfgs = [("thr", tr, s) for tr in TRANSPORTS for s in SIZES]
    thr_cfgs += [("dr", tr, s) for tr in TRANSPORTS for s in DR_SIZES]
    thr_cfgs += [("pubsub", "tcp", 64), ("pubsub", "tcp", 65536), ("fanout", "tcp", 64), ("fanout", "inproc", 64)]
    thr_cfgs += [("bthr", tr, 64) for tr in TRANSPORTS]
    thr_cfgs += [("curve-thr", "tcp", s) for s in CURVE_SIZES]
    thr_cfgs = [c for c in thr_cfgs if data.select(c[0], c[1], c[2], "zmq")]
    lat_cfgs = [("lat", tr, s) for tr in TRANSPORTS for s in LAT_SIZES]
    lat_cfgs += [("blat", tr, 64) for tr in TRANSPORTS]
    lat_cfgs += [("curve-lat", "tcp", 64)]
    lat_cfgs = [c for c in lat_cfgs if data.select(c[0], c[1], c[2], "zmq")]
    targets = {(t[1], t[2], t[3]): t[6] for t in build_targets(meta["subscribers"]) if t[6] is not None}

    def ratio_of(cfg, metric):
        return ratio(data.cell(*cfg, "strix", metric), data.cell(*cfg, "zmq", metric))

    have_ratio = any(ratio_of(c, "msg_s") is not None for c in thr_cfgs) or \
        any(ratio_of(c, "p50_us") is not None for c in lat_cfgs)
    dat1 = os.path.join(out_dir, "link-plot-thr.dat")
    dat2 = os.path.join(out_dir, "link-plot-lat.dat")

    def num(v):
        return "?" if v is None else f"{v:.6g}"

    tops = {}  # data file -> the highest value or target in it (the y range leaves room for the key)
    with open(dat1, "w") as f:
        for c in thr_cfgs:
            if have_ratio:
                v = ratio_of(c, "msg_s")
            else:
                v = data.cell(*c, "zmq", "msg_s").median
            f.write(f"\"{short_label(*c)}\" {num(v)} {num(targets.get(c))}\n")
            tops[dat1] = max([tops.get(dat1, 0), v or 0] + ([targets[c]] if have_ratio and c in targets else []))
    with open(dat2, "w") as f:
        for c in lat_cfgs:
            v = ratio_of(c, "p50_us") if have_ratio else data.cell(*c, "zmq", "p50_us").median
            f.write(f"\"{short_label(*c)}\" {num(v)} {num(targets.get(c))}\n")
            tops[dat2] = max([tops.get(dat2, 0), v or 0] + ([targets[c]] if have_ratio and c in targets else []))
    png = os.path.join(out_dir, "link.png")
    test_mode = " (TEST MODE: both families are libzmq)" if meta["strix_prefix"] == meta["zmq_prefix"] else ""
    if have_ratio:
        title = f"strix::link vs libzmq, medians of {meta['runs']} runs{test_mode}"
        y1 = "strix / libzmq msg/s (higher is better)"
        y2 = "strix / libzmq p50 round trip (lower is better)"
        scale1 = f"unset logscale y\nset yrange [0:{max(tops.get(dat1, 1), 1) * 1.3:.3f}]"
        scale2 = f"unset logscale y\nset yrange [0:{max(tops.get(dat2, 1), 1) * 1.3:.3f}]"
        parity = ", 1 with lines dt 2 lc rgb 'gray40' title 'parity'"
        tgt = ", '{dat}' using 0:3 with points pt 6 ps 2 lw 2 lc rgb 'red' title 'target'"
    else:
        title = "libzmq alone (strix-link-* not built)"
        y1 = "libzmq msg/s (median)"
        y2 = "libzmq p50 round trip, us (median)"
        scale1 = f"set logscale y\nset yrange [*:{max(tops.get(dat1, 1), 1) * 10:.0f}]"
        scale2 = f"unset logscale y\nset yrange [0:{max(tops.get(dat2, 1), 1) * 1.3:.3f}]"
        parity = ""
        tgt = ""
    plots = []
    for dat, ylabel, scale, head in ((dat1, y1, scale1, "throughput"), (dat2, y2, scale2, "p50 round trip")):
        if os.path.getsize(dat) == 0:
            continue
        plots.append(f"""
set ylabel "{ylabel}"
{scale}
plot '{dat}' using 0:2:xtic(1) with boxes lc rgb '#3070b0' title '{head}'{tgt.format(dat=dat)}{parity}
""")
    if not plots:
        die("no libzmq figures to plot (every run failed?)")
    script = f"""
set datafile missing '?'
set style fill solid 0.7 border -1
set boxwidth 0.6
set grid ytics
set xtics rotate by -35 left
set key top right horizontal
set offsets 0.5, 0.5, 0, 0
set rmargin 8
set multiplot layout {len(plots)},1 title "{title}"
{''.join(plots)}
unset multiplot
"""
    why = run_gnuplot(script, png, 1100, 820)
    if why:
        die(why)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True, help="the link-runs directory of one bench-link.sh run")
    ap.add_argument("--out", required=True, help="where link.md and link.png go")
    args = ap.parse_args()
    meta, rows = load(args.runs)
    data = Data(with_mb(rows))
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "link.md")
    write_markdown(meta, data, out_md, build_targets(meta["subscribers"]))
    write_plot(meta, data, args.out)
    print(f"link_report: wrote {out_md} and {os.path.join(args.out, 'link.png')}")
    with open(out_md) as f:
        section = None
        for line in f:
            if line.startswith("## "):
                section = line
            if section and section.startswith("## Targets") and line.strip():
                print(line, end="")


if __name__ == "__main__":
    main()
