#!/usr/bin/env bash
# ctest driver: strix-echo-bench against a baseline echo server over loopback.
#   echo_bench_test.sh raw|asio|raw-single <strix-echo-bench> <server binary> <work dir>
# raw and asio run the client in its default mode (multi, one worker thread); raw-single runs it
# with --mode single (one thread for every connection and the sampling) against the raw server.
# Positive check: 10 connections, depth 16, 2 s: exit 0, errors=0, every echo verified.
# Negative check (raw and raw-single): the server's hidden --corrupt-every flips a byte in every
# 500th echo, and the client must catch it, say so and exit nonzero.
set -euo pipefail

kind=$1 client=$2 server=$3 work=$4
mode=multi
if [ "$kind" = raw-single ]; then kind=raw mode=single; fi
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

# start_server <log> <args...>: starts the server on a free port; sets server_pid and port.
start_server() {
  local log=$1; shift
  port=$(free_port)
  "$server" --port "$port" "$@" >"$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; fail "server exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  fail "server did not accept on port $port within 10 s"
}

# stop_server: SIGTERM, then the server must exit 0 within 10 s.
stop_server() {
  kill -TERM "$server_pid"
  for _ in $(seq 100); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      local rc=0
      wait "$server_pid" || rc=$?
      [ "$rc" -eq 0 ] || fail "server exited with $rc on SIGTERM"
      return 0
    fi
    sleep 0.1
  done
  fail "server ignored SIGTERM for 10 s"
}

json_field() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

client_mode=(--mode "$mode")
threads=()
[ "$kind" = asio ] && threads=(--threads 20)

# --- positive -----------------------------------------------------------------------------------
start_server "$work/server.log" "${threads[@]}"
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
  start_server "$work/corrupt-server.log" --corrupt-every 500
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
