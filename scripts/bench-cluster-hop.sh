#!/usr/bin/env bash
# make bench-cluster-hop: the Redis backplane's cross-node hop alone (its share of the latency; the
# full two-node chat workload needs the room service on Redis first).
# Starts a throw-away redis-server (no persistence) on a free port, runs strix-bench-cluster-hop
# steady, then again with Redis killed (-9) and restarted mid-run, and writes
# <build>/bench/cluster-hop.md.
#   scripts/bench-cluster-hop.sh <build dir> [<output .md>]   (HOP_RATE, HOP_SECONDS, HOP_ROOMS override)
# Exits 1 when a run's delivery check fails (the cluster.hop_bench_smoke test relies on it).
set -euo pipefail
build=${1:-build}
bin=$build/bin/strix-bench-cluster-hop
[ -x "$bin" ] || { echo "bench-cluster-hop: $bin not built" >&2; exit 1; }
rate=${HOP_RATE:-20000} seconds=${HOP_SECONDS:-5} rooms=${HOP_ROOMS:-100}
work=$(mktemp -d /tmp/strix-hop-XXXXXX)
redis_pid=
cleanup() { [ -n "$redis_pid" ] && kill -9 "$redis_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_redis() {
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --logfile "$work/redis.log" >/dev/null 2>&1 &
  redis_pid=$!
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.01
  done
  echo "bench-cluster-hop: redis-server did not start" >&2; exit 1
}
out=${2:-$build/bench/cluster-hop.md}
mkdir -p "$(dirname "$out")"
start_redis
{
  echo "# Cluster backplane hop ($(date -u +%Y-%m-%d), $(nproc) CPUs, redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'))"
  echo
  echo "Two shards of one process play two nodes: shard 0 publishes with \`chat_publish\` at $rate msg/s over"
  echo "$rooms rooms, shard 1 receives through a \`room_feed\` (pub/sub, stream refill, position check)."
  echo "Hop = FCALL sent -> delivered by the other node's feed. Command: \`make bench-cluster-hop\`."
  echo
} >"$out"
rc=0
"$bin" --header --port "$port" --redis-pid "$redis_pid" --rooms "$rooms" --rate "$rate" --seconds "$seconds" \
  --label steady >>"$out" || rc=1
# The same with Redis killed (-9, by the bench at half time, which then times how long until its
# feed is subscribed to every room again) and restarted here at once: publishes in flight fail,
# the stream is lost (a gap per room the feed reports), nothing acked may vanish unreported.
"$bin" --port "$port" --redis-pid "$redis_pid" --rooms "$rooms" --rate "$rate" --seconds "$seconds" \
  --kill-redis-at "$(python3 -c "print($seconds / 2)")" --label "Redis killed + restarted" >>"$out.row" &
bench=$!
while kill -0 "$redis_pid" 2>/dev/null; do sleep 0.005; done
wait "$redis_pid" 2>/dev/null || true
t0=$(date +%s%N)
start_redis
echo "restart: redis-server accepting again $(( ($(date +%s%N) - t0) / 1000000 )) ms after it died" >"$work/restart.txt"
wait "$bench" || rc=1
cat "$out.row" >>"$out"; rm -f "$out.row"
{
  echo
  echo "$(cat "$work/restart.txt"). A gap is the seqs the lost stream held that the receiving node"
  echo "had not delivered yet: a real node reads them from the database."
  [ "$rc" -eq 0 ] && echo "Delivery check: PASS (no loss unreported, no duplicate, no reordering)." ||
    echo "Delivery check: FAIL"
} >>"$out"
cat "$out"
exit "$rc"
