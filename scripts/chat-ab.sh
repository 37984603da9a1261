#!/usr/bin/env bash
# A/B of two strix builds on the chat server, the README layout: strix-chat-server with nothing
# but --port, --db (a fresh SQLite file per run), --metrics-port 0 and --io, and strix-chat-load
# with its defaults (seed 004's 500 clients, 10 rooms, 10 messages/s each) for DURATION seconds.
# Runs alternate between the builds (A, B, A, B, ...) so drift hits both alike; nothing is pinned.
#
#   scripts/chat-ab.sh <bin_dir_A> <bin_dir_B> [runs] [duration_s] [io]
#
# Prints one line per run (build, p50/p99/max delivery latency in ms, deliveries/s) from the load
# tool's JSON, then the medians per build. The load tool verifies every delivery (content, count,
# order); a failed run stops the script.
set -euo pipefail

a=${1:?usage: scripts/chat-ab.sh <bin_dir_A> <bin_dir_B> [runs] [duration_s] [io]}
b=${2:?usage: scripts/chat-ab.sh <bin_dir_A> <bin_dir_B> [runs] [duration_s] [io]}
runs=${3:-3}
duration=${4:-15}
io=${5:-epoll}
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

one() {  # <label> <bin_dir> <run>
  local label=$1 bin=$2 run=$3 port tag
  port=$(free_port)
  tag=$work/$label.$run
  "$bin/strix-chat-server" --port "$port" --db "sqlite:$tag.db" --metrics-port 0 --io "$io" >"$tag.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  # The load tool uses the server's own accounts: the first run creates them.
  "$a/strix-chat-load" --port "$port" --duration "$duration" --name-prefix "ab$run." --server-pid "$server_pid" \
    --json "$tag.json" >"$tag.load.log" 2>&1 || { echo "chat-ab: load failed ($label run $run): $(tail -2 "$tag.load.log")" >&2; exit 1; }
  kill -TERM "$server_pid"
  wait "$server_pid" || true
  server_pid=
  python3 - "$tag.json" "$label" "$run" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
lat = j["latency_us"]
bad = {k: j[k] for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt") if j.get(k)}
if bad:
    sys.exit(f"chat-ab: {sys.argv[2]} run {sys.argv[3]} failed verification: {bad}")
print(f"{sys.argv[2]} run {sys.argv[3]}: p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
      f"max {lat['max'] / 1000:.2f} ms, deliveries/s {j['deliveries_per_s']:.0f}")
EOF
}

out=$work/lines.txt
for r in $(seq "$runs"); do
  one A "$a" "$r" | tee -a "$out"
  one B "$b" "$r" | tee -a "$out"
done
python3 - "$out" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) run \d+: p50 ([\d.]+) ms, p99 ([\d.]+) ms", line)
    if m:
        rows.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3))))
for k, v in sorted(rows.items()):
    p50 = [x[0] for x in v]; p99 = [x[1] for x in v]
    print(f"{k}: p50 median {statistics.median(p50):.2f} ({min(p50):.2f}-{max(p50):.2f}) ms, "
          f"p99 median {statistics.median(p99):.2f} ({min(p99):.2f}-{max(p99):.2f}) ms over {len(v)} runs")
EOF
