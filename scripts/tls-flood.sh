#!/usr/bin/env bash
# A TLS handshake flood beside the chat workload: does a flood from one address starve
# everyone else? strix-chat-server serves TLS (a throwaway certificate from
# bench/echo/echo_tls_cert.sh); strix-chat-load runs the portfolio's workload over TLS from 127.0.0.1
# (its defaults: 500 clients, 10 rooms, 10 messages/s each, every delivery verified), once alone
# and once while strix-tls-flood, bound to 127.0.0.254 (strix-chat-load spreads its clients over 127.0.0.1, .2,
# .3: see --clients-per-source), keeps STALLED handshakes open (each one the
# server closes is reopened at once) and starts RATE new full handshakes per second. Runs
# alternate (alone, flooded, alone, ...) so drift hits both alike; nothing is pinned. As in
# make bench-chat, the server hashes passwords cheaply (--password-cost fast): the logins are not
# what is measured.
#
#   scripts/tls-flood.sh <build_dir> [runs] [duration_s] [stalled] [rate] [reopen_ms]
#                                         (defaults 3 15 2000 200 1000; reopen_ms 0 = a storm)
#
# Prints one line per run and the medians (p50/p99 delivery latency, deliveries/s), the flood's
# own counts, and the server's TLS counters from /metrics.
set -euo pipefail

build=${1:?usage: scripts/tls-flood.sh <build_dir> [runs] [duration_s] [stalled] [rate]}
runs=${2:-3}
duration=${3:-15}
stalled=${4:-2000}
rate=${5:-200}
reopen=${6:-1000}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
work=$(mktemp -d)
server_pid=
flood_pid=
cleanup() {
  [ -n "$flood_pid" ] && kill -9 "$flood_pid" 2>/dev/null
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$here/../bench/echo/echo_tls_cert.sh" "$work/cert" >/dev/null
cert=$work/cert/server.crt key=$work/cert/server.key ca=$work/cert/ca.crt
# The flood's connections and the load tool's 500 need descriptors.
ulimit -n 65536 2>/dev/null || true

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

one() {  # <label> <run>
  local label=$1 run=$2 port mport tag
  port=$(free_port)
  mport=$(free_port)
  tag=$work/$label.$run
  "$bin/strix-chat-server" --port "$port" --db "sqlite:$tag.db" --password-cost fast --metrics-port "$mport" \
    --tls-cert "$cert" --tls-key "$key" >"$tag.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  if [ "$label" = flooded ]; then
    "$bin/strix-tls-flood" --port "$port" --source 127.0.0.254 --stalled "$stalled" --rate "$rate" --reopen-ms "$reopen" \
      --duration $((duration + 8)) --ca "$ca" --json "$tag.flood.json" >"$tag.flood.log" 2>&1 &
    flood_pid=$!
    sleep 3  # the flood at full strength before the workload starts
  fi
  "$bin/strix-chat-load" --port "$port" --tls --ca "$ca" --server-name 127.0.0.1 --duration "$duration" \
    --name-prefix "f$run." --server-pid "$server_pid" --json "$tag.json" >"$tag.load.log" 2>&1 ||
    { echo "tls-flood: load failed ($label run $run): $(tail -3 "$tag.load.log")" >&2; exit 1; }
  if [ -n "$flood_pid" ]; then
    wait "$flood_pid" || true
    flood_pid=
    cat "$tag.flood.log"
  fi
  curl -s "http://127.0.0.1:$mport/metrics" | grep -E '^strix_tls_' | tr '\n' ' ' | sed 's/^/  server: /'
  echo
  kill -TERM "$server_pid"
  wait "$server_pid" || true
  server_pid=
  python3 "$here/chat_runs.py" line "$tag.json" "$label" "$run" tls-flood lost
}

out=$work/lines.txt
for r in $(seq "$runs"); do
  one alone "$r" | tee -a "$out"
  one flooded "$r" | tee -a "$out"
done
python3 "$here/chat_runs.py" summary "$out" deliveries alone flooded
