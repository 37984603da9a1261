#!/usr/bin/env bash
# ctest driver: strix-echo-bench against a baseline echo server over loopback.
#   echo_bench_test.sh raw|asio|raw-single <strix-echo-bench> <server binary> <work dir>
# raw and asio run the client in its default mode (multi, one worker thread); raw-single runs it
# with --mode single (one thread for every connection and the sampling) against the raw server.
# Positive check: 10 connections, depth 16, 2 s: exit 0, errors=0, every echo verified.
# Negative check (raw and raw-single): the server's hidden --corrupt-every flips a byte in every
# 500th echo, and the client must catch it, say so and exit nonzero.
# shellcheck source=../test_lib.sh
. "$(dirname "$0")/../test_lib.sh"
kind=$1 client=$2 server=$3 work=$4
mode=multi
if [ "$kind" = raw-single ]; then kind=raw mode=single; fi
mkdir -p "$work"

client_mode=(--mode "$mode")
threads=()
[ "$kind" = asio ] && threads=(--threads 20)

# --- positive -----------------------------------------------------------------------------------
start_server "$work/server.log" "$server" "${threads[@]}"
rc=0
"$client" --port "$port" --connections 10 --size 8 --depth 16 --duration 2 --warmup 0 \
  "${client_mode[@]}" --server-pid "$server_pid" --json "$work/ok.json" >"$work/ok.log" 2>&1 || rc=$?
cat "$work/ok.log"
[ "$rc" -eq 0 ] || fail "client exited $rc against a correct server"
[ "$(json_field "$work/ok.json" errors)" = 0 ] || fail "errors != 0 in ok.json"
[ "$(json_field "$work/ok.json" ok)" = True ] || fail "ok != true in ok.json"
[ "$(json_field "$work/ok.json" outstanding)" = 0 ] || fail "outstanding != 0 in ok.json"
verified=$(json_field "$work/ok.json" verified)
[ "$verified" -ge 1600 ] || fail "only $verified echoes verified"
grep -q 'errors=0' "$work/ok.log" || fail "summary does not say errors=0"
[ "$(json_field "$work/ok.json" mode)" = "$mode" ] || fail "mode != $mode in ok.json"
if [ "$mode" = single ]; then
  [ "$(json_field "$work/ok.json" client_threads)" = 1 ] || fail "client_threads != 1 in --mode single"
fi
stop_server

# --- negative: corrupted echoes -----------------------------------------------------------------
if [ "$kind" = raw ]; then
  start_server "$work/corrupt-server.log" "$server" --corrupt-every 500
  rc=0
  "$client" --port "$port" --connections 10 --size 8 --depth 16 --duration 2 --warmup 0 \
    "${client_mode[@]}" --json "$work/bad.json" >"$work/bad.log" 2>&1 || rc=$?
  cat "$work/bad.log"
  [ "$rc" -ne 0 ] || fail "client exited 0 although the server corrupted every 500th echo"
  grep -q 'content mismatch' "$work/bad.log" || fail "client did not report the content mismatch"
  [ "$(json_field "$work/bad.json" errors)" != 0 ] || fail "errors = 0 in bad.json"
  [ "$(json_field "$work/bad.json" ok)" = False ] || fail "ok != false in bad.json"
  stop_server
fi
echo "PASS: strix-echo-bench --mode $mode against $kind"
