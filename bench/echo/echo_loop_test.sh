#!/usr/bin/env bash
# ctest driver: strix-echo-loop (the single-threaded loop client) over loopback.
#   echo_loop_test.sh epoll|uring <strix-echo-loop> <strix-echo-server> <strix-echo-raw-epoll> <work dir>
# Positive check: 20 connections, depth 16, 1 s against strix-echo-server --io <backend> --shards 2:
# exit 0, errors=0, outstanding=0, mode loop, and a plausible number of echoes verified.
# Negative check: strix-echo-raw-epoll --corrupt-every 500 flips a byte in every 500th echo; the
# client must report the content mismatch and exit 1.
# shellcheck source=../test_lib.sh
. "$(dirname "$0")/../test_lib.sh"
io=$1 client=$2 strix=$3 raw=$4 work=$5
mkdir -p "$work"

# --- positive: strix-echo-server ----------------------------------------------------------------
start_server "$work/server.log" "$strix" --shards 2 --io "$io"
rc=0
"$client" --port "$port" --connections 20 --size 8 --depth 16 --duration 1 --warmup 0 \
  --server-pid "$server_pid" --json "$work/ok.json" >"$work/ok.log" 2>&1 || rc=$?
cat "$work/ok.log"
[ "$rc" -eq 0 ] || fail "client exited $rc against strix-echo-server --io $io"
[ "$(json_field "$work/ok.json" ok)" = True ] || fail "ok != true in ok.json"
[ "$(json_field "$work/ok.json" errors)" = 0 ] || fail "errors != 0 in ok.json"
[ "$(json_field "$work/ok.json" outstanding)" = 0 ] || fail "outstanding != 0 in ok.json"
[ "$(json_field "$work/ok.json" mode)" = loop ] || fail "mode != loop in ok.json"
verified=$(json_field "$work/ok.json" verified)
# 20 connections x 16 in flight are sent at once; a second of echoing brings many more.
[ "$verified" -ge 3200 ] || fail "only $verified echoes verified"
grep -q '^result: PASS' "$work/ok.log" || fail "summary does not say PASS"
stop_server

# --- negative: corrupted echoes -----------------------------------------------------------------
start_server "$work/corrupt-server.log" "$raw" --threads 1 --corrupt-every 500
rc=0
"$client" --port "$port" --connections 10 --size 8 --depth 16 --duration 1 --warmup 0 \
  --json "$work/bad.json" >"$work/bad.log" 2>&1 || rc=$?
cat "$work/bad.log"
[ "$rc" -eq 1 ] || fail "client exited $rc (want 1) although the server corrupted every 500th echo"
grep -q 'content mismatch' "$work/bad.log" || fail "client did not report the content mismatch"
[ "$(json_field "$work/bad.json" ok)" = False ] || fail "ok != false in bad.json"
[ "$(json_field "$work/bad.json" errors)" != 0 ] || fail "errors = 0 in bad.json"
stop_server
echo "PASS: strix-echo-loop against strix-echo-server --io $io, and it caught corrupted echoes"
