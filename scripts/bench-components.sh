#!/usr/bin/env bash
# make bench-components: the Apex Core report's component suite with repetitions, then the
# comparison table. Writes build/bench/components.json (Google Benchmark JSON with median
# aggregates) and build/bench/components.md. BENCH_REPS (default 5) and BENCH_MIN_TIME (default
# 0.2 s) override.
set -euo pipefail
build=${1:-build}
out="$build/bench"
mkdir -p "$out"
reps=${BENCH_REPS:-5}
min_time=${BENCH_MIN_TIME:-0.2}
"$build/bin/strix-bench-components" \
  --benchmark_repetitions="$reps" \
  --benchmark_min_time="$min_time" \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/components.json" \
  --benchmark_out_format=json
python3 "$(dirname "$0")/components_report.py" "$out/components.json" "$out/components.md" \
  "$build/bin/strix-bench-components --benchmark_repetitions=$reps --benchmark_min_time=$min_time"
echo "wrote $out/components.json and $out/components.md"
