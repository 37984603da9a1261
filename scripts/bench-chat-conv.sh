# bench-chat-conv.sh: step 7 of scripts/bench-chat.sh, sourced by it (not run on its own): the
# conversations workload on one node and on two cluster nodes.
#
#   conversation_runs     CHAT_CONV_RUNS times: conv-single-rN, then conv-cluster-rN (unless
#                         CHAT_CONV_CLUSTER=0), each on fresh databases; the load tool's JSON, log
#                         and command line in chat-runs/ under those tags
#
# Uses bench-chat.sh's settings (bin, runs, tmp, mix, load_threads, shards, ncpu, pin, conv_*) and
# helpers (start_server, stop_server, die). A run whose load tool fails is recorded (its JSON, or a
# stub saying why) and sets conv_failed; chat_conv_report.py shows it and exits 1.

conv_failed=0

# conv_load <tag> <target args...>: strix-chat-load with the conversations workload's arguments.
conv_load() {
  local tag=$1
  shift
  local cmd=("${pin[@]}" "$bin/strix-chat-load" "$@" --clients "$conv_clients" --rooms-per-client "$conv_k"
             --room-size "$conv_m" --dm-share "$conv_share" --dm-partners 2 --rps "$conv_rps"
             --payload-mix "$mix" --threads "$load_threads" --duration "$conv_duration" --warmup "$conv_warmup"
             --report-every 10 --setup-timeout 1200 --drain-timeout 30 --name-prefix "$tag."
             --json "$runs/$tag.json")
  echo "${cmd[*]}" >"$runs/$tag.cmd"
  echo "bench-chat: ${cmd[*]}"
  set +e
  timeout $((conv_duration + conv_warmup + 1500)) "${cmd[@]}" 2>&1 | tee "$runs/$tag.log"
  local rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    conv_failed=1
    echo "bench-chat: strix-chat-load ($tag) exited $rc; log: $runs/$tag.log" >&2
    [ -s "$runs/$tag.json" ] ||
      printf '{"ok": false, "failure": "strix-chat-load exited %s without a JSON file (see %s.log)"}\n' \
        "$rc" "$tag" >"$runs/$tag.json"
  fi
}

# conv_stop_node <pid>: SIGTERM, which must end it cleanly within 10 s.
conv_stop_node() {
  local pid=$1 rc=0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && die "a cluster node ignored SIGTERM for 10 s"
  wait "$pid" 2>/dev/null || rc=$?
  [ "$rc" -eq 0 ] || die "a cluster node exited $rc on SIGTERM; see $runs/conv-cluster-*.node*.log"
}

# conv_pin <pid>: moves a process (every thread) and its children onto the server CPUs, so Redis and
# PostgreSQL share them with the nodes and the load tool keeps its own.
conv_pin() {
  [ ${#pin[@]} -gt 0 ] || return 0
  local p
  for p in "$1" $(ps -o pid= --ppid "$1"); do taskset -a -p -c "$server_cpus" "$p" >/dev/null 2>&1 || true; done
}

conv_cluster_setup() {
  command -v redis-server >/dev/null ||
    die "redis-server is not installed (scripts/install-deps.sh); CHAT_CONV_CLUSTER=0 skips the cluster runs"
  ce_work=$tmp/cluster
  mkdir -p "$ce_work"
  # Nodes start through a wrapper that puts them on their CPUs (taskset) before --pin spreads the shards.
  ce_server=$tmp/pinned-node.sh
  printf '#!/usr/bin/env bash\nif [ -n "$STRIX_NODE_CPUS" ]; then exec taskset -c "$STRIX_NODE_CPUS" %q "$@"; fi\nexec %q "$@"\n' \
    "$bin/strix-chat-server" "$bin/strix-chat-server" >"$ce_server"
  chmod +x "$ce_server"
  # shellcheck source=cluster_env.sh
  . "$here/cluster_env.sh"
  ce_loaded=1
  ce_start_pg || die "PostgreSQL did not start (CHAT_CONV_CLUSTER=0 skips the cluster runs)"
  conv_pin "$(head -1 "$ce_pg_dir/data/postmaster.pid")"
}

# conv_cluster_run <tag>: two nodes (half the shards each) on a fresh database and Redis.
conv_cluster_run() {
  local tag=$1 db pa pb n1= n2= half cpus1 cpus2
  half=$(( shards / 2 > 0 ? shards / 2 : 1 ))
  cpus1=0-$((half - 1))
  cpus2=$cpus1
  [ $((2 * half)) -le "$shards" ] && cpus2=$half-$((2 * half - 1))
  ce_redis_port=
  ce_start_redis || die "redis-server for $tag did not start"
  conv_pin "$ce_redis_pid"
  db=$(ce_new_db "${tag//-/_}") || die "createdb for $tag failed"
  pa=$(ce_free_port)
  pb=$(ce_free_port)
  local common=(--db "$db" --password-cost fast --metrics-port 0 --chat-rate 1000000 --chat-burst 1000000
                --max-connections-per-address 0 --login-queue 1024 --shards "$half" --pin
                --cluster "redis://127.0.0.1:$ce_redis_port" "${extra_args[@]}")
  [ ${#pin[@]} -gt 0 ] || { cpus1=; cpus2=; }
  echo "$bin/strix-chat-server --port $pa ${common[*]} --node-id 1 (CPUs ${cpus1:-any}); node 2 the same on $pb (CPUs ${cpus2:-any})" \
    >"$runs/$tag.server.cmd"
  STRIX_NODE_CPUS=$cpus1 ce_start_node n1 "$pa" "${common[@]}" --node-id 1 >"$runs/$tag.node1.log" 2>&1 ||
    { cat "$runs/$tag.node1.log" >&2; die "node 1 of $tag did not start"; }
  STRIX_NODE_CPUS=$cpus2 ce_start_node n2 "$pb" "${common[@]}" --node-id 2 >"$runs/$tag.node2.log" 2>&1 ||
    { cat "$runs/$tag.node2.log" >&2; die "node 2 of $tag did not start"; }
  conv_load "$tag" --targets "127.0.0.1:$pa,127.0.0.1:$pb"
  conv_stop_node "$n1"
  conv_stop_node "$n2"
  kill -9 "$ce_redis_pid" 2>/dev/null || true
  wait "$ce_redis_pid" 2>/dev/null || true
}

conversation_runs() {
  server_cpus=0-$((shards - 1))
  # Every client holds a socket in the load tool and one in the server (or a node).
  local want=$((conv_clients + 256))
  [ "$(ulimit -n)" -ge "$want" ] || ulimit -n "$want" 2>/dev/null ||
    die "the open-file limit ($(ulimit -n)) is below the $want the conversations runs need: raise ulimit -n"
  if [ "$do_conv_cluster" = 1 ]; then conv_cluster_setup; fi
  echo "bench-chat: conversations: $conv_clients clients, $conv_k rooms of $conv_m each, $conv_share direct," \
    "$conv_rps msg/s each, $conv_runs_n runs"
  for r in $(seq "$conv_runs_n"); do
    start_server stored "-conv-single-r$r"
    conv_load "conv-single-r$r" --host 127.0.0.1 --port "$port" --server-pid "$server_pid"
    stop_server
    if [ "$do_conv_cluster" = 1 ]; then conv_cluster_run "conv-cluster-r$r"; fi
  done
}
