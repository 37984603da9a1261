#!/usr/bin/env bash
# Instructions per echoed message of strix-echo-server, counted by callgrind (repeatable whatever
# else the machine does, unlike seconds): the A/B of a change on the engine's hot path.
#
#   scripts/echo-callgrind.sh <bin_dir> [depth ...]          (default depths: 1 16 128)
#
# For each depth the server (one shard, under valgrind --tool=callgrind) is run twice, with the
# load tool (strix-echo-bench from the same bin_dir, 100 connections x 8 B, not under valgrind)
# for SHORT and LONG seconds; instructions per message = (Ir_long - Ir_short) / (msgs_long -
# msgs_short), so start-up and shutdown cancel out. Prints one line per depth:
#   depth D: I instructions/message (N messages measured)
# Environment: ECHO_CG_IO [epoll] (the server's --io), ECHO_CG_SHORT [2], ECHO_CG_LONG [6].
# With ECHO_CG_IO=uring the server is never stopped (under valgrind an io_uring server does not
# finish its SIGTERM shutdown, at ae84360 too): the counters are zeroed after a SHORT-second run
# (callgrind_control -z), dumped after a LONG-second run (callgrind_control -d), and the dump's
# instructions are divided by that run's verified echoes.
set -euo pipefail

bin=${1:?usage: scripts/echo-callgrind.sh <bin_dir> [depth ...]}
shift
depths=("$@")
[ ${#depths[@]} -gt 0 ] || depths=(1 16 128)
io=${ECHO_CG_IO:-epoll}
short=${ECHO_CG_SHORT:-2}
long=${ECHO_CG_LONG:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

free_port_py=$(cd "$(dirname "$0")" && pwd)/free_port.py
free_port() { python3 "$free_port_py"; }

# start_server <port> <out>: the server under callgrind (one shard, --io $io), in server_pid once
# it listens; its counters go to <out>.cg, its output to <out>.log.
start_server() {
  valgrind --tool=callgrind --callgrind-out-file="$2.cg" "$bin/strix-echo-server" --port "$1" --shards 1 \
    --io "$io" >"$2.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$2.log" 2>/dev/null && break
    sleep 0.2
  done
}

# run <depth> <seconds>: prints "<Ir> <messages>"
run() {
  local depth=$1 secs=$2 port out pid ir msgs
  port=$(free_port)
  out=$work/cg.$depth.$secs
  start_server "$port" "$out"
  pid=$server_pid
  "$bin/strix-echo-bench" --port "$port" --connections 100 --size 8 --depth "$depth" --duration "$secs" \
    --warmup 0 --json "$out.json" >/dev/null
  kill -TERM "$pid"
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "echo-callgrind: the server did not stop within 60 s of SIGTERM (depth $depth, $secs s); log: $out.log" >&2
    kill -9 "$pid"
    cp "$out.log" /tmp/echo-callgrind-hung.log
    exit 1
  fi
  wait "$pid" || true
  ir=$(grep -m1 '^summary:' "$out.cg" | awk '{print $2}')
  msgs=$(grep -o '[0-9]* messages in' "$out.log" | awk '{print $1}')
  echo "$ir $msgs"
}

# window <depth>: one server, zeroed after a warm-up run, dumped after the measured one.
window() {
  local depth=$1 port out pid ir msgs
  port=$(free_port)
  out=$work/win.$depth
  start_server "$port" "$out"
  pid=$server_pid
  "$bin/strix-echo-bench" --port "$port" --connections 100 --size 8 --depth "$depth" --duration "$short" \
    --warmup 0 >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  "$bin/strix-echo-bench" --port "$port" --connections 100 --size 8 --depth "$depth" --duration "$long" \
    --warmup 0 --json "$out.json" >/dev/null
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 1
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  ir=$(grep -m1 '^summary:' "$(ls "$out".cg.* | tail -1)" | awk '{print $2}')
  msgs=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['verified'])" "$out.json")
  python3 -c "import sys; ir, m = int(sys.argv[1]), int(sys.argv[2]); print(f'depth {sys.argv[3]}: {ir / m:.0f} instructions/message ({m} messages measured)')" \
    "$ir" "$msgs" "$depth"
}

for d in "${depths[@]}"; do
  if [ "$io" = uring ]; then
    window "$d"
    continue
  fi
  read -r ir1 m1 < <(run "$d" "$short")
  read -r ir2 m2 < <(run "$d" "$long")
  python3 -c "import sys; ir1,m1,ir2,m2=map(int,sys.argv[1:5]); print(f'depth {sys.argv[5]}: {(ir2-ir1)/(m2-m1):.0f} instructions/message ({m2-m1} messages measured)')" \
    "$ir1" "$m1" "$ir2" "$m2" "$d"
done
