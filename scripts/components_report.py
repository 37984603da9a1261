#!/usr/bin/env python3
"""Turns Google Benchmark JSON (with median aggregates) into seed 000's comparison tables.

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


def ns(name):
    b = median[name]
    t = b["cpu_time"] if "real_time" not in b.get("run_name", "") else b["real_time"]
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
]

out = []
out.append("# strix component benchmarks (seed 000's suite)\n")
ctx = data.get("context", {})
out.append(f"Command: `{command}`  ")
out.append(f"Host: {ctx.get('host_name', platform.node())}, {ctx.get('num_cpus', '?')} CPUs at "
           f"{ctx.get('mhz_per_cpu', '?')} MHz, {platform.system()} {platform.release()}, "
           f"build type {ctx.get('library_build_type', '?')} benchmark library; date {ctx.get('date', '?')}  ")
out.append("Figures are medians of the repetitions. Each row's two sides ran in the same process, "
           "same run. The machine is shared and has 2 cores; absolute numbers drift, ratios less so.\n")
out.append("## Methodology comparison (seed 000 §9)\n")
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
                   f"here (glibc's malloc/free measures {malloc_ns:.1f} ns at 256 B in this run). Seed 000 "
                   "measured 120 ns for malloc/free under MSVC on Windows, so the same design gave 3.9x there. "
                   "On glibc the allocator is cheap (thread cache), and the ring's advantage at this size is "
                   "the allocation it avoids, not the copies.")

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
