#!/usr/bin/env bash
# ctest driver for the libzmq perf tools (zmq-*): each one once at small counts.
#   zmq_perf_test.sh <bin dir> <work dir>
# Positive: throughput (pushpull and pubsub) over tcp and ipc, messages shorter than the 8-byte
# stamp, tcp latency, inproc throughput and latency, fan-out over tcp and inproc: libzmq's lines
# with the counts asked for, exit 0.
# Negative: a sender of the wrong size, and two senders whose sequence numbers interleave (so the
# receiver sees a number twice), make the receiver exit 1 and say why; wrong arguments exit 2.
# shellcheck source=../../test_lib.sh
. "$(dirname "$0")/../../test_lib.sh"
bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"

pair zmq-local-thr zmq-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
pair zmq-local-thr zmq-remote-thr "ipc://$work/thr.sock" 8192 2000 --pattern pubsub
expect_line "$work/recv.out" '^message count: 2000$'

# 1-byte messages carry the stamp's low byte only (it wraps at 256); 0-byte ones carry none. Too small
# for the marker, so the receiver is told to check the stamps (--seq on).
pair zmq-local-thr zmq-remote-thr "tcp://127.0.0.1:$(free_port)" 1 1000 --hwm 10 --seq on -- 1 1000 --hwm=10
pair zmq-local-thr zmq-remote-thr "tcp://127.0.0.1:$(free_port)" 0 100

pair zmq-local-lat zmq-remote-lat "tcp://127.0.0.1:$(free_port)" 1024 500
lat_lines "$work/send.out" 1024 500

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
ep="tcp://127.0.0.1:$(free_port)"
receiver_fails bad "a 64-byte receiver given 32-byte messages" timeout 60 "$bin/zmq-local-thr" "$ep" 64 100 -- \
  timeout 60 "$bin/zmq-remote-thr" "$ep" 32 100
expect_line "$work/bad.err" 'message 0 has 32 bytes, expected 64'

# Duplicates: two senders of 100 messages each (numbers 0-99 twice) into one receiver of 200.
ep="tcp://127.0.0.1:$(free_port)"
timeout 40 "$bin/zmq-remote-thr" "$ep" 64 100 >/dev/null 2>&1 &
pids+=("$!")
receiver_fails dup "a receiver given sequence numbers 0-99 twice" timeout 60 "$bin/zmq-local-thr" "$ep" 64 200 -- \
  timeout 40 "$bin/zmq-remote-thr" "$ep" 64 100
expect_line "$work/dup.err" 'carries sequence number [0-9]+: a message was lost, duplicated or reordered'

# Wrong arguments exit 2 with the usage on stderr; --help exits 0 with it on stdout.
usage_checks zmq-local-thr '^usage: zmq-local-thr ' "" "tcp://127.0.0.1:1 64" "tcp://127.0.0.1:1 64 0" \
  "tcp://127.0.0.1:1 x 10" "tcp://127.0.0.1:1 64 10 --pattern fanout" "tcp://127.0.0.1:1 64 10 --hwm"
exits 2 "$bin/zmq-local-lat" tcp://127.0.0.1:1 64 10 --pattern pubsub
for t in remote-thr local-lat remote-lat inproc-thr inproc-lat fanout; do
  usage_checks "zmq-$t" "^usage: zmq-$t "
done
echo "zmq perf tools: all checks passed"
