#!/usr/bin/env python3
"""Turns Google Benchmark JSON (with median aggregates) into the Apex Core benchmark report's
comparison tables.

usage: components_report.py components.json components.md "command line"
Every figure comes from the JSON of this run; nothing is typed in by hand.
"""
import json
import platform
import sys

src, dst, command = sys.argv[1], sys.argv[2], sys.argv[3]
data = json.load(open(src))

median = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") == "median":
        median[b["run_name"]] = b
    elif b.get("run_type") == "iteration" and b["run_name"] not in median:
        median.setdefault(b["run_name"], b)  # single-repetition runs


def wall_clock(b):
    """Runs timed by the wall clock (UseRealTime, UseManualTime) are judged by it; others by CPU."""
    run = b.get("run_name", "")
    return "real_time" in run or "manual_time" in run


def ns(name):
    b = median[name]
    t = b["real_time"] if wall_clock(b) else b["cpu_time"]
    unit = b.get("time_unit", "ns")
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    return t * scale


def rate(name, key):
    return median[name].get(key)


def fmt_ns(v):
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.2f} µs"
    return f"{v:.2f} ns"


def fmt_gbs(v):
    return f"{v / 1e9:.2f} GB/s"


# (title, A label, A benchmark, B label, B benchmark, metric, target ratio or None)
# metric "time": ratio = B time / A time; "bytes": ratio = A bytes/s / B bytes/s.
rows = [
    ("SPSC vs MPSC (1P1C, capacity 1024)", "SPSC", "SpscQueue_Throughput/1024", "MPSC", "MpscQueue_1P1C/1024", "time", 1.4),
    ("SPSC vs boost::lockfree::spsc_queue (1024)", "strix SPSC", "SpscQueue_Throughput/1024", "boost", "BoostLockfreeSpsc_Throughput/1024", "time", None),
    ("Slab vs malloc (64 B)", "Slab", "SlabAllocator_AllocDealloc/64", "malloc", "Malloc_AllocFree/64", "time", 1.5),
    ("Bump vs malloc (64 B)", "Bump", "BumpAllocator_Alloc/64", "malloc", "Malloc_AllocFree/64", "time", None),
    ("Arena vs malloc (64 B)", "Arena", "ArenaAllocator_Alloc/64", "malloc", "Malloc_AllocFree/64", "time", None),
    ("Slab vs make_shared (64 B)", "Slab", "SlabAllocator_AllocDealloc/64", "make_shared", "MakeShared_AllocDealloc", "time", None),
    ("intrusive_ptr vs shared_ptr copy", "intrusive", "SessionPtr_Copy", "shared", "SharedPtr_Copy", "time", 2.0),
    ("Zero-copy ring vs naive (512 B)", "RingBuffer", "RingBuffer_WriteRead/512", "Naive", "NaiveBuffer_CopyWrite/512", "bytes", 2.0),
    ("Zero-copy ring vs naive (64 B)", "RingBuffer", "RingBuffer_WriteRead/64", "Naive", "NaiveBuffer_CopyWrite/64", "bytes", None),
    ("Zero-copy ring vs naive (4096 B)", "RingBuffer", "RingBuffer_WriteRead/4096", "Naive", "NaiveBuffer_CopyWrite/4096", "bytes", None),
    ("flat_map vs std::unordered_map iterate (10k sessions)", "flat_map", "FlatMap_SessionIterate/10000", "std", "StdMap_SessionIterate/10000", "time", 1.5),
    ("flat_map vs std::unordered_map lookup (100k sessions)", "flat_map", "FlatMap_SessionLookup/100000", "std", "StdMap_SessionLookup/100000", "time", None),
    ("CRC32C hardware vs software (4 KiB)", "SSE4.2", "Crc32c_Hardware/4096", "table", "Crc32c_Software/4096", "time", None),
    ("FlatBuffers vs heap build (512 B)", "FB", "FlatBuffers_Build/512", "Heap", "HeapAlloc_Build/512", "time", None),
    ("FlatBuffers vs heap read (512 B)", "FB", "FlatBuffers_Read/512", "Heap", "HeapAlloc_Read/512", "time", None),
    ("FlatBuffers verify + read vs heap read (512 B)", "FB verified", "FlatBuffers_VerifyRead/512", "Heap", "HeapAlloc_Read/512", "time", None),
    ("SPSC vs MPSC push refused when full", "SPSC", "SpscQueue_Backpressure", "MPSC", "MpscQueue_Backpressure", "time", None),
    ("Dispatcher: type table vs unordered_flat_map (100 types)", "table", "Dispatcher_Lookup/100", "flat_map", "Dispatcher_LookupFlatMap/100", "time", None),
    ("Dispatcher: type table vs std::unordered_map (100 types)", "table", "Dispatcher_Lookup/100", "std", "Dispatcher_LookupStdMap/100", "time", None),
    ("Frame pipeline: strix vs naive (512 B)", "strix", "FramePipeline/512", "naive", "FramePipeline_Naive/512", "time", None),
]

out = []
out.append("# strix component benchmarks (the Apex Core benchmark report's suite)\n")
ctx = data.get("context", {})
out.append(f"Command: `{command}`  ")
out.append(f"Host: {ctx.get('host_name', platform.node())}, {ctx.get('num_cpus', '?')} CPUs at "
           f"{ctx.get('mhz_per_cpu', '?')} MHz, {platform.system()} {platform.release()}, "
           f"build type {ctx.get('library_build_type', '?')} benchmark library; date {ctx.get('date', '?')}  ")
load = ctx.get("load_avg")
if load:
    out.append(f"Load average when the run started (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load)} "
               f"on {ctx.get('num_cpus', '?')} CPUs.  ")
out.append("Figures are medians of the repetitions. Each row's two sides ran in the same process, "
           "same run. The machine is shared and has 2 cores; absolute numbers drift, ratios less so.\n")
out.append("## Methodology comparison (Apex Core report, §9)\n")
out.append("| Comparison | Approach A | Approach B | Ratio (A faster by) | Target |")
out.append("|---|---|---|---|---|")
missing = []
for title, la, a, lb, b, metric, target in rows:
    if a not in median or b not in median:
        missing.append(title)
        continue
    if metric == "time":
        va, vb = ns(a), ns(b)
        ratio = vb / va
        sa, sb = fmt_ns(va), fmt_ns(vb)
    else:
        va, vb = rate(a, "bytes_per_second"), rate(b, "bytes_per_second")
        ratio = va / vb
        sa, sb = fmt_gbs(va), fmt_gbs(vb)
    verdict = "" if target is None else (f"≥ {target}x: {'met' if ratio >= target else 'NOT met'}")
    out.append(f"| {title} | {la}: {sa} | {lb}: {sb} | {ratio:.2f}x | {verdict} |")
if missing:
    out.append(f"\nMissing from this run: {', '.join(missing)}")

# Why a target may not hold here: the naive buffer differs from the ring only by one allocation
# and free per message, so the gap is the allocator's price on this platform.
if "RingBuffer_WriteRead/512" in median and "NaiveBuffer_CopyWrite/512" in median:
    ring_ns, naive_ns = ns("RingBuffer_WriteRead/512"), ns("NaiveBuffer_CopyWrite/512")
    ratio = naive_ns / ring_ns
    if ratio < 2.0:
        malloc_ns = ns("Malloc_AllocFree/256") if "Malloc_AllocFree/256" in median else float("nan")
        out.append("")
        out.append(f"**Ring vs naive below 2x:** both sides copy the 512-byte message in and out; the naive "
                   f"side adds one `new[]`/`delete[]` pair per message, which costs {naive_ns - ring_ns:.1f} ns "
                   f"here (glibc's malloc/free measures {malloc_ns:.1f} ns at 256 B in this run). The Apex "
                   "Core report measured 120 ns for malloc/free under MSVC on Windows, so the same design gave "
                   "3.9x there. On glibc the allocator is cheap (thread cache), and the ring's advantage at this "
                   "size is the allocation it avoids, not the copies.")

# FlatBuffers against the heap (Apex Core report, §5): building costs more, reading in place wins.
if all(n in median for n in ("FlatBuffers_Build/512", "HeapAlloc_Build/512", "FlatBuffers_Read/512",
                             "HeapAlloc_Read/512", "FlatBuffers_VerifyRead/512")):
    out.append("")
    out.append(f"**FlatBuffers vs heap:** the Apex Core benchmark report measured, at 512 B, build FB 105.0 ns vs heap 68.4 ns (heap "
               f"1.5x faster) and read FB 3.5 ns vs heap 68.4 ns (19.4x), MSVC on Windows (theirs). Here: build "
               f"{fmt_ns(ns('FlatBuffers_Build/512'))} vs {fmt_ns(ns('HeapAlloc_Build/512'))}, read "
               f"{fmt_ns(ns('FlatBuffers_Read/512'))} vs {fmt_ns(ns('HeapAlloc_Read/512'))}. The heap build makes "
               "the object only, not wire bytes, as Apex Core's did; bytes from a peer also need FlatBuffers' "
               f"verifier ({fmt_ns(ns('FlatBuffers_VerifyRead/512'))} with it).")

# --- Apex Core report, §10: the assembled engine ---------------------------------------------
# Engine-level rows are registered once per poller backend (bench/bench_backends.hpp): the first
# backend keeps Apex Core's names, others add _<backend> to the family; the label names the
# backend. canonical() folds both into (Apex Core's name, backend).


def canonical(b):
    label = b.get("label") or None
    parts = b["run_name"].split("/")
    fam = parts[0]
    if label and fam.endswith("_" + label):
        fam = fam[: -len(label) - 1]
    rest = [p for p in parts[1:] if p not in ("real_time", "manual_time") and not p.startswith("iterations:")]
    return "/".join([fam] + rest), label


by_canon = {}
backends = []
for b in median.values():
    name, label = canonical(b)
    by_canon[(name, label)] = b
    if label and label not in backends and name.startswith(("CrossCore_", "Session_")):
        backends.append(label)


def per_item_ns(b):
    """Time per item (round trip, task, frame, lookup): items_per_second is counted on the clock
    the benchmark is judged by, and a chain of round trips or a stream of tasks is many items."""
    if b.get("items_per_second"):
        return 1e9 / b["items_per_second"]
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    return (b["real_time"] if wall_clock(b) else b["cpu_time"]) * scale


def fmt_rate(b, unit):
    if "bytes_per_second" in b:
        return f"{b['bytes_per_second'] / 1e6:,.1f} MB/s"
    if "items_per_second" in b:
        return f"{b['items_per_second']:,.0f} {unit}/s"
    return "-"


# The Apex Core report's own figures (v0.5.10.0 on an Intel i5-9300H, 4C/8T, Windows, MSVC 19.44): theirs.
seed_e2e = {
    "CrossCore_Latency/spin_us:0": "24.3 µs real (9.4 µs CPU) per round trip",
    "CrossCore_PostThroughput/batch:256": "1.0 µs per task, 976,114 tasks/s",
    "FramePipeline/64": "7.0 µs real (6.1 µs CPU), 12.4 MB/s",
    "FramePipeline/512": "7.1 µs real (6.8 µs CPU), 76.7 MB/s",
    "FramePipeline/4096": "7.3 µs real (6.8 µs CPU), 604.0 MB/s",
    "Session_EchoRoundTrip/64": "8.9 µs real (8.2 µs CPU), 9.3 MB/s",
    "Session_EchoRoundTrip/512": "8.4 µs real (8.2 µs CPU), 63.9 MB/s",
    "Session_EchoRoundTrip/4096": "8.7 µs real (8.5 µs CPU), 480.8 MB/s",
}
# (Apex Core's name or ours, what strix runs, unit of an item, one row per backend?)
e2e_rows = [
    ("CrossCore_Latency/spin_us:0", "task shard 0 -> 1, one back 1 -> 0; idle shards sleep (default)", "round trip", True),
    ("CrossCore_Latency/spin_us:50", "the same, shards poll 50 µs before sleeping (`poll_spin`)", "round trip", True),
    ("CrossCore_PostThroughput/batch:256", "tasks shard 0 -> 1, 256 posts per loop turn, order checked", "task", True),
    ("CrossCore_PostThroughput/batch:1", "the same, one post per loop turn", "task", True),
    ("FramePipeline/64", "ring -> header cut -> FlatBuffers verify -> type table -> handler", "frame", False),
    ("FramePipeline/512", "", "frame", False),
    ("FramePipeline/4096", "", "frame", False),
    ("FramePipeline_Naive/64", "per-frame copy, heap message, std::unordered_map + std::function", "frame", False),
    ("FramePipeline_Naive/512", "", "frame", False),
    ("FramePipeline_Naive/4096", "", "frame", False),
    ("Session_EchoRoundTrip/64", "strix server (1 shard) echoes; blocking client, bytes checked", "round trip", True),
    ("Session_EchoRoundTrip/512", "", "round trip", True),
    ("Session_EchoRoundTrip/4096", "", "round trip", True),
]
e2e_lines = []
for name, what, unit, per_backend in e2e_rows:
    for be in (backends if per_backend else [None]):
        b = by_canon.get((name, be))
        if b is None:
            continue
        extra = ""
        if "overflows" in b:
            extra = f" ({b['overflows']:.2f} overflows per task)"
        if "misaligned_bodies" in b:
            extra = f" ({b['misaligned_bodies'] * 100:.0f}% of bodies copied to align)"
        clock = "wall" if wall_clock(b) else "CPU"
        e2e_lines.append(f"| {name} | {be or '-'} | {what} | {fmt_ns(per_item_ns(b))} per {unit} ({clock}) | "
                         f"{fmt_rate(b, unit + 's')}{extra} | {seed_e2e.get(name, '-')} |")
if e2e_lines:
    out.append("\n## End-to-end (Apex Core report, §10)\n")
    out.append("strix's figures are medians of this run's repetitions; the Apex Core report's are theirs (v0.5.10.0, "
               "Intel i5-9300H 4C/8T, Windows, MSVC 19.44): another machine, OS and compiler, quoted for "
               "scale, not as a ratio. Engine rows run once per poller backend (epoll, the default, and io_uring). "
               "Shards are not pinned; the shards, the benchmark thread and everything else on the "
               "machine share its CPUs.\n")
    out.append("| Benchmark | Backend | What strix runs | strix time | strix throughput | Apex Core (theirs) |")
    out.append("|---|---|---|---|---|---|")
    out.extend(e2e_lines)

seed_components = {
    "FlatBuffers_Build/64": "100.4 ns", "FlatBuffers_Build/512": "105.0 ns", "FlatBuffers_Build/4096": "160.4 ns",
    "HeapAlloc_Build/64": "62.5 ns", "HeapAlloc_Build/512": "68.4 ns", "HeapAlloc_Build/4096": "128.3 ns",
    "FlatBuffers_Read/64": "3.4 ns", "FlatBuffers_Read/512": "3.5 ns", "FlatBuffers_Read/4096": "3.6 ns",
    "HeapAlloc_Read/64": "64.2 ns", "HeapAlloc_Read/512": "68.4 ns", "HeapAlloc_Read/4096": "114.4 ns",
    "SpscQueue_Backpressure": "3.2 ns", "MpscQueue_Backpressure": "5.9 ns",
    "Dispatcher_Lookup/10": "5.5 ns (flat_map)", "Dispatcher_Lookup/100": "5.8 ns (flat_map)",
    "Dispatcher_Lookup/1000": "5.2 ns (flat_map)",
}
component_rows = [
    ("FlatBuffers_Build/64", "reused builder: payload vector, table, Finish"), ("FlatBuffers_Build/512", ""),
    ("FlatBuffers_Build/4096", ""),
    ("HeapAlloc_Build/64", "new struct + new payload (memcpy) + delete"), ("HeapAlloc_Build/512", ""),
    ("HeapAlloc_Build/4096", ""),
    ("FlatBuffers_Read/64", "GetRoot + fields, in place"), ("FlatBuffers_Read/512", ""), ("FlatBuffers_Read/4096", ""),
    ("FlatBuffers_VerifyRead/64", "Verifier, then the same read"), ("FlatBuffers_VerifyRead/512", ""),
    ("FlatBuffers_VerifyRead/4096", ""),
    ("HeapAlloc_Read/64", "unpack wire bytes into a new struct (new + memcpy) + fields"), ("HeapAlloc_Read/512", ""),
    ("HeapAlloc_Read/4096", ""),
    ("SpscQueue_Backpressure", "try_push refused by a full SPSC queue (1024)"),
    ("MpscQueue_Backpressure", "try_push refused by a full MPSC queue (1024)"),
    ("Mesh_Backpressure", "post_to into a full mesh channel: queued in the overflow list, FIFO kept"),
    ("Dispatcher_Lookup/10", "type table (array indexed by the 16-bit type)"), ("Dispatcher_Lookup/100", ""),
    ("Dispatcher_Lookup/1000", ""),
    ("Dispatcher_LookupFlatMap/10", "boost::unordered_flat_map (Apex Core's choice)"),
    ("Dispatcher_LookupFlatMap/100", ""), ("Dispatcher_LookupFlatMap/1000", ""),
    ("Dispatcher_LookupStdMap/10", "std::unordered_map"), ("Dispatcher_LookupStdMap/100", ""),
    ("Dispatcher_LookupStdMap/1000", ""),
]
comp_lines = []
for name, what in component_rows:
    b = by_canon.get((name, None))
    if b is None:
        continue
    comp_lines.append(f"| {name} | {what} | {fmt_ns(per_item_ns(b))} | {seed_components.get(name, '-')} |")
if comp_lines:
    out.append("\n## Serialisation, backpressure and dispatch rows (Apex Core report, §2, §5, §6)\n")
    out.append("Per message, per refused push, per overflowing post or per lookup; medians of this run. Apex "
               "Core's figures are theirs (CPU time; same machine as above).\n")
    out.append("| Benchmark | What strix runs | strix | Apex Core (theirs) |")
    out.append("|---|---|---|---|")
    out.extend(comp_lines)

out.append("\n## All benchmarks (medians)\n")
out.append("| Benchmark | CPU time | Real time | Throughput |")
out.append("|---|---|---|---|")
for name, b in median.items():
    unit = b.get("time_unit", "ns")
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    thr = []
    if "items_per_second" in b:
        thr.append(f"{b['items_per_second'] / 1e6:.1f}M items/s")
    if "bytes_per_second" in b:
        thr.append(fmt_gbs(b["bytes_per_second"]))
    out.append(f"| {name} | {fmt_ns(b['cpu_time'] * scale)} | {fmt_ns(b['real_time'] * scale)} | {', '.join(thr) or '-'} |")

open(dst, "w").write("\n".join(out) + "\n")
