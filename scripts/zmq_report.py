#!/usr/bin/env python3
"""Writes <out>/zmq.md from one scripts/bench-zmq.sh run: strix's libzmq.so.5 against libzmq.

Reads --runs/meta.json (how the run was made) and --runs/runs.jsonl (one JSON line per run:
suite, transport, size, family, status ok|failed|not_built, and what the program printed).
Every cell is the median of the family's passing runs with [min-max]; ratios are strix / libzmq
of the medians. A configuration with failed runs says so; it never aborts the report.
"""
import argparse
import ctypes
import json
import os
import platform

from report_common import Cell, cpu_model, die, fmt_int, fmt_us, ratio

TRANSPORTS = ["tcp", "ipc", "inproc"]
PROGRAMS = {  # (suite, transport kind) -> the programs that ran
    ("thr", "net"): "local_thr + remote_thr", ("thr", "inproc"): "inproc_thr",
    ("lat", "net"): "local_lat + remote_lat", ("lat", "inproc"): "inproc_lat",
    ("rtt", "net"): "local_lat + zmq_rtt", ("rtt", "inproc"): "zmq_rtt (REP thread)",
}


def size_label(size):
    return {64: "64 B", 1024: "1 KB", 65536: "64 KB"}.get(size, f"{size} B")





def fmt_ratio(a, b):
    r = ratio(a, b)
    if r is not None:
        return f"{r:.2f}x"
    return "not built" if a.not_built else "n/a"


class Data:
    def __init__(self, rows):
        self.rows = rows

    def cell(self, suite, transport, size, family, metric):
        return Cell([r for r in self.rows if r["suite"] == suite and r["transport"] == transport
                     and r["size"] == size and r["family"] == family], metric)

    def has(self, suite, family=None):
        return any(r["suite"] == suite and (family is None or r["family"] == family) for r in self.rows)

    def sizes(self, suite):
        return sorted({r["size"] for r in self.rows if r["suite"] == suite})


def load(runs_dir):
    meta_path = os.path.join(runs_dir, "meta.json")
    jsonl = os.path.join(runs_dir, "runs.jsonl")
    if not os.path.exists(meta_path) or not os.path.exists(jsonl):
        die(f"{runs_dir} lacks meta.json or runs.jsonl (run scripts/bench-zmq.sh)")
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


def zmq_version(path):
    """zmq_version() of the library at path, as "4.3.4", or "unknown"."""
    try:
        lib = ctypes.CDLL(path)
        v = [ctypes.c_int(), ctypes.c_int(), ctypes.c_int()]
        lib.zmq_version(*(ctypes.byref(x) for x in v))
        return ".".join(str(x.value) for x in v)
    except (OSError, AttributeError):
        return "unknown"


def targets(data):
    """The goals for strix's libzmq.so.5: (label, suite, transport, size, metric, op, ratio)."""
    t = [(f"{tr} 64 B throughput (perf {PROGRAMS[('thr', 'inproc' if tr == 'inproc' else 'net')]})",
          "thr", tr, 64, "msg_s", ">=", 1.5) for tr in TRANSPORTS]
    t += [(f"p50 round trip {size_label(s)}, {tr} (zmq_rtt)", "rtt", tr, s, "p50_us", "<=", 1.0)
          for tr in TRANSPORTS for s in data.sizes("rtt")]
    t += [("pyzmq PUSH/PULL 64 B throughput, tcp", "py-thr", "tcp", 64, "msg_s", ">=", 1.2)]
    return [x for x in t if data.has(x[1])]


def family_rows(lines, data, suite, metric, fmt, lower_better=False):
    """Rows = transport x size x program; columns = libzmq, strix, strix/libzmq."""
    note = " (lower is better)" if lower_better else ""
    lines.append(f"| transport | size | program | libzmq | strix | strix/libzmq{note} |")
    lines.append("|---|---|---|---:|---:|---:|")
    for tr in TRANSPORTS:
        for s in data.sizes(suite):
            a = data.cell(suite, tr, s, "strix", metric)
            b = data.cell(suite, tr, s, "libzmq", metric)
            if not a.rows and not b.rows:
                continue
            prog = PROGRAMS[(suite, "inproc" if tr == "inproc" else "net")]
            lines.append(f"| {tr} | {size_label(s)} | {prog} | {b.text(fmt)} | {a.text(fmt)} | **{fmt_ratio(a, b)}** |")
    lines.append("")


def write_header(lines, meta):
    dirty = (f" (the working tree had {meta['dirty_files']} modified tracked files)"
             if meta.get("dirty_files") else "")
    lines.append("# strix's libzmq.so.5 against libzmq: libzmq's own perf programs")
    lines.append("")
    lines.append(f"Written by `scripts/bench-zmq.sh` on {meta['started']}, commit `{meta['commit']}`{dirty}. "
                 f"Command: `{meta['command']}` (`make bench-zmq`). Each cell is the median of the family's "
                 f"passing runs ({meta['runs']} per family and configuration) with [min-max], read from "
                 "`zmq-runs/runs.jsonl`; ratios are strix / libzmq of the medians. The families ran in turn "
                 "for every configuration (the order rotating with the repetition) in one run on one "
                 "machine, so drift hits both alike; absolute figures drift between runs.")
    lines.append("")
    if meta.get("test_mode"):
        lines.append("> **Method check:** both families loaded the same library "
                     f"(`{meta['libzmq_lib']}`: `ZMQ_STRIX_PREFIX={meta['strix_prefix']}`), so every "
                     "'strix' column below is libzmq too, and every ratio shows only this machine's noise "
                     "(it should be near 1.00x).")
        lines.append("")
    for m in meta.get("missing", []):
        lines.append(f"> **Not built:** {m}; those cells say \"not built\".")
        lines.append("")


def write_machine(lines, meta):
    lines.append("## Machine and placement")
    lines.append("")
    lines.append(f"- CPUs (nproc): {meta['nproc']} (allowed: {meta['cpus_allowed']}); CPU model: {cpu_model()}; "
                 f"kernel {platform.release()}; load average when the run started: {meta['loadavg_start']}")
    lines.append(f"- libzmq: `{meta['libzmq_lib']}` (zmq_version {zmq_version(meta['libzmq_lib'])}), "
                 f"prefix `{meta['libzmq_prefix']}`")
    if meta.get("strix_lib"):
        lines.append(f"- strix: `{meta['strix_lib']}` (zmq_version {zmq_version(meta['strix_lib'])}), "
                     f"prefix `{meta['strix_prefix']}`")
    else:
        lines.append(f"- strix: not built (`{meta['strix_prefix']}/lib/libzmq.so.5` missing)")
    if meta["pin"]:
        lines.append(f"- Placement (PIN=1, the default): client and server on the same {meta['nproc']} vCPUs, one "
                     f"each: in two-process runs the receiver (local_thr, local_lat, the pyzmq receiver) under "
                     f"`{meta.get('pin_recv', 'taskset -c 0')}` and the sender (remote_thr, remote_lat, zmq_rtt, the "
                     f"pyzmq sender) under `{meta.get('pin_send', 'taskset -c 1')}`, each process with all its "
                     "threads (application and I/O) on its vCPU; inproc runs are one process with its threads "
                     "on both vCPUs, not pinned. Unpinned, where the scheduler put the two processes decided more "
                     "than the library did (see the method check)")
    else:
        lines.append(f"- Placement (PIN=0): client and server processes on the same {meta['nproc']} vCPUs, not "
                     "pinned: the scheduler places them, run by run; inproc runs are one process")
    lines.append("")


def write_method(lines, meta):
    c, ic = meta["counts"], meta["inproc_counts"]
    lines.append("## Method")
    lines.append("")
    lines.append("libzmq's perf programs (perf/local_thr.cpp, remote_thr, local_lat, remote_lat, inproc_thr, "
                 "inproc_lat) from Debian's source package zeromq3_4.3.4.orig.tar.gz (sha256 pinned), "
                 "unchanged, compiled twice by scripts/zmq-perf-build.sh: against each library's own zmq.h and "
                 "linked to its libzmq.so.5 (ldd checked). zmq_rtt (bench/zmq_abi/zmq_rtt.c, ours) is built "
                 "the same two ways. Every process ran under `timeout "
                 f"{meta['timeout_s']}`; the receiver started first and the sender once its tcp port listened "
                 "or its ipc socket existed; a run passes when both exit 0 and the printing side reports the "
                 f"count asked for. A receiver still running {meta.get('grace_s', 5)} s after its sender exited is "
                 "killed (its last messages were lost). "
                 + ("A failed run is listed below with why and made once more; medians are of the passing runs. "
                    if meta.get("reruns", 0) else "")
                 + "L is a family's build directory:")
    lines.append("")
    lines.append("```")
    lines.append("L/local_thr tcp://127.0.0.1:PORT SIZE COUNT &  L/remote_thr tcp://127.0.0.1:PORT SIZE COUNT")
    lines.append("L/local_thr ipc:///tmp/strix-zmq-bench.XXXXXX/rN.sock SIZE COUNT &  L/remote_thr ipc://... SIZE COUNT")
    lines.append("L/inproc_thr SIZE COUNT")
    lines.append("L/local_lat tcp://127.0.0.1:PORT SIZE ROUNDTRIPS &  L/remote_lat tcp://127.0.0.1:PORT SIZE ROUNDTRIPS   (and ipc)")
    lines.append("L/inproc_lat SIZE ROUNDTRIPS")
    lines.append("L/local_lat tcp://127.0.0.1:PORT SIZE ROUNDTRIPS &  L/zmq_rtt tcp://127.0.0.1:PORT SIZE ROUNDTRIPS   (and ipc)")
    lines.append("L/zmq_rtt inproc://strix-zmq-rtt SIZE ROUNDTRIPS")
    lines.append("# cross: S/remote_thr -> R/local_thr and S/remote_lat -> R/local_lat, tcp, 64 B, S != R")
    lines.append("# pyzmq (PY = the family's venv python, pyzmq built against that library by scripts/pyzmq-venv.sh)")
    lines.append(f"PY pyzmq_thr.py recv tcp://127.0.0.1:PORT 64 {meta['py_count']} &  PY pyzmq_thr.py send tcp://... 64 {meta['py_count']}")
    lines.append(f"PY pyzmq_lat.py rep tcp://127.0.0.1:PORT 64 {meta['py_roundtrips']} &  PY pyzmq_lat.py req tcp://... 64 {meta['py_roundtrips']}")
    lines.append("```")
    lines.append("")
    lines.append("COUNT per throughput run, tcp and ipc: " + ", ".join(f"{size_label(int(s))}: {v:,}" for s, v in c.items())
                 + "; inproc: " + ", ".join(f"{size_label(int(s))}: {v:,}" for s, v in ic.items())
                 + f" (ZMQ_COUNT_<size>, ZMQ_INPROC_COUNT_<size>). ROUNDTRIPS: {meta['roundtrips']:,} over tcp and "
                 f"ipc, {meta['inproc_roundtrips']:,} over inproc. Suites: {meta['suites']}.")
    lines.append("")
    lines.append("What the figures are: **throughput** is local_thr's (and inproc_thr's) count over the time from "
                 "the first message received to the last. **Average latency** is what remote_lat and inproc_lat "
                 "print: the time of all round trips divided by twice their number, i.e. half the mean round "
                 "trip; the programs print no percentile. **p50 and p99 round trip** come from a separate run "
                 "of zmq_rtt, our REQ client timing each round trip alone against libzmq's local_lat of the "
                 "same build (inproc: a REP thread in its own process): whole round trips, nearest-rank.")
    lines.append("")


def write_tables(lines, meta, data):
    if data.has("thr"):
        lines += ["## Throughput, PUSH/PULL (msg/s)", ""]
        family_rows(lines, data, "thr", "msg_s", fmt_int)
    if data.has("lat"):
        lines += ["## Average latency as perf/remote_lat prints it (µs, half the mean round trip)", ""]
        family_rows(lines, data, "lat", "avg_us", fmt_us, lower_better=True)
    if data.has("rtt"):
        lines += ["## Round trip, REQ/REP, p50 (µs, zmq_rtt)", ""]
        family_rows(lines, data, "rtt", "p50_us", fmt_us, lower_better=True)
        lines += ["## Round trip, REQ/REP, p99 (µs, zmq_rtt)", ""]
        family_rows(lines, data, "rtt", "p99_us", fmt_us, lower_better=True)
    if data.has("cross-thr") or data.has("cross-lat"):
        write_cross(lines, data)
    if data.has("py-thr") or data.has("py-lat"):
        write_py(lines, meta, data)
    if data.has("thr", "control") or data.has("rtt", "control"):
        write_control(lines, data)


def write_cross(lines, data):
    lines.append("## Cross-library pairs, tcp, 64 B (interop under load)")
    lines.append("")
    lines.append("One library's sender (remote_thr, or remote_lat as REQ) against the other's receiver "
                 "(local_thr, or local_lat as REP). The same-library cells are the thr and lat runs above.")
    lines.append("")
    for suite, own, metric, fmt, title, who in (
            ("cross-thr", "thr", "msg_s", fmt_int, "Throughput (msg/s)", ("sender", "receiver")),
            ("cross-lat", "lat", "avg_us", fmt_us, "Average latency (µs, as remote_lat prints it)", ("REQ", "REP"))):
        if not data.has(suite):
            continue
        lines.append(f"{title}, {who[0]} \\ {who[1]}:")
        lines.append("")
        lines.append(f"| | libzmq {who[1]} | strix {who[1]} |")
        lines.append("|---|---:|---:|")
        for s in ("libzmq", "strix"):
            cells = [data.cell(own, "tcp", 64, s, metric) if s == r else data.cell(suite, "tcp", 64, f"{s}->{r}", metric)
                     for r in ("libzmq", "strix")]
            lines.append(f"| {s} {who[0]} | " + " | ".join(c.text(fmt) for c in cells) + " |")
        lines.append("")
    rows = [r for r in data.rows if r["suite"] in ("cross-thr", "cross-lat") and r["status"] != "not_built"]
    ok = sum(1 for r in rows if r["status"] == "ok")
    lines.append(f"Interop: {ok} of {len(rows)} cross-library runs passed (every count and message size checked "
                 "by the programs)." if rows else "Interop: no cross-library runs (strix not built).")
    lines.append("")


def write_py(lines, meta, data):
    lines.append("## pyzmq on each library, tcp, 64 B")
    lines.append("")
    lines.append(f"pyzmq built from its sdist against each library (scripts/pyzmq-venv.sh), the same scripts: "
                 f"bench/zmq_abi/pyzmq_thr.py ({meta['py_count']:,} messages PUSH -> PULL, timed as local_thr) "
                 f"and pyzmq_lat.py ({meta['py_roundtrips']:,} REQ/REP round trips, each timed alone). Both "
                 "sides print the libzmq they loaded; a run on the other library fails.")
    lines.append("")
    lines.append("| measure | libzmq | strix | strix/libzmq |")
    lines.append("|---|---:|---:|---:|")
    for label, suite, metric, fmt in (("PUSH/PULL msg/s", "py-thr", "msg_s", fmt_int),
                                      ("REQ/REP p50 round trip (µs, lower is better)", "py-lat", "p50_us", fmt_us),
                                      ("REQ/REP p99 round trip (µs, lower is better)", "py-lat", "p99_us", fmt_us)):
        a, b = data.cell(suite, "tcp", 64, "strix", metric), data.cell(suite, "tcp", 64, "libzmq", metric)
        if a.rows or b.rows:
            lines.append(f"| {label} | {b.text(fmt)} | {a.text(fmt)} | **{fmt_ratio(a, b)}** |")
    lines.append("")


def write_control(lines, data):
    lines.append("## Method check: libzmq against itself")
    lines.append("")
    lines.append("The libzmq build measured a second time as a third family (\"libzmq again\"), in turn with "
                 "the other two: the ratio of two identical programs, i.e. what this machine's noise alone "
                 "makes of a ratio.")
    lines.append("")
    lines.append("| configuration | libzmq | libzmq again | again/libzmq |")
    lines.append("|---|---:|---:|---:|")
    for suite, tr, metric, fmt, label in [("thr", tr, "msg_s", fmt_int, f"{tr} 64 B throughput (msg/s)") for tr in TRANSPORTS] + \
            [("rtt", tr, "p50_us", fmt_us, f"{tr} 64 B p50 round trip (µs)") for tr in TRANSPORTS]:
        a, b = data.cell(suite, tr, 64, "control", metric), data.cell(suite, tr, 64, "libzmq", metric)
        if a.rows:
            lines.append(f"| {label} | {b.text(fmt)} | {a.text(fmt)} | {fmt_ratio(a, b)} |")
    lines.append("")


def write_targets(lines, data):
    lines.append("## Summary: targets")
    lines.append("")
    lines.append("| target | libzmq | strix | strix/libzmq | required | status |")
    lines.append("|---|---:|---:|---:|---:|---|")
    for label, suite, tr, size, metric, op, x in targets(data):
        a = data.cell(suite, tr, size, "strix", metric)
        b = data.cell(suite, tr, size, "libzmq", metric)
        fmt = fmt_us if metric.endswith("_us") else fmt_int
        r = ratio(a, b)
        if a.not_built:
            status = "not built"
        elif r is None:
            status = "no data (runs failed)"
        else:
            status = "met" if (r >= x if op == ">=" else r <= x) else "NOT met"
            failed = len(a.failed) + len(b.failed)
            if failed:
                status += f" ({failed} runs failed)"
        lines.append(f"| {label} | {fmt(b.median) if b.median is not None else '-'} "
                     f"| {fmt(a.median) if a.median is not None else '-'} "
                     f"| {f'{r:.2f}x' if r is not None else '-'} | {op} {x}x | {status} |")
    lines.append("")


def write_failures(lines, data):
    failed = [r for r in data.rows if r["status"] == "failed"]
    if not failed:
        lines.append("All runs passed.")
        lines.append("")
        return
    lines.append(f"## Failed runs ({len(failed)})")
    lines.append("")
    lines.append("| suite | transport | size | family | run | why | log | rerun |")
    lines.append("|---|---|---:|---|---:|---|---|---|")
    for r in failed:
        why = r["why"].replace("|", "\\|")
        after = [x for x in data.rows if x is not r and x.get("rerun") and not r.get("rerun")
                 and all(x[k] == r[k] for k in ("suite", "transport", "size", "family", "run"))]
        rerun = "(this is a rerun)" if r.get("rerun") else (after[0]["status"] if after else "none")
        lines.append(f"| {r['suite']} | {r['transport']} | {r['size']} | {r['family']} | {r['run']} "
                     f"| {why} | `zmq-runs/{r['log']}.*` | {rerun} |")
    lines.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True, help="the zmq-runs directory of one bench-zmq.sh run")
    ap.add_argument("--out", required=True, help="where zmq.md goes")
    args = ap.parse_args()
    meta, rows = load(args.runs)
    data = Data(rows)
    lines = []
    write_header(lines, meta)
    write_targets(lines, data)
    write_machine(lines, meta)
    write_method(lines, meta)
    write_tables(lines, meta, data)
    write_failures(lines, data)
    os.makedirs(args.out, exist_ok=True)
    out_md = os.path.join(args.out, "zmq.md")
    with open(out_md, "w") as f:
        f.write("\n".join(lines))
    print(f"zmq_report: wrote {out_md}")
    for line in lines[lines.index("## Summary: targets") + 2:]:
        if not line.strip():
            break
        print(line)


if __name__ == "__main__":
    main()
