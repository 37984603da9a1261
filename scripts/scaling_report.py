#!/usr/bin/env python3
"""scaling.json (Google Benchmark, median aggregates) -> scaling.md: the Apex Core report's table (§10).

usage: scaling_report.py scaling.json scaling.md "command line"
"""
import json
import os
import sys

src, dst, command = sys.argv[1], sys.argv[2], sys.argv[3]
data = json.load(open(src))
rate = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") == "median" or b.get("run_type") == "iteration":
        name = b["run_name"]  # e.g. PerCore_Stateful/2/real_time
        kind, workers = name.split("/")[0], int(name.split("/")[1])
        if b.get("aggregate_name") == "median" or (kind, workers) not in rate:
            rate[(kind, workers)] = b["items_per_second"]

workers = sorted({w for (_, w) in rate})
ctx = data.get("context", {})
out = ["# Per-core vs shared io_context scaling (Apex Core report, §10)\n",
       f"Command: `{command}`  ",
       f"Host: {ctx.get('num_cpus', '?')} CPUs, date {ctx.get('date', '?')}. Medians of the repetitions.  ",
       f"This machine has {os.cpu_count()} cores: rows above that count show oversubscription, not scaling.\n",
       "Workload: every message is a posted task that looks up a session (10,000 per worker) in a map and "
       "updates it. Per-core = strix engine, one shard per worker, each owning its map, tasks posted "
       "shard-locally. Shared = one boost::asio::io_context run by N threads, one map in 64 "
       "mutex-guarded partitions.\n",
       "| workers | per-core msg/s | shared msg/s | per-core / shared | per-core vs its 1-worker rate | shared vs its 1-worker rate |",
       "|---|---|---|---|---|---|"]
for w in workers:
    p, s = rate.get(("PerCore_Stateful", w)), rate.get(("Shared_Stateful", w))
    p1, s1 = rate.get(("PerCore_Stateful", 1)), rate.get(("Shared_Stateful", 1))
    out.append(f"| {w} | {p / 1e6:.2f}M | {s / 1e6:.2f}M | {p / s:.2f}x | {p / p1:.2f}x | {s / s1:.2f}x |")
open(dst, "w").write("\n".join(out) + "\n")
