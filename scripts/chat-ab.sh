#!/usr/bin/env bash
# A/B of two strix builds on the chat server, the README layout: strix-chat-server with nothing
# but --port, --db (a fresh SQLite file per run), --metrics-port 0 and --io, and strix-chat-load
# with its defaults (the Chat server portfolio's 500 clients, 10 rooms, 10 messages/s each) for
# DURATION seconds. Runs alternate between the builds (A, B, A, B, ...) so drift hits both alike;
# nothing is pinned.
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
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 "$here/free_port.py"; }

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
  python3 "$here/chat_runs.py" line "$tag.json" "$label" "$run" chat-ab
}

out=$work/lines.txt
for r in $(seq "$runs"); do
  one A "$a" "$r" | tee -a "$out"
  one B "$b" "$r" | tee -a "$out"
done
python3 "$here/chat_runs.py" summary "$out"
