#!/usr/bin/env bash
# make fuzz: builds strix's libFuzzer targets (fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/, runs each for FUZZ_SECONDS, and writes libFuzzer's
# final figures (executions per second, coverage) to build-fuzz/fuzz-report.md.
# Exits non-zero when any target finds a crash, a leak, a timeout or an out-of-memory; the input
# that did it is kept in build-fuzz/artifacts/<target>/ (docs/fuzzing.md: how to reproduce).
#
#   FUZZ_SECONDS=60        seconds per target
#   FUZZ_TARGETS="a b"     a subset (default: all)
#   FUZZ_JOBS=2            targets run at once (default: the cores; each still gets FUZZ_SECONDS)
#   FUZZ_CXX=clang++-16    the compiler (FUZZ_CC likewise)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"frame_decoder framers zmtp chat_request chat_config metrics_http tls_stream curve ws zmq_api http jwt"}
cxx=${FUZZ_CXX:-clang++-16}
cc=${FUZZ_CC:-clang-16}
out=build-fuzz
report=$out/fuzz-report.md

command -v "$cxx" >/dev/null || { echo "strix: $cxx not found (scripts/install-deps.sh installs clang-16)" >&2; exit 1; }
llvm_bin=$(dirname "$(readlink -f "$(command -v "$cxx")")")

echo "== fuzz: building the targets with $cxx in $out/"
CC=$cc CXX=$cxx cmake -S fuzz -B $out -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build $out -j "${JOBS:-$(nproc)}"

# Findings abort with a symbolized stack; leaks are checked at exit (LeakSanitizer, on with ASan).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:symbolize=1}
[ -x "$llvm_bin/llvm-symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$llvm_bin/llvm-symbolizer"

mkdir -p $out/logs
{
  echo "# strix fuzz report"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $seconds s per target, ${FUZZ_JOBS:-$(nproc)} at once, $("$cxx" --version | head -1), ASan + UBSan, $(nproc) cores."
  echo "runs, exec/s, cov, ft and corpus are libFuzzer's (\`#runs DONE cov: ft: corp: exec/s:\`, stat::*):"
  echo "cov = edges covered in the whole binary (harness, the strix code it links, inlined library code),"
  echo "ft = features, corpus = inputs kept (seeds from fuzz/corpus/ plus what the run found)."
  echo "Code under test: the functions of the code the target is for (see scripts/fuzz.sh) that the final"
  echo "corpus reaches, and their edges (-print_coverage). UBSan's checks are branches too (a shift or a"
  echo "multiplication gets its own edges for the failing case), which a clean run never takes: 100 % of"
  echo "edges is out of reach."
  echo
  echo "| target | result | runs | exec/s | cov | ft | corpus | code under test: functions | edges | peak RSS |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} > $report

# What each target is for, as a regex on libFuzzer's -print_coverage lines (function and file).
declare -A under_test=(
  [frame_decoder]='/src/codec/frame_codec\.cpp|/include/strix/codec/frame_codec\.hpp'
  [framers]='::cut\(std::span|strix::decode_frame\('
  [zmtp]='/src/link/zmtp/zmtp\.cpp|/include/strix/link/zmtp\.hpp'
  [chat_request]='/apps/chat/|chat_generated\.h|/flatbuffers/verifier\.h'
  [chat_config]='/apps/chat/server/options/chat_options\.cpp'
  [metrics_http]='http_head::cut|http_response_for|namespace\)::response\('
  [tls_stream]='/src/net/tls/'
  [curve]='/src/link/security/curve\.cpp|/src/link/security/mechanism\.cpp'
  [ws]='/src/net/ws/'
  [zmq_api]='/src/zmq/'
  [http]='/src/net/http/'
  [jwt]='/apps/chat/server/login/jwt'
)

# One target: runs it, writes its report row to $out/rows/<target> and its final line to the log.
mkdir -p $out/rows
run_target() {
  local t=$1
  local bin=$out/${t}_fuzz
  local corpus=$out/corpus/$t
  artifacts=$out/artifacts/$t/
  log=$out/logs/$t.log
  mkdir -p "$corpus" "$artifacts"
  extra=()
  # parse_options prints one sentence per rejected file: closed for the run (libFuzzer keeps
  # its own output and the sanitizers' reports).
  [ "$t" = chat_config ] && extra+=(-close_fd_mask=2)
  # The TLS transport logs each failed handshake (rate-limited): closed for the run.
  [ "$t" = tls_stream ] && extra+=(-close_fd_mask=2)
  echo "== fuzz: $t for ${seconds}s"
  status=0
  "$bin" "$corpus" "fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts" "${extra[@]}" > "$log" 2>&1 || status=$?

  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  field() { sed -nE "s/.* $1: ([^ ]+).*/\1/p" <<< "$done_line"; }
  final_stat() { sed -nE "s/^stat::$1:[[:space:]]+([0-9]+).*/\1/p" "$log" | tail -1; }
  runs=$(final_stat number_of_executed_units)
  eps=$(final_stat average_exec_per_sec)
  rss=$(final_stat peak_rss_mb)
  cov=$(field cov)
  ft=$(field ft)
  corp=$(field corp)
  result=ok
  if [ "$status" -ne 0 ] || [ -z "$done_line" ]; then
    found=$(ls "$artifacts" 2>/dev/null | head -1)
    result="FAILED (exit $status${found:+, $artifacts$found})"
    echo "strix: fuzz target $t failed (exit $status); log $log, input in $artifacts" >&2
    grep -E 'ERROR|SUMMARY|invariant broken|runtime error|#[0-9]+ 0x' "$log" | head -30 >&2 || true
  fi
  funcs="-" edges="-"
  if [ "$result" = ok ]; then
    # The final corpus once more, printing which functions and edges it reaches.
    "$bin" "$corpus" "fuzz/corpus/$t" -runs=0 -print_coverage=1 "${extra[@]}" > "$out/logs/$t.cov" 2>&1 || true
    read -r funcs edges < <(grep -E '^(COVERED|UNCOVERED)_FUNC:' "$out/logs/$t.cov" | grep -E "${under_test[$t]}" | awk '
      { n++; if ($1 == "COVERED_FUNC:") c++; split($5, e, "/"); a += e[1]; b += e[2] }
      END { if (n) printf "%d/%d_(%d%%) %d/%d_(%d%%)\n", c, n, 100*c/n, a, b, (b ? 100*a/b : 0); else print "? ?" }')
    funcs=${funcs//_/ } edges=${edges//_/ }
  fi
  echo "| $t | $result | ${runs:-?} | ${eps:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $funcs | $edges | ${rss:-?} MB |" > $out/rows/$t
  echo "== fuzz: $t done: ${done_line:-no final line}"
}

for t in $targets; do
  [ -x "$out/${t}_fuzz" ] || { echo "strix: no fuzz target $t" >&2; exit 1; }
  rm -f "$out/rows/$t"
done
jobs_max=${FUZZ_JOBS:-$(nproc)}
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_target "$t" &
done
wait

failed=()
for t in $targets; do
  if [ -f "$out/rows/$t" ]; then cat "$out/rows/$t" >> $report; else echo "| $t | FAILED (no result) | | | | | | | | |" >> $report; fi
  grep -q '^| [a-z_]* | ok |' "$out/rows/$t" 2>/dev/null || failed+=("$t")
done

echo
cat $report
if [ ${#failed[@]} -gt 0 ]; then
  echo "strix: fuzzing found problems in: ${failed[*]} (see $report and docs/fuzzing.md)" >&2
  exit 1
fi
