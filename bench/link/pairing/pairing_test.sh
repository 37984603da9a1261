#!/usr/bin/env bash
# ctest driver: libzmq's own perf programs (rebuilt from their command lines on the plain libzmq
# C API: plain-*, messages of zeros without sequence numbers) paired with the strix-link-* tools
# both ways over tcp and ipc, as a new user pairs them first.
#   pairing_test.sh <bin dir> <work dir>
# Positive: plain-remote-thr -> strix-link-local-thr and strix-link-remote-thr -> plain-local-thr
# (64 B and 8 KB), plain-remote-lat -> strix-link-local-lat and strix-link-remote-lat ->
# plain-local-lat: both exit 0 and the side that prints reports the count asked for.
# Negative (the checks are still there): strix-link-local-thr --seq on fails on plain-remote-thr's
# zeros at message 1, and a plain sender of the wrong size fails strix-link-local-thr.
# shellcheck source=../../test_lib.sh
. "$(dirname "$0")/../../test_lib.sh"
bin=$1 work=$2
rm -rf "$work"
mkdir -p "$work"

for t in local-thr remote-thr local-lat remote-lat; do
  [ -x "$bin/strix-link-$t" ] || fail "$bin/strix-link-$t is not built"
  [ -x "$bin/plain-$t" ] || fail "$bin/plain-$t is not built"
done

n_pairs=0 failures=()
# pair <receiver> <sender> <endpoint> <size> <count> [receiver options...]: the receiver (binds)
# in the background, the sender (connects, retrying until the bind is there) in the foreground;
# both must exit 0. Outputs: $work/recv.out, $work/send.out (stderr in .err). A failed pair is
# recorded (and fails the test at the end) so that one run shows every failing combination;
# returns 1 so its output lines are not checked. (Not test_lib.sh's pair, which fails at once.)
pair() {
  local recv=$1 send=$2 ep=$3 size=$4 cnt=$5
  shift 5
  rm -f "$work"/*.sock
  timeout 60 "$bin/$recv" "$ep" "$size" "$cnt" "$@" >"$work/recv.out" 2>"$work/recv.err" &
  local r=$!
  pids+=("$r")
  sleep 0.2
  local src=0 rc=0
  timeout 60 "$bin/$send" "$ep" "$size" "$cnt" >"$work/send.out" 2>"$work/send.err" || src=$?
  wait "$r" || rc=$?
  n_pairs=$((n_pairs + 1))
  if [ "$src" != 0 ] || [ "$rc" != 0 ]; then
    failures+=("$send -> $recv $ep $size B x $cnt: sender exited $src ($(tail -n 1 "$work/send.err")), receiver exited $rc ($(tail -n 1 "$work/recv.err"))")
    echo "FAIL: ${failures[-1]}" >&2
    return 1
  fi
}

for tr in tcp ipc; do
  for size in 64 8192; do
    if [ "$tr" = tcp ]; then ep="tcp://127.0.0.1:$(free_port)"; else ep="ipc://$work/thr.sock"; fi
    cnt=20000
    [ "$size" = 8192 ] && cnt=2000
    # libzmq's remote_thr into strix's receiver: zeros, no numbers; every message counted.
    pair strix-link-local-thr plain-remote-thr "$ep" "$size" "$cnt" &&
    expect_line "$work/recv.out" "^message count: $cnt$" &&
    expect_line "$work/recv.out" "^message size: $size \\[B\\]$"
    # strix's sender into libzmq's local_thr. Over ipc, fewer messages than libzmq's receive
    # high-water mark (1000): a libzmq PULL whose input is throttled at the mark when the sender
    # closes a unix socket (EPOLLHUP) stops reading and drops what the kernel still holds
    # (libzmq's tracker, #4660, "IPC socket drops messages, ignores LINGER"); measured here with 20000
    # messages of 64 B: 400-2500 lost in 5 of 6 runs, on both backends, after strix had written
    # every byte (strace), and the same with zmq-local-thr. Over tcp the close is only a FIN and
    # libzmq reads on.
    rcnt=$cnt
    [ "$tr" = ipc ] && rcnt=900
    pair plain-local-thr strix-link-remote-thr "$ep" "$size" "$rcnt" &&
    expect_line "$work/recv.out" "^message count: $rcnt$" &&
    expect_line "$work/recv.out" '^mean throughput: [0-9]+ \[msg/s\]$'
  done
  if [ "$tr" = tcp ]; then ep="tcp://127.0.0.1:$(free_port)"; else ep="ipc://$work/lat.sock"; fi
  # libzmq's remote_lat against strix's REP: every request echoed, the REQ counts them.
  pair strix-link-local-lat plain-remote-lat "$ep" 64 2000 &&
  expect_line "$work/send.out" '^roundtrip count: 2000$' &&
  expect_line "$work/send.out" '^average latency: [0-9.]+ \[us\]$'
  # strix's REQ against libzmq's local_lat: strix checks each reply's number (its own stamps).
  pair plain-local-lat strix-link-remote-lat "$ep" 1024 2000 &&
  expect_line "$work/send.out" '^roundtrip count: 2000$' &&
  expect_line "$work/send.out" '^p50 roundtrip: [0-9.]+ \[us\]$'
done

# --seq on: the zeros from libzmq's remote_thr fail the number check at message 1.
ep="tcp://127.0.0.1:$(free_port)"
receiver_fails seq "strix-link-local-thr --seq on given zeros" timeout 60 "$bin/strix-link-local-thr" "$ep" 64 100 \
  --seq on -- timeout 60 "$bin/plain-remote-thr" "$ep" 64 100
expect_line "$work/seq.err" '^strix-link-local-thr: message 1 carries sequence number 0: a message was lost, duplicated or reordered$'

# Sizes are checked whatever --seq says: 32-byte zeros into a 64-byte receiver fail at message 0.
ep="tcp://127.0.0.1:$(free_port)"
receiver_fails size "a 64-byte strix-link-local-thr given 32-byte zeros" timeout 60 "$bin/strix-link-local-thr" \
  "$ep" 64 100 -- timeout 60 "$bin/plain-remote-thr" "$ep" 32 100
expect_line "$work/size.err" '^strix-link-local-thr: message 0 has 32 bytes, expected 64$'
[ ! -s "$work/size.out" ] || fail "a failed receiver printed results"

if [ "${#failures[@]}" -gt 0 ]; then
  printf 'FAIL: %s\n' "${failures[@]}" >&2
  fail "${#failures[@]} of $n_pairs pairs failed"
fi
echo "pairing: $n_pairs pairs of libzmq's perf programs and strix's tools passed, and 2 negative checks"
