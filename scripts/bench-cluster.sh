#!/usr/bin/env bash
# make bench-cluster: the Chat server portfolio's chat workload (500 clients, 10 rooms, 10
# messages/s each, payload 64 B 80 % / 256 B 18 % / 1-2 KB 2 %) over two strix-chat-server cluster
# nodes sharing one redis-server, next to one node without --cluster, in the same run, interleaved:
#
#   run r = 1 .. CLUSTER_RUNS:  single-rR (one node, CLUSTER_SINGLE_SHARDS shards)
#                               cluster-rR (two nodes of CLUSTER_NODE_SHARDS shards, each room's
#                                           members spread over both: strix-chat-load --targets)
#   then:                       single-drops (one node, --reconnect-share CLUSTER_DROP_SHARE: clients
#                                           reset their connection once and resume; the control run)
#   and on the cluster:         drops      (the same, resuming on the other node)
#                               redis-kill (redis-server killed -9 half-way through, restarted at once)
#                               node-kill  (node 1 killed -9 half-way through; its clients reconnect to
#                                           node 2 with their resume tokens: --reconnect)
#
# Every run gets a fresh PostgreSQL database (one throw-away PostgreSQL for the whole script, also
# under the single node, so the comparison is about the cluster and not the database) and the
# cluster runs a fresh redis-server. Everything (load tool, nodes, Redis, PostgreSQL) runs on this
# machine, unpinned. CPU use of Redis and of the nodes is read from /proc/PID/stat from the start of
# the warmup to the end of the run; for redis-kill the script times how long until the nodes'
# pub/sub subscriptions are all back (PUBSUB NUMSUB summed over PUBSUB CHANNELS). The load tool
# verifies every delivery; scripts/cluster_report.py writes <build>/bench/cluster.md.
#
#   scripts/bench-cluster.sh <build dir>
# Environment: CLUSTER_RUNS (3), CLUSTER_DURATION (15 s measured), CLUSTER_WARMUP (3), CLUSTER_CLIENTS (500),
#   CLUSTER_ROOMS (10), CLUSTER_RPS (10), CLUSTER_PAYLOAD_MIX, CLUSTER_NODE_SHARDS (1),
#   CLUSTER_SINGLE_SHARDS (2: the same shards in all as the two nodes), CLUSTER_IO (auto),
#   CLUSTER_FAULTS (1; 0 skips the drops, redis-kill and node-kill runs), CLUSTER_DROP_SHARE (0.2).
# Exits 1 when a steady run (single or cluster) fails its delivery check (after writing cluster.md,
# which shows it) or a process misbehaves; the fault runs' verdicts are reported whatever they are.
set -euo pipefail

build=${1:?usage: scripts/bench-cluster.sh <build dir>}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs_dir=$out/cluster-runs
n_runs=${CLUSTER_RUNS:-3}
duration=${CLUSTER_DURATION:-15}
warmup=${CLUSTER_WARMUP:-3}
clients=${CLUSTER_CLIENTS:-500}
rooms=${CLUSTER_ROOMS:-10}
rps=${CLUSTER_RPS:-10}
mix=${CLUSTER_PAYLOAD_MIX:-64:80,256:18,1024-2048:2}
node_shards=${CLUSTER_NODE_SHARDS:-1}
single_shards=${CLUSTER_SINGLE_SHARDS:-2}
io=${CLUSTER_IO:-auto}
do_faults=${CLUSTER_FAULTS:-1}
drop_share=${CLUSTER_DROP_SHARE:-0.2}

die() { echo "bench-cluster: FAILED: $*" >&2; exit 1; }
for b in strix-chat-server strix-chat-load; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
command -v redis-server >/dev/null || die "redis-server is not installed (scripts/install-deps.sh)"
command -v redis-cli >/dev/null || die "redis-cli is not installed (scripts/install-deps.sh)"

rm -rf "$runs_dir"
mkdir -p "$runs_dir"
ce_work=$(mktemp -d /tmp/strix-bench-cluster-XXXXXX)
ce_server=$bin/strix-chat-server
. "$here/cluster_env.sh"
cleanup() { ce_cleanup; rm -rf "$ce_work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# CPU seconds (user + system) of PID so far; empty when it is gone.
cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || true
}
now_s() { date +%s.%N; }

# Stops a node with SIGTERM (10 s, then -9); 1 when it did not stop cleanly.
stop_node() {
  local pid=$1 rc=0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1000); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; wait "$pid" 2>/dev/null; return 1; fi
  wait "$pid" 2>/dev/null || rc=$?
  return "$rc"
}

# Sum of subscribers over every pub/sub channel of the Redis on ce_redis_port.
subscriptions() {
  local chans
  chans=$(redis-cli -p "$ce_redis_port" --raw PUBSUB CHANNELS 2>/dev/null) || { echo -1; return; }
  [ -n "$chans" ] || { echo 0; return; }
  # shellcheck disable=SC2086
  redis-cli -p "$ce_redis_port" --raw PUBSUB NUMSUB $chans 2>/dev/null | awk 'NR % 2 == 0 { s += $1 } END { print s + 0 }'
}

# Waits until the load tool's log says the measured step started (setup over).
wait_running() {
  local log=$1 pid=$2
  for _ in $(seq 6000); do
    grep -q '^running:' "$log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

load_common=(--clients "$clients" --rooms "$rooms" --rps "$rps" --payload-mix "$mix" --duration "$duration"
             --warmup "$warmup" --report-every 5 --drain-timeout 15)
server_common=(--password-cost fast --metrics-port 0 --io "$io" --chat-rate 1000000 --chat-burst 1000000)

# One run: TAG single|cluster [FAULT]. Writes runs/TAG.json (the load tool's), runs/TAG.log and
# runs/TAG.extra.json (CPU shares, fault timings).
run_one() {
  local tag=$1 kind=$2 fault=${3:-} db pa pb n1= n2= lpid extra=() rc=0
  db=$(ce_new_db "${tag//-/_}") || die "createdb $tag"
  pa=$(ce_free_port)
  local pids=()
  if [ "$kind" = single ]; then
    ce_start_node n1 "$pa" --db "$db" "${server_common[@]}" --shards "$single_shards" >"$runs_dir/$tag.node1.log" 2>&1 ||
      { cat "$runs_dir/$tag.node1.log" >&2; die "node of $tag did not start"; }
    pids=("$n1")
    extra=(--port "$pa")
    [ "$fault" = drops ] && extra+=(--reconnect-share "$drop_share")
  else
    ce_redis_port=
    ce_start_redis || die "redis-server for $tag did not start"
    pb=$(ce_free_port)
    local cl=(--db "$db" "${server_common[@]}" --shards "$node_shards" --cluster "redis://127.0.0.1:$ce_redis_port")
    ce_start_node n1 "$pa" "${cl[@]}" --node-id 1 >"$runs_dir/$tag.node1.log" 2>&1 ||
      { cat "$runs_dir/$tag.node1.log" >&2; die "node 1 of $tag did not start"; }
    ce_start_node n2 "$pb" "${cl[@]}" --node-id 2 >"$runs_dir/$tag.node2.log" 2>&1 ||
      { cat "$runs_dir/$tag.node2.log" >&2; die "node 2 of $tag did not start"; }
    pids=("$n1" "$n2")
    extra=(--targets "127.0.0.1:$pa,127.0.0.1:$pb")
    case "$fault" in
      drops) extra+=(--reconnect-share "$drop_share") ;;
      node-kill) extra+=(--reconnect) ;;
    esac
  fi
  echo "bench-cluster: $tag ($kind${fault:+, $fault})" >&2
  "$bin/strix-chat-load" "${extra[@]}" "${load_common[@]}" --name-prefix "l${tag//-/}" \
    --json "$runs_dir/$tag.json" >"$runs_dir/$tag.log" 2>&1 &
  lpid=$!
  wait_running "$runs_dir/$tag.log" "$lpid" || { cat "$runs_dir/$tag.log" >&2; die "$tag: the load tool did not start its run"; }
  local t0 c_redis0= c_n10 c_n20= t_kill= resub_ms=None subs_before=None restart_ms=None
  t0=$(now_s)
  [ "$kind" = cluster ] && c_redis0=$(cpu_s "$ce_redis_pid")
  c_n10=$(cpu_s "$n1")
  [ -n "$n2" ] && c_n20=$(cpu_s "$n2")
  local c_n1_end= c_redis_end=
  if [ -n "$fault" ] && [ "$fault" != drops ]; then
    sleep "$(python3 -c "print($warmup + $duration / 2)")"
    if [ "$fault" = redis-kill ]; then
      subs_before=$(subscriptions)
      c_redis_end=$(cpu_s "$ce_redis_pid")
      t_kill=$(now_s)
      kill -9 "$ce_redis_pid"
      wait "$ce_redis_pid" 2>/dev/null || true
      ce_start_redis || die "redis-server did not restart"
      restart_ms=$(python3 -c "print(round(($(now_s) - $t_kill) * 1000, 1))")
      c_redis0=$(python3 -c "print($c_redis0 - $c_redis_end)")  # the old process's share, carried over
      local s
      for _ in $(seq 2000); do
        s=$(subscriptions)
        if [ "$s" -ge "$subs_before" ]; then
          resub_ms=$(python3 -c "print(round(($(now_s) - $t_kill) * 1000, 1))")
          break
        fi
        sleep 0.005
      done
    else
      c_n1_end=$(cpu_s "$n1")
      t_kill=$(now_s)
      kill -9 "$n1"
      wait "$n1" 2>/dev/null || true
    fi
  fi
  wait "$lpid" || rc=$?
  local t1 c_redis1= c_n11 c_n21=
  t1=$(now_s)
  [ "$kind" = cluster ] && c_redis1=$(cpu_s "$ce_redis_pid")
  c_n11=${c_n1_end:-$(cpu_s "$n1")}
  [ -n "$n2" ] && c_n21=$(cpu_s "$n2")
  python3 - "$runs_dir/$tag.extra.json" <<PY
import json, sys
def share(a, b, t0=$t0, t1=$t1):
    try:
        return round(100.0 * (float(b) - float(a)) / (t1 - t0), 1)
    except ValueError:
        return None
json.dump({"tag": "$tag", "kind": "$kind", "fault": "$fault" or None, "load_exit": $rc,
           "wall_s": round($t1 - $t0, 2),
           "redis_cpu_pct": share("$c_redis0", "$c_redis1") if "$kind" == "cluster" else None,
           "node1_cpu_pct": share("$c_n10", "$c_n11"),
           "node2_cpu_pct": share("$c_n20", "$c_n21") if "$c_n20" else None,
           "redis_restart_ms": $restart_ms, "resubscribed_ms": $resub_ms, "subscriptions_before": $subs_before},
          open(sys.argv[1], "w"))
PY
  local stop_rc=0
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then stop_node "$p" || stop_rc=1; fi
  done
  if [ "$kind" = cluster ]; then kill -9 "$ce_redis_pid" 2>/dev/null || true; wait "$ce_redis_pid" 2>/dev/null || true; fi
  if [ -z "$fault" ]; then
    # Reported in cluster.md either way; the script's status says it.
    if [ "$rc" -ne 0 ]; then
      grep -v '^ *[0-9]*s ' "$runs_dir/$tag.log" | tail -8 >&2
      echo "bench-cluster: $tag did not verify (the load tool exited $rc)" >&2
      steady_failed=1
    fi
    [ "$stop_rc" -eq 0 ] || die "$tag: a node did not stop cleanly on SIGTERM"
  fi
  return 0
}

ce_start_pg || die "PostgreSQL did not start"
steady_failed=0
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(now_s)
for r in $(seq "$n_runs"); do
  run_one "single-r$r" single
  run_one "cluster-r$r" cluster
done
if [ "$do_faults" = 1 ]; then
  run_one single-drops single drops
  run_one drops cluster drops
  run_one redis-kill cluster redis-kill
  run_one node-kill cluster node-kill
fi
mkdir -p "$out"
python3 "$here/cluster_report.py" --runs "$runs_dir" --out "$out/cluster.md" --elapsed "$(python3 -c "print(round($(now_s) - $t_start))")" \
  --config "clients=$clients rooms=$rooms rps=$rps mix=$mix duration=$duration warmup=$warmup node_shards=$node_shards single_shards=$single_shards io=$io drop_share=$drop_share runs=$n_runs" \
  --loadavg "$load_before -> $(cut -d' ' -f1-3 /proc/loadavg)" \
  --redis-version "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')" \
  --pg-version "$("$ce_pg_bin/postgres" --version | awk '{print $3}')"
echo "bench-cluster: wrote $out/cluster.md" >&2
[ "$steady_failed" -eq 0 ] || { echo "bench-cluster: FAILED: a steady run did not verify (see cluster.md)" >&2; exit 1; }
