#!/usr/bin/env python3
"""Writes <out> (build/bench/chat.md) from one scripts/bench-chat.sh run.

Every figure of ours comes from the strix-chat-load JSON files in --runs (run.json, and sweep.json
when the sweep ran; run-early.json and run-unix-early.json from the --ack early server when those
ran; run-tls.json from the TLS server when that ran; run-ws.json, over WebSocket, when that ran); a
missing file or a run that did not verify fails the report. The conversations workload's runs
(conv-*.json) get their own section (chat_conv_report.py), failed runs shown as such. The Chat
server portfolio's figures (IOCP chat server, Windows) are quoted from it and always labelled as
theirs.
"""
import argparse
import re
import datetime
import json
import os
import platform

from chat_conv_report import section as conversations_section
from report_common import cpu_model, die

# The Chat server portfolio (theirs): i5-14400F, 32 GB, Windows 11, Win32 IOCP, 500 clients / 10 rooms / 10 rps, 250 s.
SEED_LATENCY_MS = {"avg": 0.456, "p50": 0.142, "p90": 1.163, "p99": 5.569}
SEED_DELIVERIES_PER_S = 248153      # headline bc-deliv/s; interval rows 252,961 .. 256,510
SEED_APP_IN_PER_S = 4948.37
SEED_BUCKETS = [("<=100us", 205707), ("<=500us", 277936), ("<=1ms", 126558), ("<=5ms", 61255),
                ("<=50ms", None), (">50ms", 0)]
SEED_ROWS = [  # sec, io r/s, io s/s, app in/s, app out/s, bytes r/s, bytes s/s, bc-deliv/s, avg, p50, p90, p99
    ("10s", 5041, 117849, 5041, 5041, 106158, 11660834, 252961, 388, 206, 1086, 6733),
    ("70s", 5044, 120346, 5044, 5044, 105789, 11891003, 253144, 460, 203, 985, 4564),
    ("130s", 5110, 114104, 5110, 5110, 107355, 12057805, 256510, 459, 188, 1014, 4812),
    ("190s", 5096, 80294, 5096, 5096, 106625, 12000661, 255766, 458, 86, 1400, 5740),
    ("250s", 5045, 133973, 5045, 5045, 106339, 11920759, 253195, 458, 278, 964, 4445),
]
BUCKET_KEYS = [("le_100us", "<=100us"), ("le_500us", "<=500us"), ("le_1ms", "<=1ms"), ("le_5ms", "<=5ms"),
               ("le_50ms", "<=50ms"), ("gt_50ms", ">50ms")]


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        if default is None:
            die(f"{path} is missing")
        return default


def load_json(path):
    if not os.path.exists(path):
        die(f"{path} is missing")
    with open(path) as f:
        return json.load(f)


def mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def n(v):
    return f"{v:,.0f}"


def ms(us):
    return f"{us / 1000:.3f}"


def pct(part, whole):
    return f"{100.0 * part / whole:.2f} %" if whole else "n/a"


def interval_table(run):
    lines = ["| sec | io r/s | io s/s | app in/s | app out/s | bytes r/s | bytes s/s | bc-deliv/s | avg (us) | p50 (us) | p90 (us) | p99 (us) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in run["intervals"]:
        lat = r["latency_us"]
        lines.append(f"| {r['sec']:g}s | {n(r['io_r_s'])} | {n(r['io_s_s'])} | {n(r['app_in_s'])} | "
                     f"{n(r['app_out_s'])} | {n(r['bytes_r_s'])} | {n(r['bytes_s_s'])} | {n(r['bc_deliv_s'])} | "
                     f"{n(lat['avg'])} | {n(lat['p50'])} | {n(lat['p90'])} | {n(lat['p99'])} |")
    return lines


def bucket_table(run):
    head = "| sec | " + " | ".join(label for _, label in BUCKET_KEYS) + " |"
    lines = [head, "|---:|" + "---:|" * len(BUCKET_KEYS)]
    for r in run["intervals"]:
        b = r["latency_buckets"]
        total = sum(b[k] for k, _ in BUCKET_KEYS)
        lines.append(f"| {r['sec']:g}s | " + " | ".join(f"{n(b[k])} ({pct(b[k], total)})" for k, _ in BUCKET_KEYS) + " |")
    b = run["latency_buckets"]
    total = sum(b[k] for k, _ in BUCKET_KEYS)
    lines.append("| **all** | " + " | ".join(f"**{n(b[k])}** ({pct(b[k], total)})" for k, _ in BUCKET_KEYS) + " |")
    return lines


def check_run(path, name):
    run = load_json(path)
    if not run.get("ok"):
        die(f"{name}: the load run did not verify: {run.get('failure')}")
    for k in ("lost", "duplicates", "out_of_order", "corrupt"):
        if run[k] != 0:
            die(f"{name}: {k} = {run[k]}")
    return run


def optional_json(path, name, sweep=False):
    if not os.path.exists(path):
        return None
    d = load_json(path)
    if sweep and not d.get("ok"):
        die(f"{name}: the sweep failed verification: {d.get('failure')}")
    return d


def median(values):
    v = sorted(values)
    if not v:
        return float("nan")
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def cost_line(name, stored, early):
    """One transport's latency difference between the two acknowledgement modes."""
    a, b = stored["latency_us"], early["latency_us"]
    parts = [f"{k} {ms(a[k])} vs {ms(b[k])} ms ({(a[k] - b[k]) / 1000:+.3f})" for k in ("p50", "p99", "p999")]
    cpu = ""
    if "server_cpu_pct" in stored and "server_cpu_pct" in early:
        cpu = f", server CPU {stored['server_cpu_pct']:.0f} % vs {early['server_cpu_pct']:.0f} %"
    return f"{name}: " + ", ".join(parts).replace("p999", "p99.9") + cpu


def platform_section(probe, run, cpus):
    """What the machine allows, from strix-platform-probe, and what the workload asks of it."""
    L = ["## What this machine allows", ""]
    L.append("Measured by `strix-platform-probe` at the start of this benchmark, before the server started "
             "(bench/platform/platform_probe.cpp).")
    L.append("")
    L.append(f"**Clock hiccups** ({probe['hiccup_seconds']:g} s, one thread per CPU doing nothing but read the "
             "monotonic clock; a gap is time the CPU was taken away from a runnable thread):")
    L.append("")
    L.append("| CPU | gaps > 50 us | > 200 us | > 1 ms | > 5 ms | longest (ms) | wall time lost |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    for h in probe["hiccups"]:
        L.append(f"| {h['cpu']} | {n(h['over_50us'])} | {n(h['over_200us'])} | {n(h['over_1ms'])} | "
                 f"{n(h['over_5ms'])} | {h['max_ms']:.2f} | {h['lost_pct']:.2f} % |")
    L.append("")
    L.append(f"**Small-segment ceiling** ({probe['connections']} connections, one {probe['size']}-byte send() per "
             "message, one sending thread on one CPU, one epoll reader on the other, every byte checked):")
    L.append("")
    L.append("| transport | sends/s | reads/s | sender CPU per send (us) | reader CPU per read (us) |")
    L.append("|---|---:|---:|---:|---:|")
    per = {}
    for sg in probe["segments"]:
        cs = sg["sender_cpu_s"] * 1e6 / sg["sends"] if sg["sends"] else float("nan")
        cr = sg["reader_cpu_s"] * 1e6 / sg["reads"] if sg["reads"] else float("nan")
        per[sg["transport"]] = (cs, cr)
        L.append(f"| {sg['transport']} | {n(sg['sends_per_s'])} | {n(sg['reads_per_s'])} | {cs:.2f} | {cr:.2f} |")
    L.append("")
    if "tcp" in per and run is not None:
        cs, cr = per["tcp"]
        d = run["deliveries_per_s"]
        per_member_per_ms = run["rps"] * run["fan_out"] / 1000.0
        need = d * (cs + cr) / 1e6
        unix = per.get("unix")
        unix_need = d * (unix[0] + unix[1]) / 1e6 if unix else None
        text = (f"What the workload asks: {n(d)} deliveries/s. One member receives {run['rps']:.0f} x "
                f"{run['fan_out']:.0f} = {run['rps'] * run['fan_out']:,.0f} messages/s, {per_member_per_ms:.2f} per "
                "millisecond, so a server that answers within 1 ms has on average less than one message per member "
                "to send at a time: nearly every delivery is its own segment, written by the server and read by "
                f"the client. Over loopback TCP that is {n(d)} x ({cs:.2f} + {cr:.2f}) us = **{need:.2f} CPUs of kernel "
                f"time alone** (the probe's per-call costs), against the {cpus} this machine has, before either "
                "program does its own work. ")
        if need > 0.7 * cpus:
            text += ("That leaves no headroom: over TCP the run keeps up only by letting a few messages gather per "
                     "member before each write (the deliveries-per-read figures below), that is by waiting "
                     "milliseconds, so p99 <= 1 ms is out of reach over TCP on this machine whatever the server does. ")
        else:
            text += "That leaves headroom, so the kernel's cost alone does not rule the target out here. "
        if unix_need is not None:
            text += (f"Over a Unix socket the same deliveries cost {n(d)} x ({unix[0]:.2f} + {unix[1]:.2f}) us = "
                     f"{unix_need:.2f} CPUs, which fits; what is left is the work of the two programs and the "
                     "machine's own hiccups above (any stall of a CPU on the path delays every delivery due in it, "
                     "so the share of wall time lost in gaps over 1 ms bounds how far below 1 ms p99 can go).")
        L.append(text)
        L.append("")
    return L


def read_metrics(path):
    """Prometheus text -> {name or name{labels}: float}; None when the file is missing."""
    if not os.path.exists(path):
        return None
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or " " not in line:
                continue
            key, value = line.rsplit(" ", 1)
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def loop_section(runs_dir, tag, measured_s):
    """The server's event-loop turns during one load run, from /metrics snapshots around it."""
    before = read_metrics(os.path.join(runs_dir, tag + ".metrics.before"))
    after = read_metrics(os.path.join(runs_dir, tag + ".metrics.after"))
    if not before or not after:
        return []
    keys = [k for k in after if k.startswith("strix_loop_turn_seconds_bucket{")]
    if not keys:
        return []
    delta = {k: after[k] - before.get(k, 0) for k in keys}
    count = after["strix_loop_turn_seconds_count"] - before.get("strix_loop_turn_seconds_count", 0)
    busy = after["strix_loop_turn_seconds_sum"] - before.get("strix_loop_turn_seconds_sum", 0)
    if count <= 0:
        return []
    cells, prev, labels = [], 0.0, []
    for k in keys:
        le = k.split('le="', 1)[1].rstrip('"}')
        labels.append("> 5 ms" if le == "+Inf" else f"<= {float(le) * 1e6:g} us")
        cells.append(delta[k] - prev)
        prev = delta[k]
    over_1ms = sum(c for lab, c in zip(labels, cells) if lab in ("<= 5000 us", "> 5 ms"))
    row = " | ".join(f"{n(c)} ({100.0 * c / count:.3f} %)" for c in cells)
    return [f"Server event loop over the same span (all shards, from `/metrics` before and after; turns "
            f"that found work): {n(count)} turns, busy {busy:.1f} s of the ~{measured_s:.0f} s measured plus "
            f"warmup and drain; {n(over_1ms)} turns ran longer than 1 ms ({100.0 * over_1ms / count:.3f} %).", "",
            "| " + " | ".join(labels) + " |", "|" + "---:|" * len(labels), "| " + row + " |", ""]


def run_sections(run, label, runs_dir=None, tag=None):
    L = [f"### {label}", ""]
    L.extend(interval_table(run))
    L.append("")
    L.extend(bucket_table(run))
    L.append("")
    rows = run["intervals"]
    full = [r for r in rows if r["seconds"] >= run["report_every_s"] - 1e-6] or rows
    L.append(f"Median of the {len(full)} full intervals' p99: **{ms(median([r['latency_us']['p99'] for r in full]))} ms**; "
             f"deliveries per client read: {run['delivered'] / run['io']['reads']:.2f}; worst send lag of the load tool "
             f"{run['send_lag_max_us'] / 1000:.1f} ms; its loop was busy {run.get('loop_busy_pct', 0):.0f} % with a longest "
             f"turn of {run.get('loop_max_turn_us', 0) / 1000:.2f} ms (the most it can have added to one receipt).")
    ts, fs = run.get("latency_to_server_us"), run.get("latency_from_server_us")
    if ts and fs:
        L.append("")
        L.append(f"Where the time goes, cut at the server's timestamp (taken when the room sequences a message): "
                 f"sender to server p50 {ms(ts['p50'])} / p99 {ms(ts['p99'])} / p99.9 {ms(ts['p999'])} ms; "
                 f"server to each receiver p50 {ms(fs['p50'])} / p99 {ms(fs['p99'])} / p99.9 {ms(fs['p999'])} ms.")
    L.append("")
    if runs_dir and tag:
        L.extend(loop_section(runs_dir, tag, run["duration_s"] + run["warmup_s"]))
    return L


def sweep_section(sweep, label):
    L = [f"### {label}", ""]
    L.append("| step | rps/client | chat req/s | deliveries/s | p50 (ms) | p99 (ms) | p99.9 (ms) | lost | drain (s) | server CPU % | tool CPU % | result |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for st in sweep["steps"]:
        sl = st["latency_us"]
        verdict = "sustained" if st["sustained"] else "not sustained: " + st["verdict"]
        L.append(f"| {st['step']} | {st['rps']:.1f} | {n(st['app_in_per_s'])} | {n(st['deliveries_per_s'])} | "
                 f"{ms(sl['p50'])} | {ms(sl['p99'])} | {ms(sl['p999'])} | {n(st['lost'])} | {st['drain_s']:.3f} | "
                 f"{st.get('server_cpu_pct', float('nan')):.0f} | {st.get('load_cpu_pct', float('nan')):.0f} | {verdict} |")
    L.append("")
    best = sweep.get("highest_sustained")
    if best:
        L.append(f"**Highest sustained ({label.split(' ')[0]}): {n(best['deliveries_per_s'])} deliveries/s** at "
                 f"{best['rps']:.1f} messages/s per client (p99 {ms(best['p99_us'])} ms).")
    else:
        L.append("**No step was sustained** (see the results column).")
    under_1ms = [st for st in sweep["steps"] if st["sustained"] and st["latency_us"]["p99"] <= 1000]
    if under_1ms:
        top = max(under_1ms, key=lambda st: st["deliveries_per_s"])
        L.append(f"Highest step with p99 <= 1 ms: {n(top['deliveries_per_s'])} deliveries/s "
                 f"(p99 {ms(top['latency_us']['p99'])} ms).")
    L.append("")
    return L


def readme_section(runs_dir):
    """Step 6 of bench-chat.sh: the README layout, every option at its default, per backend and rate."""
    by_key = {}
    for name in sorted(os.listdir(runs_dir)):
        m = re.match(r"readme-(epoll|uring)-([0-9.]+)rps-r(\d+)\.json$", name)
        if m:
            by_key.setdefault((float(m.group(2)), m.group(1)), []).append(check_run(os.path.join(runs_dir, name), name))
    if not by_key:
        return []
    L = ["## The README layout (every option at its default)", ""]
    L.append("`strix-chat-server --port P --db sqlite:FRESH --metrics-port M --io epoll|uring` (2 shards on the "
             "machine's CPUs, not pinned, every limit on, argon2id at the interactive cost) and "
             "`strix-chat-load --port P --duration S --server-pid PID` (the chat portfolio's workload, 500 clients from 127.0.0.1-5, "
             "not pinned; `--rps 2` on the rows at a fifth of the rate), the backends interleaved, each run on a fresh "
             "database. Medians of the runs (min-max).")
    L.append("")
    L.append("The last three columns say how much the programs waited for a CPU, from the kernel's own accounts over "
             "the run: **run-queue wait** is the time the threads of the server (or of the load tool), summed, were "
             "ready to run but had no CPU (`/proc/PID/task/*/schedstat`), and **steal** the CPU time the hypervisor "
             "gave to something else while this machine had work (`/proc/stat`), in milliseconds per second.")
    L.append("")
    L.append("| backend | msgs/s per client | runs | p50 (ms) | p99 (ms) | p99.9 (ms) | server CPU (% of a core) | "
             "load tool CPU | portfolio p99 (theirs) | run-queue wait: server (ms/s) | run-queue wait: load tool | "
             "steal |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def cell(rs, f):
        v = [f(r) for r in rs]
        return f"{median(v):.2f} ({min(v):.2f}-{max(v):.2f})"

    def whole(rs, key):
        v = [r[key] for r in rs if key in r]
        return f"{median(v):.0f} ({min(v):.0f}-{max(v):.0f})" if v else "n/a"

    for rate in sorted({k[0] for k in by_key}, reverse=True):
        for io in ("epoll", "uring"):
            rs = by_key.get((rate, io), [])
            name = "io_uring" if io == "uring" else io
            if not rs:
                L.append(f"| {name} | {rate:g} | 0 | not run | | | | | | | | |")
                continue
            L.append(f"| {name} | {rate:g} | {len(rs)} | "
                     f"{cell(rs, lambda r: r['latency_us']['p50'] / 1000)} | "
                     f"**{cell(rs, lambda r: r['latency_us']['p99'] / 1000)}** | "
                     f"{cell(rs, lambda r: r['latency_us']['p999'] / 1000)} | "
                     f"{median([r.get('server_cpu_pct', float('nan')) for r in rs]):.0f} | "
                     f"{median([r.get('load_cpu_pct', float('nan')) for r in rs]):.0f} | "
                     f"{SEED_LATENCY_MS['p99']:.3f} | "
                     f"{whole(rs, 'server_run_queue_wait_ms_per_s')} | "
                     f"{whole(rs, 'load_run_queue_wait_ms_per_s')} | "
                     f"{whole(rs, 'steal_ms_per_s')} |")
    L.append("")
    return L


def tls_cost_line(plain, tls):
    """What a transport costs (TLS, WebSocket): the same workload over it next to plain TCP."""
    a, b = tls["latency_us"], plain["latency_us"]
    parts = [f"deliveries/s {n(tls['deliveries_per_s'])} vs {n(plain['deliveries_per_s'])}"]
    parts += [f"{k.replace('p999', 'p99.9')} {ms(a[k])} vs {ms(b[k])} ms ({(a[k] - b[k]) / 1000:+.3f})"
              for k in ("p50", "p99", "p999")]
    for key, who in (("server_cpu_pct", "server"), ("load_cpu_pct", "load tool")):
        if key in tls and key in plain:
            parts.append(f"{who} CPU {tls[key]:.0f} % vs {plain[key]:.0f} %")
    return "; ".join(parts)


def tls_negotiated(runs_dir):
    """The load tool's "TLS: <version> <cipher>, certificate ..." line, version and cipher only."""
    text = read(os.path.join(runs_dir, "run-tls.log"), "")
    m = re.search(r"strix-chat-load: TLS: (\S+) ([^\s,]+)", text)
    return f"{m.group(1)} {m.group(2)}" if m else "TLS"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    run = check_run(os.path.join(args.runs, "run.json"), "run.json")
    unix_path = os.path.join(args.runs, "run-unix.json")
    urun = check_run(unix_path, "run-unix.json") if os.path.exists(unix_path) else None
    early_path = os.path.join(args.runs, "run-early.json")
    erun = check_run(early_path, "run-early.json") if os.path.exists(early_path) else None
    uearly_path = os.path.join(args.runs, "run-unix-early.json")
    uerun = check_run(uearly_path, "run-unix-early.json") if os.path.exists(uearly_path) else None
    ws_path = os.path.join(args.runs, "run-ws.json")
    wrun = check_run(ws_path, "run-ws.json") if os.path.exists(ws_path) else None
    tls_path = os.path.join(args.runs, "run-tls.json")
    trun = check_run(tls_path, "run-tls.json") if os.path.exists(tls_path) else None
    sweep = optional_json(os.path.join(args.runs, "sweep.json"), "sweep.json", sweep=True)
    usweep = optional_json(os.path.join(args.runs, "sweep-unix.json"), "sweep-unix.json", sweep=True)
    probe = optional_json(os.path.join(args.runs, "platform.json"), "platform.json")
    if probe is not None and not probe.get("ok"):
        die("platform.json: the probe failed")

    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    L = []
    L.append("# Chat load test (the Chat server portfolio's DummyClient workload)")
    L.append("")
    L.append(f"Written by `scripts/bench-chat.sh` on {now} from the JSON that `strix-chat-load` and "
             "`strix-platform-probe` wrote in `chat-runs/`. strix-chat-server and the load tool ran on the same "
             "machine, sharing its CPUs: first over loopback TCP (the portfolio's transport), then over a Unix socket "
             "(the same server process and code above the socket). Figures marked **portfolio (theirs)** are quoted "
             "from the chat server portfolio (docs/references.md: IOCP chat server, i5-14400F, 32 GB, Windows 11, 250 s run): a different "
             "machine, OS and measuring tool, so they are an anchor, not a like-for-like comparison.")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append(f"- CPU: {cpu_model()}, {cpus} CPUs usable (nproc)")
    L.append(f"- Memory: {mem_total()}")
    L.append(f"- Kernel: {platform.system()} {platform.release()}")
    L.append(f"- Load average (1/5/15 min) at start: {read(os.path.join(args.runs, 'loadavg.start'), 'n/a')}, "
             f"at end: {read(os.path.join(args.runs, 'loadavg.end'), 'n/a')}")
    L.append("")
    if probe is not None:
        L.extend(platform_section(probe, run, cpus))
    L.append("## Workload")
    L.append("")
    L.append(f"- Clients / rooms: {run['clients']} / {run['rooms']} (client i in room i % {run['rooms']}; "
             f"fan-out x{run['fan_out']:.2f}, the sender included)")
    L.append(f"- Per-client rate: {run['rps']:.1f} chat messages/s, paced open-loop with evenly spread start offsets")
    L.append(f"- Payload mix (chat text bytes: weight %): {run['payload_mix']} (mean {run['mean_text_bytes']:.0f} B)")
    L.append(f"- Measured: {run['duration_s']:.0f} s after {run['warmup_s']:.0f} s warmup per transport")
    L.append("")
    L.append("## Summary")
    L.append("")
    ulat = urun["latency_us"] if urun else None
    early = erun is not None or uerun is not None
    tls_col = " TCP+TLS, ack stored (ours) |" if early else " TCP+TLS (ours) |"
    ws_col = (" WebSocket, ack stored (ours) |" if early else " WebSocket (ours) |") if wrun else ""
    if wrun is not None:
        L.append("WebSocket: the same workload through the same server's `--ws-port` (`strix-chat-load --ws`: "
                 "every frame one masked binary message, the server's frames one binary message each), right "
                 "after the TCP and Unix runs; the same verification.")
        L.append("")
    if trun is not None:
        L.append(f"TCP+TLS: the same workload over TLS ({tls_negotiated(args.runs)}, a self-signed P-256 certificate "
                 "verified by the load tool), against a server started like the TCP one, right before it. Server and "
                 "load tool share this machine's CPUs, so the load tool's own TLS work (decrypting every delivery, "
                 "500 connections) competes with the server's.")
        L.append("")
    if early:
        # Acknowledge-after-write (--ack stored, the default) next to acknowledge-when-queued
        # (--ack early, the behaviour before it), each transport measured against both servers.
        L.append("Two servers, one after the other on fresh databases: `--ack stored` (the default: a message "
                 "goes out, the sender's acknowledgement included, once the database committed it) and "
                 "`--ack early` (once it is queued for the database, as before; a crash can lose what was "
                 "acknowledged but not yet committed).")
        L.append("")
        L.append("| | TCP, ack stored (ours) |" + (tls_col if trun else "") + " TCP, ack early (ours) | "
                 "Unix, ack stored (ours) | Unix, ack early (ours) |" + ws_col + " portfolio (theirs) |")
        L.append("|---|---:|---:|---:|---:|---:|" + ("---:|" if trun else "") + ("---:|" if wrun else ""))
    else:
        L.append("| | TCP (ours) |" + (tls_col if trun else "") + " Unix socket (ours) |" + ws_col +
                 " portfolio (theirs) |")
        L.append("|---|---:|---:|---:|" + ("---:|" if trun else "") + ("---:|" if wrun else ""))

    def row(label, f, theirs):
        tls_cell = [trun] if trun else []
        cols = [run] + tls_cell + ([erun, urun, uerun] if early else [urun]) + ([wrun] if wrun else [])
        cells = [f(r) if r else "not run" for r in cols]
        L.append(f"| {label} | " + " | ".join(cells) + f" | {theirs} |")

    lat = run["latency_us"]
    row("chat requests sent", lambda r: f"{n(r['sent'])} ({n(r['app_in_per_s'])}/s)", f"{n(SEED_APP_IN_PER_S)}/s")
    row("deliveries verified / expected", lambda r: f"{n(r['delivered'])} / {n(r['expected_deliveries'])}", "n/a")
    row("lost / duplicates / out of order", lambda r: f"{r['lost']} / {r['duplicates']} / {r['out_of_order']}", "not measured")
    row("corrupt texts / errors / disconnects", lambda r: f"{r['corrupt']} / {r['errors']['total']} / {r['disconnects']}",
        "not measured")
    row("deliveries/s", lambda r: f"**{n(r['deliveries_per_s'])}**", f"~{n(SEED_DELIVERIES_PER_S)}")
    row("latency avg (ms)", lambda r: ms(r["latency_us"]["avg"]), f"{SEED_LATENCY_MS['avg']:.3f}")
    row("latency p50 (ms)", lambda r: f"**{ms(r['latency_us']['p50'])}**", f"{SEED_LATENCY_MS['p50']:.3f}")
    row("latency p90 (ms)", lambda r: ms(r["latency_us"]["p90"]), f"{SEED_LATENCY_MS['p90']:.3f}")
    row("latency p99 (ms)", lambda r: f"**{ms(r['latency_us']['p99'])}**", f"{SEED_LATENCY_MS['p99']:.3f}")
    row("latency p99.9 (ms)", lambda r: ms(r["latency_us"]["p999"]), "n/a")
    row("latency max (ms)", lambda r: ms(r["latency_us"]["max"]), "n/a")
    row("deliveries per client read", lambda r: f"{r['delivered'] / r['io']['reads']:.2f}", "n/a")
    row("server CPU (% of one core)", lambda r: f"{r.get('server_cpu_pct', float('nan')):.0f}", "n/a")
    row("load tool CPU (% of one core)", lambda r: f"{r.get('load_cpu_pct', float('nan')):.0f}", "n/a")
    L.append("")
    verdict = "met" if lat["p99"] <= 1000 else "not met"
    uverdict = ("met" if ulat["p99"] <= 1000 else "not met") if ulat else "not run"
    L.append(f"Target p99 <= 1 ms: TCP **{verdict}** ({ms(lat['p99'])} ms); Unix socket **{uverdict}**"
             + (f" ({ms(ulat['p99'])} ms)" if ulat else "")
             + (f"; WebSocket **{'met' if wrun['latency_us']['p99'] <= 1000 else 'not met'}** "
                f"({ms(wrun['latency_us']['p99'])} ms)" if wrun else "")
             + "." + (" (With the default `--ack stored`.)" if early else ""))
    L.append("")
    if trun:
        L.append(f"**What TLS costs** (TCP+TLS vs plain TCP, this run): {tls_cost_line(run, trun)}.")
        L.append("")
    if wrun:
        L.append(f"**What WebSocket costs** (WebSocket vs TCP, same server, this run): {tls_cost_line(run, wrun)}.")
        L.append("")
    if early:
        L.append("**What acknowledge-after-write costs** (ack stored minus ack early, same workload, this run): "
                 + "; ".join(cost_line(name, a, b) for name, a, b in (("TCP", run, erun), ("Unix", urun, uerun))
                             if a and b) + ". The wait is the group commit: the writer takes what queued while its last "
                 "transaction ran (after `--commit-delay-us`, default 0), commits it in one transaction, then "
                 "hands the batch back to the owner shard, which broadcasts it.")
        L.append("")
    L.append("Verification: every receiver checked its room's seq (+1 each time), each sender's client_seq order "
             "and the exact text of every message; every delivery owed arrived exactly once, warmup included.")
    L.append("")
    L.extend(readme_section(args.runs))
    L.extend(conversations_section(args.runs)[0])
    L.append("## Per interval and latency buckets")
    L.append("")
    L.append("The portfolio's columns. Ours are counted at the load tool: `io r/s` / `io s/s` are its read() / "
             "write() calls on the client sockets, `bytes r/s` what the clients received (the server's output), "
             "`app in/s` chat requests sent, `app out/s` messages acknowledged (each sender's own copy), "
             "`bc-deliv/s` verified deliveries to room members. Latency: from the sender's send (client_ts) "
             "to each member's receipt, same clock. The last row also holds the drain after sending stopped. "
             "Over TLS `io r/s` / `io s/s` count SSL_read() / SSL_write() calls (a read returns at most one record) "
             "and the byte columns count plaintext.")
    L.append("")
    L.extend(run_sections(run, "TCP (127.0.0.1)" + (", --ack stored" if early else ""), args.runs, "run"))
    if trun:
        L.extend(run_sections(trun, "TCP+TLS (127.0.0.1)" + (", --ack stored" if early else ""), args.runs, "run-tls"))
    if urun:
        L.extend(run_sections(urun, "Unix socket" + (", --ack stored" if early else ""), args.runs, "run-unix"))
    if wrun:
        L.extend(run_sections(wrun, "WebSocket (ws://127.0.0.1)" + (", --ack stored" if early else ""), args.runs,
                              "run-ws"))
    if erun:
        L.extend(run_sections(erun, "TCP (127.0.0.1), --ack early", args.runs, "run-early"))
    if uerun:
        L.extend(run_sections(uerun, "Unix socket, --ack early", args.runs, "run-unix-early"))
    L.append("### The Chat server portfolio (theirs), server-side counters, every 60 s of 250 s")
    L.append("")
    L.append("| sec | io r/s | io s/s | app in/s | app out/s | bytes r/s | bytes s/s | bc-deliv/s | avg (us) | p50 (us) | p90 (us) | p99 (us) |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in SEED_ROWS:
        L.append("| " + r[0] + " | " + " | ".join(n(v) for v in r[1:]) + " |")
    L.append("")
    L.append("Latency buckets, 250 s: " + " | ".join(
        f"{label} {n(v)}" if v is not None else f"{label} not reported" for label, v in SEED_BUCKETS) +
        " (their counts add up to 671,456 over 250 s, far fewer than their ~62 M deliveries, so they "
        "evidently sampled; compare the percentages, not the counts).")
    L.append("")
    if sweep is not None or usweep is not None:
        first = sweep or usweep
        L.append("## Sweep")
        L.append("")
        L.append(f"The same {first['clients']} clients and {first['rooms']} rooms; the per-client rate starts at "
                 f"{first['rps']:.1f}/s and grows x{first['sweep_factor']:.2f} per {first['duration_s']:.0f} s step "
                 f"({first['warmup_s']:.0f} s warmup each) until p99 exceeds {first['sweep_p99_ms']:.0f} ms, a delivery "
                 "is missing or late to drain (> 1 s), or the server refuses or disconnects. A step is *sustained* "
                 "when it verified completely within those limits. The portfolio (theirs) reported ~"
                 f"{n(SEED_DELIVERIES_PER_S)} deliveries/s at its single 10 rps point; it did not sweep.")
        L.append("")
        if sweep is not None:
            L.extend(sweep_section(sweep, "TCP sweep"))
        if usweep is not None:
            L.extend(sweep_section(usweep, "Unix sweep"))
    L.append("## Commands")
    L.append("")
    L.append("```")
    if trun:
        L.append(read(os.path.join(args.runs, "server-tls.cmd")))
        L.append(read(os.path.join(args.runs, "run-tls.cmd")))
    L.append(read(os.path.join(args.runs, "server.cmd")))
    for tag in ("run", "run-unix", "run-ws", "sweep", "sweep-unix"):
        path = os.path.join(args.runs, tag + ".cmd")
        if os.path.exists(path):
            L.append(read(path))
    if early:
        L.append(read(os.path.join(args.runs, "server-early.cmd")))
    for tag in ("run-early", "run-unix-early"):
        path = os.path.join(args.runs, tag + ".cmd")
        if os.path.exists(path):
            L.append(read(path))
    if probe is not None:
        L.append("strix-platform-probe --json platform.json")
    L.append("```")
    L.append("")
    L.append("The server's chat rate limit is lifted (`--chat-rate`/`--chat-burst`) so the sweep measures the "
             "server, not its limiter; at the portfolio's 10 rps the default limit (50/s) would not bind either. "
             "Re-run with `scripts/bench-chat.sh <build_dir>` (`CHAT_DURATION=250` for the portfolio's length).")
    L.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    print(f"chat_report: wrote {args.out}")


if __name__ == "__main__":
    main()
