#!/usr/bin/env bash
# ctest driver for the libzmq perf tools (zmq-*): each one once at small counts.
#   zmq_perf_test.sh <bin dir> <work dir>
# Positive: throughput (pushpull and pubsub) over tcp and ipc, messages shorter than the 8-byte
# stamp, tcp latency, inproc throughput and latency, fan-out over tcp and inproc: libzmq's lines
# with the counts asked for, exit 0.
# Negative: a sender of the wrong size, and two senders whose sequence numbers interleave (so the
# receiver sees a number twice), make the receiver exit 1 and say why; wrong arguments exit 2.
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

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

expect_line() {  # <file> <regex>
  grep -Eq "$2" "$1" || { cat "$1" >&2; fail "$1 lacks a line matching '$2'"; }
}

# thr <endpoint> <receiver args...> -- <sender args...>: zmq-local-thr in the background,
# zmq-remote-thr in the foreground (libzmq reconnects until the bind is there); both must exit 0.
thr() {
  local ep=$1; shift
  local rargs=() sargs=()
  while [ "$1" != "--" ]; do rargs+=("$1"); shift; done
  shift
  sargs=("$@")
  timeout 60 "$bin/zmq-local-thr" "$ep" "${rargs[@]}" >"$work/recv.out" 2>"$work/recv.err" &
  local rp=$! rrc=0 src=0
  pids+=("$rp")
  timeout 60 "$bin/zmq-remote-thr" "$ep" "${sargs[@]}" >"$work/send.out" 2>"$work/send.err" || src=$?
  wait "$rp" || rrc=$?
  if [ "$rrc" != 0 ] || [ "$src" != 0 ]; then
    cat "$work/recv.err" "$work/send.err" >&2
    fail "throughput over $ep (${rargs[*]}): receiver exited $rrc, sender $src"
  fi
}

port=$(free_port)
thr "tcp://127.0.0.1:$port" 64 20000 -- 64 20000
expect_line "$work/recv.out" '^message size: 64 \[B\]$'
expect_line "$work/recv.out" '^message count: 20000$'
expect_line "$work/recv.out" '^mean throughput: [0-9]+ \[msg/s\]$'
expect_line "$work/recv.out" '^mean throughput: [0-9]+\.[0-9]{3} \[Mb/s\]$'

thr "ipc://$work/thr.sock" 8192 2000 --pattern pubsub -- 8192 2000 --pattern pubsub
expect_line "$work/recv.out" '^message count: 2000$'

# 1-byte messages carry the stamp's low byte only (it wraps at 256); 0-byte ones carry none. Too small
# for the marker, so the receiver is told to check the stamps (--seq on).
port=$(free_port)
thr "tcp://127.0.0.1:$port" 1 1000 --hwm 10 --seq on -- 1 1000 --hwm=10
port=$(free_port)
thr "tcp://127.0.0.1:$port" 0 100 -- 0 100

port=$(free_port)
timeout 60 "$bin/zmq-local-lat" "tcp://127.0.0.1:$port" 1024 500 >"$work/rep.out" 2>&1 &
rep=$!
pids+=("$rep")
timeout 60 "$bin/zmq-remote-lat" "tcp://127.0.0.1:$port" 1024 500 >"$work/lat.out" 2>&1 ||
  { cat "$work/lat.out" >&2; fail "zmq-remote-lat failed"; }
wait "$rep" || { cat "$work/rep.out" >&2; fail "zmq-local-lat failed"; }
expect_line "$work/lat.out" '^message size: 1024 \[B\]$'
expect_line "$work/lat.out" '^roundtrip count: 500$'
expect_line "$work/lat.out" '^average latency: [0-9]+\.[0-9]{3} \[us\]$'
expect_line "$work/lat.out" '^p50 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
expect_line "$work/lat.out" '^p99 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'

timeout 60 "$bin/zmq-inproc-thr" 1024 20000 --pattern pubsub >"$work/ithr.out" 2>&1 ||
  { cat "$work/ithr.out" >&2; fail "zmq-inproc-thr failed"; }
expect_line "$work/ithr.out" '^message count: 20000$'
timeout 60 "$bin/zmq-inproc-lat" 64 1000 >"$work/ilat.out" 2>&1 ||
  { cat "$work/ilat.out" >&2; fail "zmq-inproc-lat failed"; }
expect_line "$work/ilat.out" '^p99 roundtrip: '

for ep in "tcp://127.0.0.1:$(free_port)" "inproc://fanout-test"; do
  timeout 60 "$bin/zmq-fanout" "$ep" 4 64 5000 >"$work/fan.out" 2>&1 ||
    { cat "$work/fan.out" >&2; fail "zmq-fanout over $ep failed"; }
  expect_line "$work/fan.out" '^subscribers: 4$'
  expect_line "$work/fan.out" '^deliveries: 20000$'
  expect_line "$work/fan.out" '^aggregate throughput: [0-9]+ \[deliveries/s\]$'
done

# Wrong size: the receiver wants 64 bytes, the sender sends 32.
port=$(free_port)
timeout 60 "$bin/zmq-local-thr" "tcp://127.0.0.1:$port" 64 100 >"$work/bad.out" 2>"$work/bad.err" &
bad=$!
pids+=("$bad")
timeout 60 "$bin/zmq-remote-thr" "tcp://127.0.0.1:$port" 32 100 >/dev/null 2>&1 || true
rc=0
wait "$bad" || rc=$?
[ "$rc" = 1 ] || fail "a 64-byte receiver given 32-byte messages exited $rc, not 1"
expect_line "$work/bad.err" 'message 0 has 32 bytes, expected 64'

# Duplicates: two senders of 100 messages each (numbers 0-99 twice) into one receiver of 200.
port=$(free_port)
timeout 60 "$bin/zmq-local-thr" "tcp://127.0.0.1:$port" 64 200 >"$work/dup.out" 2>"$work/dup.err" &
dup=$!
pids+=("$dup")
timeout 40 "$bin/zmq-remote-thr" "tcp://127.0.0.1:$port" 64 100 >/dev/null 2>&1 &
pids+=("$!")
timeout 40 "$bin/zmq-remote-thr" "tcp://127.0.0.1:$port" 64 100 >/dev/null 2>&1 || true
rc=0
wait "$dup" || rc=$?
[ "$rc" = 1 ] || fail "a receiver given sequence numbers 0-99 twice exited $rc, not 1"
expect_line "$work/dup.err" 'carries sequence number [0-9]+: a message was lost, duplicated or reordered'

# Wrong arguments exit 2 with the usage on stderr; --help exits 0 with it on stdout.
for args in "" "tcp://127.0.0.1:1 64" "tcp://127.0.0.1:1 64 0" "tcp://127.0.0.1:1 x 10" \
            "tcp://127.0.0.1:1 64 10 --pattern fanout" "tcp://127.0.0.1:1 64 10 --hwm"; do
  rc=0
  # shellcheck disable=SC2086  # the arguments are meant to split
  "$bin/zmq-local-thr" $args >/dev/null 2>"$work/usage.err" || rc=$?
  [ "$rc" = 2 ] || fail "zmq-local-thr $args exited $rc, not 2"
  expect_line "$work/usage.err" '^usage: zmq-local-thr '
done
rc=0
"$bin/zmq-local-lat" tcp://127.0.0.1:1 64 10 --pattern pubsub >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "zmq-local-lat accepted --pattern (exit $rc)"
for t in local-thr remote-thr local-lat remote-lat inproc-thr inproc-lat fanout; do
  "$bin/zmq-$t" --help >"$work/help.out" || fail "zmq-$t --help exited nonzero"
  expect_line "$work/help.out" "^usage: zmq-$t "
done
echo "zmq perf tools: all checks passed"
