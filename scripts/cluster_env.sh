# cluster_env.sh: sourced by the chat cluster scripts (scripts/bench-cluster.sh, the chat.cluster_load
# test) to start and stop what a cluster needs on this machine: a throw-away redis-server (no
# persistence), a throw-away PostgreSQL (initdb --no-sync, fsync off: for tests and benchmarks
# only, never production) and strix-chat-server nodes, each on a free port. The caller sets
# ce_work (a scratch directory) and calls ce_cleanup from its EXIT trap; everything started here
# is stopped there, by process id.
#
#   ce_start_redis                 -> ce_redis_port, ce_redis_pid
#   ce_start_pg                    -> ce_pg_dir, ce_pg_port
#   ce_new_db NAME                 -> prints a postgresql:// URL of a fresh database NAME
#   ce_start_node VAR PORT ARGS... -> starts strix-chat-server $ce_server with ARGS on PORT, stores its pid in VAR

ce_redis_pid=
ce_pg_dir=
ce_pg_bin=
ce_pg_port=
ce_node_pids=()

# A port below the ephemeral range (free_port.py says why).
ce_free_port_py=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py
ce_free_port() {
  python3 "$ce_free_port_py"
}

# Waits until 127.0.0.1:PORT accepts (pid PID must stay alive); 1 after ~10 s.
ce_wait_port() {
  local port=$1 pid=$2
  for _ in $(seq 1000); do
    kill -0 "$pid" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.01
  done
  return 1
}

# Starts redis-server on ce_redis_port (a free one the first time, the same one on a restart).
ce_start_redis() {
  [ -n "${ce_redis_port:-}" ] || ce_redis_port=$(ce_free_port)
  redis-server --port "$ce_redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$ce_work" \
    --logfile "$ce_work/redis.log" >/dev/null 2>&1 &
  ce_redis_pid=$!
  ce_wait_port "$ce_redis_port" "$ce_redis_pid" || { echo "cluster_env: redis-server did not start" >&2; return 1; }
}

ce_as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ce_start_pg() {
  local v
  v=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
  ce_pg_bin=${STRIX_PG_BINDIR:-/usr/lib/postgresql/$v/bin}
  [ -x "$ce_pg_bin/initdb" ] || { echo "cluster_env: PostgreSQL binaries not found (install postgresql)" >&2; return 1; }
  local base=/tmp
  [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')" -gt 1048576 ] 2>/dev/null && base=/dev/shm
  ce_pg_dir=$(mktemp -d "$base/strix-cluster-pg-XXXXXX")
  [ "$(id -u)" = 0 ] && chown postgres: "$ce_pg_dir"
  ce_as_pg "$ce_pg_bin/initdb" -D "$ce_pg_dir/data" -A trust -U postgres -E UTF8 --no-sync >"$ce_work/initdb.log" 2>&1 ||
    { cat "$ce_work/initdb.log" >&2; return 1; }
  printf "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n" \
    "$ce_pg_dir" | ce_as_pg tee -a "$ce_pg_dir/data/postgresql.conf" >/dev/null
  ce_pg_port=$(ce_free_port)
  ce_as_pg "$ce_pg_bin/pg_ctl" -D "$ce_pg_dir/data" -l "$ce_pg_dir/postgres.log" -o "-p $ce_pg_port" -w -t 60 start \
    >"$ce_work/pg_ctl.log" 2>&1 || { cat "$ce_work/pg_ctl.log" "$ce_pg_dir/postgres.log" >&2; return 1; }
}

ce_new_db() {
  ce_as_pg "$ce_pg_bin/createdb" -h "$ce_pg_dir" -p "$ce_pg_port" -U postgres "$1" >&2 || return 1
  echo "postgresql:///$1?host=$ce_pg_dir&port=$ce_pg_port&user=postgres"
}

ce_start_node() {
  local var=$1 port=$2
  shift 2
  "$ce_server" --port "$port" "$@" &
  local pid=$!
  ce_node_pids+=("$pid")
  printf -v "$var" '%s' "$pid"
  ce_wait_port "$port" "$pid" || { echo "cluster_env: strix-chat-server $* did not start on $port" >&2; return 1; }
}

ce_cleanup() {
  local p
  for p in "${ce_node_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # `|| true` everywhere: under set -e a failing command here would turn the caller's exit status into 1.
  if [ -n "$ce_redis_pid" ]; then kill -9 "$ce_redis_pid" 2>/dev/null || true; fi
  if [ -n "$ce_pg_dir" ] && [ -d "$ce_pg_dir/data" ]; then
    ce_as_pg "$ce_pg_bin/pg_ctl" -D "$ce_pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "$ce_pg_dir" ]; then rm -rf "$ce_pg_dir"; fi
  return 0
}
