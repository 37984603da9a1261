#!/usr/bin/env bash
# ctest driver for the strix::link perf tools (strix-link-*), each at small counts, and the
# cross-runs against the libzmq tools (zmq-*, built in the same bin dir).
#   strix_perf_test.sh <bin dir> <work dir>
# Positive: throughput (pushpull and pubsub) over tcp and ipc, messages shorter than the 8-byte
# stamp and empty ones, latency over tcp and ipc, inproc throughput and latency, fan-out over tcp,
# ipc and inproc: libzmq's lines with the counts asked for, exit 0. Cross-runs: strix sender ->
# libzmq receiver and back (pushpull and pubsub), strix REQ -> libzmq REP and back.
# Negative: a sender of the wrong size and two senders whose sequence numbers interleave make the
# receiver exit 1 and say why; a receiver missing messages and a sender with nobody to send to
# give up after the contract's 30 s with the counts; wrong arguments exit 2; --help exits 0.
# shellcheck source=../../test_lib.sh
. "$(dirname "$0")/../../test_lib.sh"
bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"

for t in local-thr remote-thr local-lat remote-lat inproc-thr inproc-lat fanout; do
  [ -x "$bin/strix-link-$t" ] || fail "$bin/strix-link-$t is not built"
  [ -x "$bin/zmq-$t" ] || fail "$bin/zmq-$t is not built (the cross-runs need it)"
done

# Each 30 s timeout runs in the background while the rest of the checks go on.
# A receiver that wants 200 messages gets 100: after 30 s without one it exits 1 with the count.
port=$(free_port)
timeout 90 "$bin/strix-link-local-thr" "tcp://127.0.0.1:$port" 64 200 >/dev/null 2>"$work/short.err" &
short=$!
pids+=("$short")
# A sender with nobody listening: after 30 s blocked it exits 1 with the count.
nobody=$(free_port)
timeout 90 "$bin/strix-link-remote-thr" "tcp://127.0.0.1:$nobody" 64 100 >/dev/null 2>"$work/blocked.err" &
blocked=$!
pids+=("$blocked")
# The short receiver needs its sender once it listens.
sleep 0.5
timeout 60 "$bin/strix-link-remote-thr" "tcp://127.0.0.1:$port" 64 100 >/dev/null 2>&1 ||
  fail "a strix sender of 100 messages to a receiver of 200 did not exit 0"

# strix -> strix throughput.
pair strix-link-local-thr strix-link-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
[ ! -s "$work/send.out" ] || fail "strix-link-remote-thr printed something on success"
pair strix-link-local-thr strix-link-remote-thr "ipc://$work/thr.sock" 65536 300
thr_lines "$work/recv.out" 65536 300
pair strix-link-local-thr strix-link-remote-thr "ipc://$work/thr.sock" 8192 2000 --pattern pubsub
thr_lines "$work/recv.out" 8192 2000
pair strix-link-local-thr strix-link-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000 --pattern=pubsub --hwm 0
thr_lines "$work/recv.out" 64 20000
# 1-byte messages carry the stamp's low byte only (it wraps at 256); 0-byte ones carry none. Too small
# for the marker, so the receiver is told to check the stamps (--seq on).
pair strix-link-local-thr strix-link-remote-thr "tcp://127.0.0.1:$(free_port)" 1 1000 --hwm 10 --seq on
thr_lines "$work/recv.out" 1 1000
pair strix-link-local-thr strix-link-remote-thr "tcp://127.0.0.1:$(free_port)" 0 100
thr_lines "$work/recv.out" 0 100

# strix latency over tcp and ipc: the REQ side prints.
pair strix-link-local-lat strix-link-remote-lat "tcp://127.0.0.1:$(free_port)" 1024 500
lat_lines "$work/send.out" 1024 500
[ ! -s "$work/recv.out" ] || fail "strix-link-local-lat printed something on success"
pair strix-link-local-lat strix-link-remote-lat "ipc://$work/lat.sock" 64 500
lat_lines "$work/send.out" 64 500

# inproc: one process, two shards.
timeout 60 "$bin/strix-link-inproc-thr" 64 20000 >"$work/ithr.out" 2>&1 ||
  { cat "$work/ithr.out" >&2; fail "strix-link-inproc-thr failed"; }
thr_lines "$work/ithr.out" 64 20000
timeout 60 "$bin/strix-link-inproc-thr" 1024 20000 --pattern pubsub >"$work/ithr.out" 2>&1 ||
  { cat "$work/ithr.out" >&2; fail "strix-link-inproc-thr --pattern pubsub failed"; }
thr_lines "$work/ithr.out" 1024 20000
# Large messages go by reference, 62 to a sender's turn, here past the pair's mark (--hwm 10:
# 20 in flight), so the sender also waits for on_writable; every stamp is checked.
timeout 60 "$bin/strix-link-inproc-thr" 65536 3000 --hwm 10 >"$work/ithr.out" 2>&1 ||
  { cat "$work/ithr.out" >&2; fail "strix-link-inproc-thr 65536 failed"; }
thr_lines "$work/ithr.out" 65536 3000
timeout 60 "$bin/strix-link-inproc-lat" 64 1000 >"$work/ilat.out" 2>&1 ||
  { cat "$work/ilat.out" >&2; fail "strix-link-inproc-lat failed"; }
lat_lines "$work/ilat.out" 64 1000

# Fan-out over tcp (port 0: the bound port is resolved), ipc and inproc.
for ep in "tcp://127.0.0.1:0" "ipc://$work/fan.sock" "inproc://fanout-test"; do
  timeout 60 "$bin/strix-link-fanout" "$ep" 4 64 5000 >"$work/fan.out" 2>&1 ||
    { cat "$work/fan.out" >&2; fail "strix-link-fanout over $ep failed"; }
  expect_line "$work/fan.out" '^subscribers: 4$'
  expect_line "$work/fan.out" '^message size: 64 \[B\]$'
  expect_line "$work/fan.out" '^message count: 5000$'
  expect_line "$work/fan.out" '^deliveries: 20000$'
  expect_line "$work/fan.out" '^mean throughput: [0-9]+ \[msg/s\]$'
  expect_line "$work/fan.out" '^aggregate throughput: [0-9]+ \[deliveries/s\]$'
done

# Cross-runs: each family's sender against the other's receiver, over the wire protocol.
pair zmq-local-thr strix-link-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
pair strix-link-local-thr zmq-remote-thr "tcp://127.0.0.1:$(free_port)" 64 20000
thr_lines "$work/recv.out" 64 20000
pair zmq-local-thr strix-link-remote-thr "ipc://$work/x.sock" 1024 5000 --pattern pubsub
thr_lines "$work/recv.out" 1024 5000
pair strix-link-local-thr zmq-remote-thr "ipc://$work/x.sock" 1024 5000 --pattern pubsub
thr_lines "$work/recv.out" 1024 5000
pair zmq-local-lat strix-link-remote-lat "tcp://127.0.0.1:$(free_port)" 64 500
lat_lines "$work/send.out" 64 500
pair strix-link-local-lat zmq-remote-lat "tcp://127.0.0.1:$(free_port)" 64 500
lat_lines "$work/send.out" 64 500

# Wrong size: the receiver wants 64 bytes, the sender sends 32.
ep="tcp://127.0.0.1:$(free_port)"
receiver_fails bad "a 64-byte receiver given 32-byte messages" timeout 60 "$bin/strix-link-local-thr" "$ep" 64 100 \
  -- timeout 60 "$bin/strix-link-remote-thr" "$ep" 32 100
expect_line "$work/bad.err" '^strix-link-local-thr: message 0 has 32 bytes, expected 64$'
[ ! -s "$work/bad.out" ] || fail "a failed receiver printed results"

# Duplicates: two senders of 100 messages each (numbers 0-99 twice) into one receiver of 200.
ep="tcp://127.0.0.1:$(free_port)"
timeout 40 "$bin/strix-link-remote-thr" "$ep" 64 100 >/dev/null 2>&1 &
pids+=("$!")
receiver_fails dup "a receiver given sequence numbers 0-99 twice" timeout 60 "$bin/strix-link-local-thr" "$ep" 64 \
  200 -- timeout 40 "$bin/strix-link-remote-thr" "$ep" 64 100
expect_line "$work/dup.err" 'carries sequence number [0-9]+: a message was lost, duplicated or reordered'

# A REP given requests of the wrong size fails too (the REQ then gives up, or is killed).
ep="tcp://127.0.0.1:$(free_port)"
receiver_fails badlat "a 64-byte REP given 65-byte requests" timeout 60 "$bin/strix-link-local-lat" "$ep" 64 10 \
  -- timeout 5 "$bin/zmq-remote-lat" "$ep" 65 10
expect_line "$work/badlat.err" '^strix-link-local-lat: message 0 has 65 bytes, expected 64$'

# Wrong arguments exit 2 with the usage on stderr; --help exits 0 with it on stdout.
usage_checks strix-link-local-thr '^usage: strix-link-local-thr ' "" "tcp://127.0.0.1:1 64" "tcp://127.0.0.1:1 64 0" \
  "tcp://127.0.0.1:1 x 10" "tcp://127.0.0.1:1 64 10 --pattern fanout" "tcp://127.0.0.1:1 64 10 --hwm" \
  "tcp://127.0.0.1:1 64 10 --bogus"
exits 2 "$bin/strix-link-local-lat" tcp://127.0.0.1:1 64 10 --pattern pubsub
exits 2 "$bin/strix-link-fanout" tcp://127.0.0.1:1 0 64 10
rc=0
"$bin/strix-link-local-thr" tcp://127.0.0.1:bad 64 10 >/dev/null 2>"$work/addr.err" || rc=$?
[ "$rc" = 1 ] || fail "strix-link-local-thr with a malformed address exited $rc, not 1"
expect_line "$work/addr.err" '^strix-link-local-thr: '
for t in remote-thr local-lat remote-lat inproc-thr inproc-lat fanout; do
  usage_checks "strix-link-$t" "^usage: strix-link-$t "
done

# The two 30 s timeouts started at the top.
rc=0
wait "$short" || rc=$?
[ "$rc" = 1 ] || fail "a receiver short of messages exited $rc, not 1"
expect_line "$work/short.err" '^strix-link-local-thr: no message for 30 s; received 100 of 200 messages$'
rc=0
wait "$blocked" || rc=$?
[ "$rc" = 1 ] || fail "a sender with nobody to send to exited $rc, not 1"
expect_line "$work/blocked.err" '^strix-link-remote-thr: send blocked for 30 s; sent 0 of 100 messages$'
echo "strix link perf tools: all checks passed"
