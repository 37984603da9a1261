#!/usr/bin/env bash
# ctest driver for the blocking-API family of the link perf tools (strix-link-blocking-*,
# zmq-blocking-*), each at small counts.
#   blocking_perf_test.sh <bin dir> <work dir>
# Positive: strix -> strix throughput and latency over tcp, ipc and inproc; libzmq -> libzmq over
# tcp and inproc; the cross-runs strix sender -> libzmq receiver and back, strix REQ -> libzmq REP
# and back (tcp): the contract's lines with the counts asked for, exit 0.
# Negative: a sender of the wrong size makes the strix receiver exit 1 and say why; wrong
# arguments exit 2; --help exits 0.
set -euo pipefail

bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

roles=(local-thr remote-thr local-lat remote-lat inproc-thr inproc-lat)
for t in "${roles[@]}"; do
  [ -x "$bin/strix-link-blocking-$t" ] || fail "$bin/strix-link-blocking-$t is not built"
  [ -x "$bin/zmq-blocking-$t" ] || fail "$bin/zmq-blocking-$t is not built"
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

expect_line() {  # <file> <regex>
  grep -Eq "$2" "$1" || { cat "$1" >&2; fail "$1 lacks a line matching '$2'"; }
}

# pair <receiver> <sender> <endpoint> <args...>: the receiver in the background, the sender in the
# foreground (it reconnects until the bind is there); both must exit 0.
pair() {
  local recv=$1 send=$2 ep=$3
  shift 3
  timeout 60 "$bin/$recv" "$ep" "$@" >"$work/recv.out" 2>"$work/recv.err" &
  local rp=$! rrc=0 src=0
  pids+=("$rp")
  timeout 60 "$bin/$send" "$ep" "$@" >"$work/send.out" 2>"$work/send.err" || src=$?
  wait "$rp" || rrc=$?
  if [ "$rrc" != 0 ] || [ "$src" != 0 ]; then
    cat "$work/recv.err" "$work/send.err" >&2
    fail "$send -> $recv over $ep ($*): receiver exited $rrc, sender $src"
  fi
}

thr_lines() {  # <file> <size> <count>
  expect_line "$1" "^message size: $2 \\[B\\]$"
  expect_line "$1" "^message count: $3$"
  expect_line "$1" '^mean throughput: [0-9]+ \[msg/s\]$'
  expect_line "$1" '^mean throughput: [0-9]+\.[0-9]{3} \[Mb/s\]$'
  [ "$(wc -l <"$1")" = 4 ] || { cat "$1" >&2; fail "$1 has other lines than libzmq's four"; }
}

lat_lines() {  # <file> <size> <count>
  expect_line "$1" "^message size: $2 \\[B\\]$"
  expect_line "$1" "^roundtrip count: $3$"
  expect_line "$1" '^average latency: [0-9]+\.[0-9]{3} \[us\]$'
  expect_line "$1" '^p50 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
  expect_line "$1" '^p99 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
}

# Each family on its own.
for f in strix-link-blocking zmq-blocking; do
  eps=("tcp://127.0.0.1:$(free_port)")
  # libzmq's ipc is left out: it lost the last few hundred messages at close in about one run of
  # six at 300,000 (zmq-local-thr/zmq-remote-thr too), which is libzmq's, not this family's.
  [ "$f" = strix-link-blocking ] && eps+=("ipc://$work/thr.sock")
  for ep in "${eps[@]}"; do
    pair "$f-local-thr" "$f-remote-thr" "$ep" 64 20000
    thr_lines "$work/recv.out" 64 20000
    [ ! -s "$work/send.out" ] || fail "$f-remote-thr printed something on success"
    pair "$f-local-thr" "$f-remote-thr" "$ep" 2000 500
    thr_lines "$work/recv.out" 2000 500
    pair "$f-local-lat" "$f-remote-lat" "$ep" 64 300
    lat_lines "$work/send.out" 64 300
  done
  timeout 60 "$bin/$f-inproc-thr" 64 20000 >"$work/ithr.out" || fail "$f-inproc-thr failed"
  thr_lines "$work/ithr.out" 64 20000
  timeout 60 "$bin/$f-inproc-lat" 64 300 >"$work/ilat.out" || fail "$f-inproc-lat failed"
  lat_lines "$work/ilat.out" 64 300
done

# Cross-runs, tcp: each family's sender against the other's receiver.
pair zmq-blocking-local-thr strix-link-blocking-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
pair strix-link-blocking-local-thr zmq-blocking-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
pair zmq-blocking-local-lat strix-link-blocking-remote-lat "tcp://127.0.0.1:$(free_port)" 64 300
lat_lines "$work/send.out" 64 300
pair strix-link-blocking-local-lat zmq-blocking-remote-lat "tcp://127.0.0.1:$(free_port)" 64 300
lat_lines "$work/send.out" 64 300

# A strix receiver given messages of the wrong size exits 1 and says which.
port=$(free_port)
timeout 60 "$bin/strix-link-blocking-local-thr" "tcp://127.0.0.1:$port" 64 10 >/dev/null 2>"$work/bad.err" &
bad=$!
pids+=("$bad")
timeout 30 "$bin/zmq-blocking-remote-thr" "tcp://127.0.0.1:$port" 65 10 >/dev/null 2>&1 || true
rc=0
wait "$bad" || rc=$?
[ "$rc" = 1 ] || fail "a 64-byte receiver given 65-byte messages exited $rc, not 1"
expect_line "$work/bad.err" '^strix-link-blocking-local-thr: message 0 has 65 bytes, expected 64$'

# Wrong arguments exit 2 with the usage on stderr; --help exits 0 with it on stdout.
for f in strix-link-blocking zmq-blocking; do
  for args in "" "tcp://127.0.0.1:1 64" "tcp://127.0.0.1:1 64 0" "tcp://127.0.0.1:1 x 10" \
              "tcp://127.0.0.1:1 64 10 --bogus"; do
    rc=0
    # shellcheck disable=SC2086  # the arguments are meant to split
    "$bin/$f-local-thr" $args >/dev/null 2>"$work/usage.err" || rc=$?
    [ "$rc" = 2 ] || fail "$f-local-thr $args exited $rc, not 2"
    expect_line "$work/usage.err" "^usage: $f-local-thr "
  done
  for t in "${roles[@]}"; do
    "$bin/$f-$t" --help >"$work/help.out" || fail "$f-$t --help exited nonzero"
    expect_line "$work/help.out" "^usage: $f-$t "
  done
done
echo "blocking perf tools: all checks passed"
