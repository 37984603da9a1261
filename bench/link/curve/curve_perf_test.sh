#!/usr/bin/env bash
# ctest driver for the CURVE perf tools (strix-link-curve-thr, strix-link-curve-lat), each at
# small counts.
#   curve_perf_test.sh <bin dir> <work dir>
# Positive: both tools on both libraries at 8 B (a stamp without the marker) and 64 B: the
# contract's lines (libzmq's local_thr and the latency tools' lines) with the counts asked for,
# exit 0, nothing on stderr.
# Negative: wrong arguments (a library other than strix|zmq, a missing or zero count, a bad size,
# an unknown option) exit 2 with the usage on stderr; --help exits 0 with it on stdout.
# shellcheck source=../../test_lib.sh
. "$(dirname "$0")/../../test_lib.sh"
bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"

for t in curve-thr curve-lat; do
  [ -x "$bin/strix-link-$t" ] || fail "$bin/strix-link-$t is not built"
done

run() {  # <tool> <args...>: exit 0 and an empty stderr, output in $work/out
  local rc=0
  timeout 60 "$bin/$1" "${@:2}" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/err" >&2; fail "$* exited $rc"; }
  [ ! -s "$work/err" ] || { cat "$work/err" >&2; fail "$* wrote to stderr"; }
}

for lib in strix zmq; do
  for size in 8 64; do
    run strix-link-curve-thr "$lib" "$size" 20000
    thr_lines "$work/out" "$size" 20000
    run strix-link-curve-lat "$lib" "$size" 300
    lat_lines "$work/out" "$size" 300
    [ "$(wc -l <"$work/out")" = 5 ] || { cat "$work/out" >&2; fail "curve-lat $lib printed other lines than five"; }
  done
done

for t in curve-thr curve-lat; do
  usage_checks "strix-link-$t" "^usage: strix-link-$t strix\\|zmq " "" "strix 64" "libzmq 64 10" "strix 64 0" "zmq x 10" \
    "strix 64 10 --bogus"
done
echo "curve perf tools: all checks passed"
