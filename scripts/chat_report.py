#!/usr/bin/env python3
"""Writes <out> (build/bench/chat.md) from one scripts/bench-chat.sh run.

Every figure of ours comes from the strix-chat-load JSON files in --runs (run.json, and sweep.json
when the sweep ran); a missing file or a run that did not verify fails the report. Seed 004's
figures are quoted from its portfolio (IOCP chat server, Windows) and always labelled as theirs.
"""
import argparse
import datetime
import json
import os
import platform
import sys

# Seed 004 (theirs): i5-14400F, 32 GB, Windows 11, Win32 IOCP, 500 clients / 10 rooms / 10 rps, 250 s.
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


def die(why):
    print(f"chat_report: FAILED: {why}", file=sys.stderr)
    sys.exit(1)


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


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    run = load_json(os.path.join(args.runs, "run.json"))
    if not run.get("ok"):
        die(f"run.json: the load run did not verify: {run.get('failure')}")
    for k in ("lost", "duplicates", "out_of_order", "corrupt"):
        if run[k] != 0:
            die(f"run.json: {k} = {run[k]}")
    sweep_path = os.path.join(args.runs, "sweep.json")
    sweep = load_json(sweep_path) if os.path.exists(sweep_path) else None
    if sweep is not None and not sweep.get("ok"):
        die(f"sweep.json: the sweep failed verification: {sweep.get('failure')}")

    lat = run["latency_us"]
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    L = []
    L.append("# Chat load test (seed 004's DummyClient workload)")
    L.append("")
    L.append(f"Written by `scripts/bench-chat.sh` on {now} from the JSON that `strix-chat-load` wrote in "
             "`chat-runs/`. strix-chat-server and the load tool ran on the same machine over loopback, "
             "sharing its CPUs. Figures marked **seed 004 (theirs)** are quoted from the seed's portfolio "
             "(IOCP chat server, i5-14400F, 32 GB, Windows 11, 250 s run): a different machine, OS and "
             "measuring tool, so they are an anchor, not a like-for-like comparison.")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append(f"- CPU: {cpu_model()}, {cpus} CPUs usable (nproc)")
    L.append(f"- Memory: {mem_total()}")
    L.append(f"- Kernel: {platform.system()} {platform.release()}")
    L.append(f"- Load average (1/5/15 min) at start: {read(os.path.join(args.runs, 'loadavg.start'), 'n/a')}, "
             f"at end: {read(os.path.join(args.runs, 'loadavg.end'), 'n/a')}")
    L.append("")
    L.append("## Workload")
    L.append("")
    L.append(f"- Clients / rooms: {run['clients']} / {run['rooms']} (client i in room i % {run['rooms']}; "
             f"fan-out x{run['fan_out']:.2f}, the sender included)")
    L.append(f"- Per-client rate: {run['rps']:.1f} chat messages/s, paced open-loop with evenly spread start offsets")
    L.append(f"- Payload mix (chat text bytes: weight %): {run['payload_mix']} (mean {run['mean_text_bytes']:.0f} B)")
    L.append(f"- Measured: {run['duration_s']:.0f} s after {run['warmup_s']:.0f} s warmup; setup (connect, login, "
             f"create, join) took {run['setup_s']:.1f} s")
    L.append("")
    L.append("## Per interval")
    L.append("")
    L.append("Seed 004's columns. Ours are counted at the load tool: `io r/s` / `io s/s` are its read() / "
             "write() calls on the client sockets, `bytes r/s` what the clients received (the server's output), "
             "`app in/s` chat requests sent, `app out/s` messages acknowledged (each sender's own copy), "
             "`bc-deliv/s` verified deliveries to room members. Latency: from the sender's send (client_ts) "
             "to each member's receipt, same clock. The last row also holds the drain after sending stopped.")
    L.append("")
    L.extend(interval_table(run))
    L.append("")
    L.append("Seed 004 (theirs), server-side counters, every 60 s of 250 s:")
    L.append("")
    L.append("| sec | io r/s | io s/s | app in/s | app out/s | bytes r/s | bytes s/s | bc-deliv/s | avg (us) | p50 (us) | p90 (us) | p99 (us) |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in SEED_ROWS:
        L.append("| " + row[0] + " | " + " | ".join(n(v) for v in row[1:]) + " |")
    L.append("")
    L.append("## Latency buckets")
    L.append("")
    L.extend(bucket_table(run))
    L.append("")
    L.append("Seed 004 (theirs), 250 s: " + " | ".join(
        f"{label} {n(v)}" if v is not None else f"{label} not reported" for label, v in SEED_BUCKETS) +
        " (their counts add up to 671,456 over 250 s, far fewer than their ~62 M deliveries, so they "
        "evidently sampled; compare the percentages, not the counts).")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| | ours | seed 004 (theirs) |")
    L.append("|---|---:|---:|")
    L.append(f"| chat requests sent | {n(run['sent'])} ({n(run['app_in_per_s'])}/s) | {n(SEED_APP_IN_PER_S)}/s |")
    L.append(f"| deliveries expected | {n(run['expected_deliveries'])} | n/a |")
    L.append(f"| deliveries verified | {n(run['delivered'])} | n/a |")
    L.append(f"| lost / duplicates / out of order | {run['lost']} / {run['duplicates']} / {run['out_of_order']} | not measured |")
    L.append(f"| corrupt texts / errors / disconnects | {run['corrupt']} / {run['errors']['total']} / {run['disconnects']} | not measured |")
    L.append(f"| deliveries/s | **{n(run['deliveries_per_s'])}** | ~{n(SEED_DELIVERIES_PER_S)} |")
    L.append(f"| latency avg (ms) | {ms(lat['avg'])} | {SEED_LATENCY_MS['avg']:.3f} |")
    L.append(f"| latency p50 (ms) | **{ms(lat['p50'])}** | {SEED_LATENCY_MS['p50']:.3f} |")
    L.append(f"| latency p90 (ms) | {ms(lat['p90'])} | {SEED_LATENCY_MS['p90']:.3f} |")
    L.append(f"| latency p99 (ms) | **{ms(lat['p99'])}** | {SEED_LATENCY_MS['p99']:.3f} |")
    L.append(f"| latency p99.9 (ms) | {ms(lat['p999'])} | n/a |")
    L.append(f"| latency max (ms) | {ms(lat['max'])} | n/a |")
    if "server_cpu_pct" in run:
        L.append(f"| server CPU (% of one core) | {run['server_cpu_pct']:.0f} | n/a |")
    if "load_cpu_pct" in run:
        L.append(f"| load tool CPU (% of one core) | {run['load_cpu_pct']:.0f} | n/a |")
    L.append("")
    L.append(f"Verification: every receiver checked its room's seq (+1 each time), each sender's client_seq "
             f"order and the exact text of every message; {n(run['delivered'])} of {n(run['expected_deliveries'])} "
             f"deliveries owed arrived exactly once (warmup checked too: {n(run['warmup']['delivered'])} of "
             f"{n(run['warmup']['expected_deliveries'])}). Worst send lag of the load tool against its schedule: "
             f"{run['send_lag_max_us'] / 1000:.1f} ms. Its event loop was busy {run.get('loop_busy_pct', 0):.0f} % of "
             f"the measured time and its longest turn took {run.get('loop_max_turn_us', 0) / 1000:.2f} ms: the most "
             "the tool itself can have added to one receipt's latency.")
    L.append("")
    if sweep is not None:
        L.append("## Sweep")
        L.append("")
        L.append(f"The same {sweep['clients']} clients and {sweep['rooms']} rooms; the per-client rate starts at "
                 f"{sweep['rps']:.1f}/s and grows x{sweep['sweep_factor']:.2f} per {sweep['duration_s']:.0f} s step "
                 f"({sweep['warmup_s']:.0f} s warmup each) until p99 exceeds {sweep['sweep_p99_ms']:.0f} ms, a delivery "
                 "is missing or late to drain (> 1 s), or the server refuses or disconnects. A step is *sustained* "
                 "when it verified completely within those limits.")
        L.append("")
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
            L.append(f"**Highest sustained: {n(best['deliveries_per_s'])} deliveries/s** at {best['rps']:.1f} messages/s "
                     f"per client (p99 {ms(best['p99_us'])} ms). Seed 004 (theirs) reported ~{n(SEED_DELIVERIES_PER_S)} "
                     "deliveries/s at its single 10 rps point; it did not sweep.")
        else:
            L.append("**No step was sustained** (see the results column).")
        L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    L.append(read(os.path.join(args.runs, "server.cmd")))
    L.append(read(os.path.join(args.runs, "run.cmd")))
    if sweep is not None:
        L.append(read(os.path.join(args.runs, "sweep.cmd")))
    L.append("```")
    L.append("")
    L.append("The server's chat rate limit is lifted (`--chat-rate`/`--chat-burst`) so the sweep measures the "
             "server, not its limiter; at seed 004's 10 rps the default limit (50/s) would not bind either. "
             "Re-run with `scripts/bench-chat.sh <build_dir>` (`CHAT_DURATION=250` for the seed's length).")
    L.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    print(f"chat_report: wrote {args.out}")


if __name__ == "__main__":
    main()
