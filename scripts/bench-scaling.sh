#!/usr/bin/env bash
# make bench-scaling: per-core vs shared io_context scaling (Apex Core report, §10).
# Writes build/bench/scaling.json and build/bench/scaling.md. BENCH_REPS (default 3) overrides.
set -euo pipefail
build=${1:-build}
out="$build/bench"
mkdir -p "$out"
reps=${BENCH_REPS:-3}
"$build/bin/strix-bench-scaling" \
  --benchmark_repetitions="$reps" \
  --benchmark_min_time=0.3 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/scaling.json" \
  --benchmark_out_format=json
python3 "$(dirname "$0")/scaling_report.py" "$out/scaling.json" "$out/scaling.md" \
  "$build/bin/strix-bench-scaling --benchmark_repetitions=$reps --benchmark_min_time=0.3"
echo "wrote $out/scaling.md"
