#!/usr/bin/env python3
"""The run lines and medians of the chat A/B scripts (chat-ab.sh, tls-flood.sh), from strix-chat-load's JSON.

  chat_runs.py line <load.json> <label> <run> <script> [lost]
      one line: p50/p99/max delivery latency and deliveries/s (and, with `lost`, the messages lost); exits 1,
      naming <script>, when the load tool's verification failed (lost, duplicated, reordered, gaps, corrupt)
  chat_runs.py summary <file of run lines> [deliveries] [<label>...]
      per label (given, or every label in the file, sorted): median (min-max) of p50 and p99 (and deliveries/s)
"""
import json
import re
import statistics
import sys


def line(path, label, run, script, *lost):
    j = json.load(open(path))
    lat = j["latency_us"]
    bad = {k: j[k] for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt") if j.get(k)}
    if bad:
        sys.exit(f"{script}: {label} run {run} failed verification: {bad}")
    print(f"{label} run {run}: p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
          f"max {lat['max'] / 1000:.2f} ms, deliveries/s {j['deliveries_per_s']:.0f}"
          + (f", lost {j.get('lost', 0)}" if lost else ""))


def summary(path, *args):
    deliveries = args[:1] == ("deliveries",)
    rows = {}
    for ln in open(path):
        m = re.match(r"(\w+) run \d+: p50 ([\d.]+) ms, p99 ([\d.]+) ms, max [\d.]+ ms, deliveries/s (\d+)", ln)
        if m:
            rows.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3)), int(m.group(4))))
    for k in args[deliveries:] or sorted(rows):
        v = rows.get(k, [])
        if not v:
            continue
        p50, p99, d = ([x[i] for x in v] for i in range(3))
        print(f"{k}: p50 median {statistics.median(p50):.2f} ({min(p50):.2f}-{max(p50):.2f}) ms, "
              f"p99 median {statistics.median(p99):.2f} ({min(p99):.2f}-{max(p99):.2f}) ms"
              + (f", deliveries/s median {statistics.median(d):.0f}" if deliveries else "") + f" over {len(v)} runs")


if __name__ == "__main__":
    {"line": line, "summary": summary}[sys.argv[1]](*sys.argv[2:])
