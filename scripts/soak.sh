#!/usr/bin/env bash
# Soak: the Chat server portfolio's chat workload for a long time (an hour by default) against one
# strix-chat-server, reporting per interval (10 minutes by default) the latency the load tool
# measured and the server's resident memory (/proc/<pid>/status), so a leak or a slow drift shows.
#
#   scripts/soak.sh <build_dir> [seconds]        (make soak; SOAK_DURATION=600 make soak)
#
# 1. starts strix-chat-server on a fresh temporary SQLite database (or SOAK_DB) with the default
#    acknowledgement mode (--ack stored), cheap password hashes and the chat rate limit lifted,
#    as make bench-chat does;
# 2. runs strix-chat-load (500 clients, 10 rooms, 10 messages/s each, the portfolio's payload mix) for
#    the duration after SOAK_WARMUP seconds, one row per SOAK_INTERVAL; it verifies every delivery
#    (any loss, duplicate, reordering or corruption fails the soak);
# 3. samples the server's VmRSS, VmHWM and CPU time every 5 s, and at the end of each interval row,
#    and the database directory's size every 5 s (db.tsv);
# 4. stops the server with SIGTERM (it must exit 0) and has scripts/soak_report.py write
#    <build_dir>/bench/soak.md: per interval latency (p50/p99/p99.9/max), deliveries/s, server CPU
#    and RSS, the RSS drift from the first interval to the last, and the database's size over the
#    run (bounded with a retention policy in SOAK_SERVER_ARGS, e.g. --retention-max-per-room 10000).
# Not part of make test (an hour of load).
#
# Environment: SOAK_DURATION (3600 s; the argument wins), SOAK_INTERVAL (600 s), SOAK_WARMUP (10 s),
#              SOAK_CLIENTS (500), SOAK_ROOMS (10), SOAK_RPS (10), SOAK_PAYLOAD_MIX
#              (64:80,256:18,1024-2048:2), SOAK_TRANSPORT (tcp, or unix), SOAK_SHARDS (nproc - 1,
#              at least 1), SOAK_DB (a postgresql:// URL or sqlite:PATH; default a fresh SQLite file),
#              SOAK_SERVER_ARGS (more server arguments, e.g. --ack early).
set -euo pipefail

build=${1:?usage: scripts/soak.sh <build_dir> [seconds]}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs=$out/soak-run
duration=${2:-${SOAK_DURATION:-3600}}
interval=${SOAK_INTERVAL:-600}
warmup=${SOAK_WARMUP:-10}
clients=${SOAK_CLIENTS:-500}
rooms=${SOAK_ROOMS:-10}
rps=${SOAK_RPS:-10}
mix=${SOAK_PAYLOAD_MIX:-64:80,256:18,1024-2048:2}
transport=${SOAK_TRANSPORT:-tcp}
read -r -a extra_args <<<"${SOAK_SERVER_ARGS:-}"

die() { echo "soak: FAILED: $*" >&2; exit 1; }

for b in strix-chat-server strix-chat-load; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
case $duration in '' | *[!0-9]*) die "the duration must be a whole number of seconds, got '$duration'" ;; esac
[ "$duration" -ge 1 ] || die "the duration must be at least 1 s"
[ "$interval" -le "$duration" ] || interval=$duration

rm -rf "$runs"
mkdir -p "$runs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strix-soak.XXXXXX")
db=${SOAK_DB:-sqlite:$tmp/chat.db}
server_pid=
sampler_pid=
cleanup() {
  if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 "$here/free_port.py"
}

port=$(free_port)
sock=$tmp/chat.sock
shards=${SOAK_SHARDS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
# 500 clients from 127.0.0.1 logging in at once: lift the per-address caps, as make bench-chat does.
server_cmd=("$bin/strix-chat-server" --db "$db" --password-cost fast --port "$port" --unix "$sock"
            --metrics-port 0 --chat-rate 1000000 --chat-burst 1000000 --max-connections-per-address 0
            --login-queue 1024 --shards "$shards" --pin "${extra_args[@]}")
echo "${server_cmd[*]}" >"$runs/server.cmd"
cut -d' ' -f1-3 /proc/loadavg >"$runs/loadavg.start"
echo "soak: $(nproc) CPUs, load average at start $(cat "$runs/loadavg.start"); ${duration} s, a row every ${interval} s"
echo "soak: ${server_cmd[*]}"
"${server_cmd[@]}" >"$runs/server.log" 2>&1 &
server_pid=$!
up=0
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$runs/server.log" >&2; die "strix-chat-server exited at start"; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
[ "$up" = 1 ] || die "strix-chat-server did not accept on 127.0.0.1:$port within 10 s"

# sample: one line "<unix time> <VmRSS kB> <VmHWM kB> <utime+stime ticks>" for the server.
sample() {
  local rss hwm cpu
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null) || return 0
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null) || return 0
  cpu=$(awk '{print $14 + $15}' "/proc/$server_pid/stat" 2>/dev/null) || return 0
  echo "$(date +%s.%N) $rss $hwm $cpu"
}
# The database directory's size (file, WAL) every 5 s too: with a retention policy
# (SOAK_SERVER_ARGS="--retention-max-per-room N") it must level off instead of growing.
(while kill -0 "$server_pid" 2>/dev/null; do
  sample
  echo "$(date +%s.%N) $(du -sk "$tmp" 2>/dev/null | cut -f1)" >>"$runs/db.tsv"
  sleep 5
done) >"$runs/rss.tsv" &
sampler_pid=$!

target=(--host 127.0.0.1 --port "$port")
[ "$transport" = unix ] && target=(--unix "$sock")
load_cmd=("$bin/strix-chat-load" "${target[@]}" --clients "$clients" --rooms "$rooms" --rps "$rps"
          --payload-mix "$mix" --duration "$duration" --warmup "$warmup" --report-every "$interval"
          --server-pid "$server_pid" --json "$runs/load.json")
echo "${load_cmd[*]}" >"$runs/load.cmd"
echo "soak: ${load_cmd[*]}"
# Every output line of the load tool gets the time it arrived; an interval row also gets a
# server sample taken right then (rows.tsv), which the report puts next to the row.
set +e
timeout $((duration + warmup + 600)) "${load_cmd[@]}" 2>&1 | while IFS= read -r line; do
  now=$(date +%s.%N)
  printf '%s %s\n' "$now" "$line" >>"$runs/load.log"
  printf '%s\n' "$line"
  if [[ $line =~ ^\ *[0-9.]+s\  ]]; then sample >>"$runs/rows.tsv"; fi
done
rc=${PIPESTATUS[0]}
set -e
kill "$sampler_pid" 2>/dev/null || true
sampler_pid=
db_size=$(du -sk "$tmp" 2>/dev/null | cut -f1 || echo 0)
echo "$db_size" >"$runs/db_kb"

kill -TERM "$server_pid"
stopped=0
for _ in $(seq 300); do
  if ! kill -0 "$server_pid" 2>/dev/null; then stopped=1; break; fi
  sleep 0.1
done
[ "$stopped" = 1 ] || die "strix-chat-server ignored SIGTERM for 30 s"
src=0
wait "$server_pid" || src=$?
server_pid=
cut -d' ' -f1-3 /proc/loadavg >"$runs/loadavg.end"
[ "$src" -eq 0 ] || die "strix-chat-server exited $src on SIGTERM; log: $runs/server.log"
[ -s "$runs/load.json" ] || die "strix-chat-load wrote no JSON (exit $rc); log: $runs/load.log"

python3 "$here/soak_report.py" --runs "$runs" --out "$out/soak.md" --interval "$interval"
[ "$rc" -eq 0 ] || die "strix-chat-load exited $rc (a delivery was lost, duplicated, reordered or corrupted, or the server refused); see $runs/load.log"
