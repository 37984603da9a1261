#!/usr/bin/env bash
# ctest driver: runs the component suite's end-to-end rows (Apex Core report, §10) and the component
# rows that came with them, each very briefly, and fails when any of them reports an error (each one
# checks its own work: handler counts, echoed bytes, task order, queue refusals) or did not run.
#   components_smoke_test.sh <strix-bench-components> <work dir>
set -euo pipefail

bin=$1 work=$2
mkdir -p "$work"
out="$work/smoke.json"

# Every family the test expects, as Google Benchmark names its runs (a prefix up to the first /).
families=(
  CrossCore_Latency CrossCore_PostThroughput FramePipeline FramePipeline_Naive Session_EchoRoundTrip
  FlatBuffers_Build FlatBuffers_Read FlatBuffers_VerifyRead HeapAlloc_Build HeapAlloc_Read
  SpscQueue_Backpressure MpscQueue_Backpressure Mesh_Backpressure
  Dispatcher_Lookup Dispatcher_LookupFlatMap Dispatcher_LookupStdMap
)
filter="^($(IFS='|'; echo "${families[*]}"))(/|$)"

"$bin" --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_repetitions=1 \
  --benchmark_out="$out" --benchmark_out_format=json > "$work/smoke.txt" 2>&1 \
  || { cat "$work/smoke.txt"; echo "FAIL: the benchmark binary exited with an error" >&2; exit 1; }

python3 - "$out" "${families[@]}" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
runs = data["benchmarks"]
bad = [f'{b["name"]}: {b.get("error_message", "?")}' for b in runs if b.get("error_occurred")]
ran = {b["run_name"].split("/")[0] for b in runs}
missing = [f for f in sys.argv[2:] if f not in ran]
for b in runs:
    print(f'{b["name"]}: {b["iterations"]} iterations' + (" ERROR" if b.get("error_occurred") else ""))
if bad:
    print("FAIL: benchmarks reported errors:\n  " + "\n  ".join(bad), file=sys.stderr)
if missing:
    print("FAIL: benchmarks that did not run: " + ", ".join(missing), file=sys.stderr)
if bad or missing:
    sys.exit(1)
print(f"ok: {len(runs)} runs of {len(ran)} families, no errors")
PY

# Negative checks: with a fault injected (bench/fault_injection.hpp) the benchmark must report an
# error rather than a time: a misrouted message in the pipeline, a corrupted echo.
for fault in pipeline:FramePipeline/64 echo:Session_EchoRoundTrip/64; do
  name=${fault%%:*} bench=${fault#*:}
  STRIX_BENCH_FAULT=$name "$bin" --benchmark_filter="^$bench(/|$)" --benchmark_min_time=0.01 \
    --benchmark_repetitions=1 --benchmark_out="$work/fault-$name.json" --benchmark_out_format=json \
    > "$work/fault-$name.txt" 2>&1 || { cat "$work/fault-$name.txt"; echo "FAIL: $bench crashed" >&2; exit 1; }
  python3 - "$work/fault-$name.json" "$bench" "$name" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
if not runs or not all(b.get("error_occurred") for b in runs):
    print(f"FAIL: {sys.argv[2]} did not notice the injected fault '{sys.argv[3]}'", file=sys.stderr)
    sys.exit(1)
print(f"ok: {sys.argv[2]} with fault '{sys.argv[3]}' reported: {runs[0].get('error_message')}")
PY
done
