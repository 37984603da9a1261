#!/usr/bin/env bash
# ctest driver for the CURVE perf tools (strix-link-curve-thr, strix-link-curve-lat), each at
# small counts.
#   curve_perf_test.sh <bin dir> <work dir>
# Positive: both tools on both libraries at 8 B (a stamp without the marker) and 64 B: the
# contract's lines (libzmq's local_thr and the latency tools' lines) with the counts asked for,
# exit 0, nothing on stderr.
# Negative: wrong arguments (a library other than strix|zmq, a missing or zero count, a bad size,
# an unknown option) exit 2 with the usage on stderr; --help exits 0 with it on stdout.
set -euo pipefail

bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

for t in curve-thr curve-lat; do
  [ -x "$bin/strix-link-$t" ] || fail "$bin/strix-link-$t is not built"
done

expect_line() {  # <file> <regex>
  grep -Eq "$2" "$1" || { cat "$1" >&2; fail "$1 lacks a line matching '$2'"; }
}

run() {  # <tool> <args...>: exit 0 and an empty stderr, output in $work/out
  local rc=0
  timeout 60 "$bin/$1" "${@:2}" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/err" >&2; fail "$* exited $rc"; }
  [ ! -s "$work/err" ] || { cat "$work/err" >&2; fail "$* wrote to stderr"; }
}

for lib in strix zmq; do
  for size in 8 64; do
    run strix-link-curve-thr "$lib" "$size" 20000
    expect_line "$work/out" "^message size: $size \\[B\\]$"
    expect_line "$work/out" '^message count: 20000$'
    expect_line "$work/out" '^mean throughput: [0-9]+ \[msg/s\]$'
    expect_line "$work/out" '^mean throughput: [0-9]+\.[0-9]{3} \[Mb/s\]$'
    [ "$(wc -l <"$work/out")" = 4 ] || { cat "$work/out" >&2; fail "curve-thr $lib printed other lines than libzmq's four"; }

    run strix-link-curve-lat "$lib" "$size" 300
    expect_line "$work/out" "^message size: $size \\[B\\]$"
    expect_line "$work/out" '^roundtrip count: 300$'
    expect_line "$work/out" '^average latency: [0-9]+\.[0-9]{3} \[us\]$'
    expect_line "$work/out" '^p50 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
    expect_line "$work/out" '^p99 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
    [ "$(wc -l <"$work/out")" = 5 ] || { cat "$work/out" >&2; fail "curve-lat $lib printed other lines than five"; }
  done
done

for t in curve-thr curve-lat; do
  for args in "" "strix 64" "libzmq 64 10" "strix 64 0" "zmq x 10" "strix 64 10 --bogus"; do
    rc=0
    # shellcheck disable=SC2086  # the arguments are meant to split
    "$bin/strix-link-$t" $args >/dev/null 2>"$work/usage.err" || rc=$?
    [ "$rc" = 2 ] || fail "strix-link-$t $args exited $rc, not 2"
    expect_line "$work/usage.err" "^usage: strix-link-$t strix\\|zmq "
  done
  "$bin/strix-link-$t" --help >"$work/help.out" || fail "strix-link-$t --help exited nonzero"
  expect_line "$work/help.out" "^usage: strix-link-$t strix\\|zmq "
done
echo "curve perf tools: all checks passed"
