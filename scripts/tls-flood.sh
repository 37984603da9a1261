#!/usr/bin/env bash
# A TLS handshake flood beside the chat workload (issue 17): does a flood from one address starve
# everyone else? strix-chat-server serves TLS (a throwaway certificate from
# bench/echo/echo_tls_cert.sh); strix-chat-load runs seed 004's workload over TLS from 127.0.0.1
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
  python3 - "$tag.json" "$label" "$run" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
lat = j["latency_us"]
bad = {k: j[k] for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt") if j.get(k)}
if bad:
    sys.exit(f"tls-flood: {sys.argv[2]} run {sys.argv[3]} failed verification: {bad}")
print(f"{sys.argv[2]} run {sys.argv[3]}: p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
      f"max {lat['max'] / 1000:.2f} ms, deliveries/s {j['deliveries_per_s']:.0f}, lost {j.get('lost', 0)}")
EOF
}

out=$work/lines.txt
for r in $(seq "$runs"); do
  one alone "$r" | tee -a "$out"
  one flooded "$r" | tee -a "$out"
done
python3 - "$out" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) run \d+: p50 ([\d.]+) ms, p99 ([\d.]+) ms, max [\d.]+ ms, deliveries/s (\d+)", line)
    if m:
        rows.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3)), int(m.group(4))))
for k in ("alone", "flooded"):
    v = rows.get(k, [])
    if not v:
        continue
    p50 = [x[0] for x in v]; p99 = [x[1] for x in v]; d = [x[2] for x in v]
    print(f"{k}: p50 median {statistics.median(p50):.2f} ({min(p50):.2f}-{max(p50):.2f}) ms, "
          f"p99 median {statistics.median(p99):.2f} ({min(p99):.2f}-{max(p99):.2f}) ms, "
          f"deliveries/s median {statistics.median(d):.0f} over {len(v)} runs")
EOF
