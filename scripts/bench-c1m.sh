#!/usr/bin/env bash
# make bench-c1m: how many chat connections one node holds, and what they cost. strix-chat-server
# and strix-chat-hold on this machine over loopback:
#
#   1. limits: RLIMIT_NOFILE (soft to hard, hard to what CONNS needs when permitted) and the
#      sysctls fs.nr_open, fs.file-max, net.ipv4.ip_local_port_range, net.core.somaxconn,
#      net.ipv4.tcp_max_syn_backlog, net.ipv4.tcp_mem raised where too low, each saved and put back
#      on exit; a limit that cannot be raised is named with what it allows, and the run goes on at
#      that count instead of CONNS;
#   2. strix-platform-probe's connect ceiling in the run's namespace, before anything else is
#      connected: a bare accepter on CPU 0 and connector on CPU 1 (no server, no logins), as many
#      connections as one descriptor table holds, with 0 and with 2 small request/reply round trips
#      (connect_floor_per_s: what the machine's loopback TCP allows the ramp at most), and the
#      CPU a bare send() takes (broadcast_floor_s: the broadcast's sends alone at that cost);
#   3. a server (embedded SQLite in a temporary directory, --jwt-key HS256 for the held
#      connections, password logins at the cheap cost for the chat workload, --max-connections
#      above the count, /metrics on), its shards pinned to the first CPUs, the clients on the rest;
#   4. the chat workload alone (strix-chat-load, CHAT_CLIENTS clients in CHAT_ROOMS rooms at
#      CHAT_RPS messages/s each, the portfolio's payload mix; by default 200 clients, 10 rooms,
#      10 messages/s each: seed 004's 500 need more than this machine has beside a million, see
#      docs/benchmarks.md) for CHAT_DURATION s: chat_p99_alone_us;
#   5. strix-chat-hold --reconnect: N connections (TCP or WebSocket) from many 127.x source
#      addresses, ROOM_MEMBERS of them (default all) in one room, one message broadcast to them;
#   6. with all N held: server RSS, Slab and /proc/net/sockstat against before the ramp (kernel
#      bytes per connection), then IDLE_SECONDS of the N idle and pinging (server CPU from
#      /proc/<pid>/stat, the idle sweep's counters from /metrics), then the same chat workload
#      again for the rest of HOLD_SECONDS (chat_p50_us, chat_p99_us), so the N stay held at least
#      HOLD_SECONDS with the workload on top (held_s: all held to the restart);
#   7. the server restarted (SIGTERM, same database and ports): every held connection logs in
#      and rejoins again, the room's last seq is checked against what each member saw, and one
#      more message reaches all of them (reconnect_all_s: first drop to all back, the server's
#      stop and start included);
#   8. scripts/c1m_report.py writes <build_dir>/bench/c1m.md and c1m.json, gnuplot c1m.svg
#      (connections and RSS sampled every second).
#
#   scripts/bench-c1m.sh <build_dir>
# Environment: CONNS (1000000; smaller for a quick run, e.g. CONNS=5000), TRANSPORT (tcp|ws),
#   ROOM_MEMBERS (0: all), IDLE_SECONDS (10), HOLD_SECONDS (300), PING_INTERVAL (60), IN_FLIGHT
#   (64: the server's --login-queue follows), READ_EVERY (1000: strix-chat-hold's --read-every,
#   microseconds), PLACEMENT (split: the server on CPU 0, the tools on the rest; shared: both on
#   every CPU), CHAT_CLIENTS (200), CHAT_ROOMS (10), CHAT_RPS (10),
#   CHAT_DURATION (60: the run alone; the run beside the N takes the rest of HOLD_SECONDS, at least
#   this), CHAT_WARMUP (3), SHARDS (as the descriptor tables need: more runs that many, each with a
#   table of its own, so a small run has a million's shard count), TIME_LIMIT (300 s + HOLD_SECONDS
#   + 1 s per 1,000 CONNS for the whole run: past it the script stops everything).
set -euo pipefail

build=${1:?usage: scripts/bench-c1m.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs=$out/c1m-run
conns=${CONNS:-1000000}
requested=$conns
transport=${TRANSPORT:-tcp}
room_members=${ROOM_MEMBERS:-0}
idle_s=${IDLE_SECONDS:-10}
hold_s=${HOLD_SECONDS:-300}
ping_interval=${PING_INTERVAL:-60}
in_flight=${IN_FLIGHT:-64}
read_every=${READ_EVERY:-1000}
placement=${PLACEMENT:-split}
chat_clients=${CHAT_CLIENTS:-200}
chat_rooms=${CHAT_ROOMS:-10}
chat_rps=${CHAT_RPS:-10}
chat_duration=${CHAT_DURATION:-60}
chat_warmup=${CHAT_WARMUP:-3}
shards_asked=${SHARDS:-0}
# 300 s, the hold, and 1 s more per 1,000 connections (a million: 1,600 s): the ramp and the
# reconnect.
time_limit=${TIME_LIMIT:-$((300 + hold_s + ${CONNS:-1000000} / 1000))}
mix=64:80,256:18,1024-2048:2

die() { echo "bench-c1m: FAILED: $*" >&2; exit 1; }
say() { echo "bench-c1m: $*"; }
case $transport in tcp | ws) ;; *) die "TRANSPORT must be tcp or ws" ;; esac
[[ "$shards_asked" =~ ^[0-9]+$ ]] && [ "$shards_asked" -le 256 ] || die "SHARDS must be a number up to 256"
[[ "$ping_interval" =~ ^[0-9]+$ ]] || die "PING_INTERVAL must be whole seconds (0: no pings)"
[[ "$read_every" =~ ^[0-9]+$ ]] || die "READ_EVERY must be whole microseconds (0: the tool reads at once)"
case $placement in split | shared) ;; *) die "PLACEMENT must be split or shared" ;; esac
for b in strix-chat-server strix-chat-hold strix-chat-load strix-platform-probe; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
for c in curl openssl python3 gnuplot taskset flock; do
  command -v "$c" >/dev/null || die "$c is not installed (scripts/install-deps.sh)"
done

# One run at a time: a second would share the run directory, the ports' sysctls and the CPUs.
# (The run inside a namespace, below, inherits the lock from the script that started it.)
mkdir -p "$out"
if [ -z "${STRIX_C1M_INNER:-}" ]; then
  exec 9>"$out/c1m.lock"
  flock -n 9 || die "another bench-c1m is running (it holds $out/c1m.lock)"
fi

# --- 0. a network namespace of its own ---------------------------------------------------------
# TCP's table of established connections is sized at boot (net.ipv4.tcp_ehash_entries, 262,144
# buckets on the project's machines) and shared by every namespace, unless
# net.ipv4.tcp_child_ehash_entries gives a new one a table of its own (Linux 6.1). A million
# connections are 2,000,000 sockets, eight to a bucket in the boot table, and the lookup walked
# those chains for every packet (__inet_lookup_established, 6-9 % of the server's profile). So the
# run goes in a network namespace of its own (loopback only, as before) whose table has a bucket
# per socket. RFS=1 also turns on receive flow steering on its loopback: each packet's receive
# processing runs on the CPU of the process that reads it, as across a network, instead of on the
# sender's (docs/benchmarks.md, "Where loopback puts the receive work"). NETNS=0: the machine's
# namespace, as before.
netns=${NETNS:-1}
rfs=${RFS:-0}
pow2_at_least() { local v=1; while [ "$v" -lt "$1" ]; do v=$((v * 2)); done; echo "$v"; }
sockets=$((2 * (conns + chat_clients + 1000)))
if [ "$netns" = 1 ] && [ -z "${STRIX_C1M_INNER:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null &&
    sysctl -n net.ipv4.tcp_child_ehash_entries >/dev/null 2>&1; then
    outer=$(mktemp -d "${TMPDIR:-/tmp}/strix-bench-c1m-outer.XXXXXX")
    outer_saved=()
    # set_global NAME VALUE: a sysctl the namespace cannot set itself, put back when the run ends.
    set_global() {
      local cur
      cur=$(sysctl -n "$1" | tr -s '\t ' ' ')
      if sysctl -qw "$1=$2" >/dev/null 2>&1; then
        outer_saved+=("$1=$cur")
        echo "sysctl $1 = $2 (was $cur; restored on exit)" >>"$outer/notes"
      else
        echo "sysctl $1 = $cur: could not be set to $2" >>"$outer/notes"
      fi
      echo "$1 $(sysctl -n "$1" | tr -s '\t ' ' ')" >>"$outer/sysctl"
    }
    : >"$outer/notes"
    : >"$outer/sysctl"
    ehash=$(pow2_at_least "$sockets")
    [ "$ehash" -le 16777216 ] || ehash=16777216
    set_global net.ipv4.tcp_child_ehash_entries "$ehash"
    # tcp_mem is the machine's, not a namespace's: a quarter, a third and half of the memory in
    # pages, so N sockets' buffers never push TCP into memory pressure.
    mem_pages=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 4))
    cur_mem=$(sysctl -n net.ipv4.tcp_mem | awk '{print $3}')
    if [ "$cur_mem" -lt "$((mem_pages / 2))" ]; then
      set_global net.ipv4.tcp_mem "$((mem_pages / 4)) $((mem_pages / 3)) $((mem_pages / 2))"
    else
      echo "net.ipv4.tcp_mem $(sysctl -n net.ipv4.tcp_mem | tr -s '\t ' ' ')" >>"$outer/sysctl"
    fi
    [ "$rfs" = 1 ] && set_global net.core.rps_sock_flow_entries "$(pow2_at_least "$sockets")"
    say "running in a network namespace of its own: TCP table of $ehash buckets (NETNS=0: the machine's)"
    rc=0
    # A signal to this script alone waits for the run's end (bash runs the trap then), so the
    # settings above are always put back; the run has its own TIME_LIMIT.
    trap 'say "interrupted; waiting for the run in the namespace to end"' INT TERM
    STRIX_C1M_INNER=1 STRIX_C1M_OUTER="$outer" unshare --net --mount -- "$here/$(basename "$0")" "$@" || rc=$?
    for kv in "${outer_saved[@]}"; do sysctl -qw "$kv" >/dev/null 2>&1 || echo "bench-c1m: could not restore $kv" >&2; done
    rm -rf "$outer"
    exit "$rc"
  fi
  say "no network namespace of its own (it needs root, unshare, ip and Linux 6.1): the machine's TCP table"
  netns=0
fi
rm -rf "$runs"
mkdir -p "$runs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strix-bench-c1m.XXXXXX")
pids=()
saved_sysctls=()
cleanup() {
  local p kv i
  # The server first, and gracefully, while the tools still hold their connections: killed while
  # it closed 100,000 sessions, a server has left its io_uring requests (unreclaimable slab) and
  # its listening sockets behind on this kernel (docs/benchmarks.md, "Connections per node").
  if [ -n "${server_pid:-}" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for ((i = 0; i < (30 + conns / 10000) * 10; i++)); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  # Children first (the watchdog's sleep, the sampler's curl), then the processes themselves.
  for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  for kv in "${saved_sysctls[@]}"; do sysctl -qw "$kv" >/dev/null 2>&1 || echo "bench-c1m: could not restore $kv" >&2; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'echo "bench-c1m: FAILED: stopped after TIME_LIMIT=${time_limit} s" >&2; exit 124' TERM
# The whole run is bounded: past TIME_LIMIT the watchdog ends it (the EXIT trap kills the rest).
(sleep "$time_limit" && kill -TERM $$ 2>/dev/null) >/dev/null 2>&1 &
pids+=("$!")
disown

# --- 1. limits -------------------------------------------------------------------------------
limits_log=$runs/limits.txt
: >"$limits_log"
note() { echo "$*" | tee -a "$limits_log"; }

if [ -n "${STRIX_C1M_INNER:-}" ]; then
  # Inside the namespace: its loopback up, its sysctls (the ones below that are per namespace)
  # start at the kernel's defaults, and the settings made outside it are reported with ours.
  ip link set lo up || die "could not bring up the namespace's loopback"
  cat "$STRIX_C1M_OUTER/notes" >>"$limits_log"
  note "network namespace of its own: TCP table of $(sysctl -n net.ipv4.tcp_ehash_entries) buckets"
  if [ "$rfs" = 1 ]; then
    # The namespace's own sysfs shows its loopback.
    mount -t sysfs sysfs /sys || die "could not mount the namespace's sysfs for RFS"
    cpus=$(printf '%x' $(((1 << $(nproc)) - 1)))
    echo "$cpus" >/sys/class/net/lo/queues/rx-0/rps_cpus
    pow2_at_least "$sockets" >/sys/class/net/lo/queues/rx-0/rps_flow_cnt
    note "RFS on the loopback: rps_cpus $cpus, rps_flow_cnt $(cat /sys/class/net/lo/queues/rx-0/rps_flow_cnt)"
  fi
fi

# raise_sysctl NAME VALUE: sets NAME when its value is below VALUE (for vectors: any field
# below), remembering the old value for the exit trap. Returns 1 when it could not.
raise_sysctl() {
  local name=$1 want=$2 cur
  cur=$(sysctl -n "$name" 2>/dev/null | tr -s '\t ' ' ') || { note "sysctl $name: not readable"; return 1; }
  if python3 -c 'import sys; c=[int(x) for x in sys.argv[1].split()]; w=[int(x) for x in sys.argv[2].split()]; sys.exit(0 if all(a >= b for a, b in zip(c, w)) else 1)' "$cur" "$want"; then
    note "sysctl $name = $cur (enough)"
    return 0
  fi
  if sysctl -qw "$name=$want" >/dev/null 2>&1; then
    saved_sysctls+=("$name=$cur")
    note "sysctl $name = $want (was $cur; restored on exit)"
    return 0
  fi
  note "sysctl $name = $cur: could not be raised to $want (not root, or a read-only /proc/sys)"
  return 1
}

# Descriptors: the server holds N + the chat clients + its own; the tool N + its own.
need_fds=$((conns + chat_clients + 1000))
raise_sysctl fs.nr_open "$need_fds" || true
raise_sysctl fs.file-max "$((2 * need_fds + 100000))" || true
raise_sysctl net.ipv4.ip_local_port_range "1024 65535" || true
raise_sysctl net.core.somaxconn 65535 || true
raise_sysctl net.ipv4.tcp_max_syn_backlog 65535 || true
# tcp_mem in pages: a quarter, a third and half of the memory, so N sockets' buffers never
# push TCP into memory pressure.
# (Set outside the namespace when there is one: it is the machine's.)
mem_pages=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 4))
[ -n "${STRIX_C1M_INNER:-}" ] || raise_sysctl net.ipv4.tcp_mem "$((mem_pages / 4)) $((mem_pages / 3)) $((mem_pages / 2))" || true

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=$need_fds
if [ "$hard" -lt "$need_fds" ] && ulimit -Hn "$need_fds" 2>/dev/null; then
  note "RLIMIT_NOFILE hard limit raised from $hard to $need_fds"
  hard=$need_fds
fi
ulimit -Sn "$hard"
fd_tables=1
if [ "$hard" -lt "$need_fds" ]; then
  why="RLIMIT_NOFILE hard limit $hard"
  capbnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
  if [ -z "$capbnd" ] || (( ((16#$capbnd >> 24) & 1) == 0 )); then why+=" and no CAP_SYS_RESOURCE"; fi
  # The limit caps one descriptor table: the server gives each shard a table of its own
  # (--fd-table-per-shard) and runs as many shards as the connections need, strix-chat-hold a
  # table per worker thread (at most 64). Each table keeps 300 descriptors spare, and the server's
  # shards are planned 5 % below that: SO_REUSEPORT spreads connections by a hash of the 4-tuple,
  # not evenly (at a million over 51 full tables, one shard's table filled 449 short).
  per_table=$(((hard - 300) * 95 / 100))
  [ "$per_table" -ge 500 ] || die "$why leaves no room for a run"
  fd_tables=$(((conns + chat_clients + per_table - 1) / per_table))
  if [ "$fd_tables" -gt 64 ]; then
    fit=$((per_table * 64 - chat_clients))
    note "$why: 64 descriptor tables hold at most ~$fit connections; running CONNS=$fit instead of $conns"
    conns=$fit
    fd_tables=64
  fi
  note "$why: the server runs $fd_tables shards with a descriptor table each (--fd-table-per-shard), strix-chat-hold as many threads"
fi
[ "$room_members" -gt 0 ] && [ "$room_members" -lt "$conns" ] || room_members=$conns
note "RLIMIT_NOFILE soft = hard = $hard"
for s in fs.nr_open fs.file-max net.ipv4.ip_local_port_range net.core.somaxconn net.ipv4.tcp_max_syn_backlog net.ipv4.tcp_mem net.ipv4.tcp_ehash_entries; do
  v=$(sysctl -n "$s" 2>/dev/null | tr -s '\t ' ' ') && echo "$s $v"
done >"$runs/sysctl.txt"
[ -z "${STRIX_C1M_INNER:-}" ] || cat "$STRIX_C1M_OUTER/sysctl" >>"$runs/sysctl.txt"

# --- 2. the machine's connect ceiling -------------------------------------------------------------
# The same loopback and TCP table the run will use, nothing else connected yet: how fast a bare
# accept loop on one CPU takes connections from a bare connector on the other, each held, with
# and without two small request/reply round trips (a login and a join). As many connections as
# one table holds, at most 19,000, so the ceiling is read near the run's start, not at N. And
# what one bare send() costs (a blocking loop on CPU 0 over as many connections as one table holds
# with both their ends, at most 9,000: fewer fit in the caches and read cheaper), against which the
# broadcast reads (broadcast_floor_s).
probe_connects=$((conns < 19000 ? conns : 19000))
probe_segments=$((conns < 9000 ? conns : 9000))
[ "$probe_segments" -le $(((hard - 200) / 2)) ] || probe_segments=$(((hard - 200) / 2))
say "strix-platform-probe: the connect ceiling with $probe_connects connections, a send's cost with $probe_segments"
"$bin/strix-platform-probe" --hiccup-seconds 0.5 --segment-seconds 2 --connections "$probe_segments" \
  --connects "$probe_connects" --json "$runs/platform.json" >"$runs/platform.md" ||
  die "strix-platform-probe failed; see $runs/platform.md"

# --- 3. the server -----------------------------------------------------------------------------
free_port() { python3 "$here/free_port.py"; }
ncpu=$(nproc)
server_cpus=$((ncpu > 1 ? ncpu - 1 : 1))
client_cpus=$((ncpu > 1 ? server_cpus : 0))-$((ncpu - 1))
[ "$server_cpus" -eq $((ncpu - 1)) ] && client_cpus=$((ncpu - 1))
server_set=0-$((server_cpus - 1))
# PLACEMENT=shared: the server and the tools each on every CPU, the scheduler placing them.
if [ "$placement" = shared ]; then
  server_set=0-$((ncpu - 1))
  client_cpus=$server_set
  note "PLACEMENT=shared: the server and the tools on CPUs $server_set alike"
fi
pin=(taskset -c "$client_cpus")
# One shard per server CPU, pinned; with a descriptor table per shard, as many shards as tables,
# all confined to the server's CPUs.
shards=$server_cpus
server_pin=(--pin)
if [ "$fd_tables" -gt 1 ]; then
  shards=$((fd_tables > server_cpus ? fd_tables : server_cpus))
  server_pin=(--fd-table-per-shard)
fi
# SHARDS above that: as many shards, each with a table, as a larger run would have.
if [ "$shards_asked" -gt "$shards" ]; then
  shards=$shards_asked
  server_pin=(--fd-table-per-shard)
  note "SHARDS=$shards_asked: the server runs $shards shards with a descriptor table each (--fd-table-per-shard)"
fi
openssl rand -hex 32 >"$tmp/jwt.key"
port=$(free_port)
ws_port=$(free_port)
metrics_port=$(free_port)
login_queue=$((in_flight > 64 ? in_flight : 64))
server_cmd=(taskset -c "$server_set" "$bin/strix-chat-server" --db "sqlite:$tmp/chat.db" --port "$port" --ws-port "$ws_port"
  --metrics-port "$metrics_port" --jwt-key "$tmp/jwt.key" --logins both --password-cost fast
  --max-connections "$((conns + chat_clients + 100))" --login-queue "$login_queue"
  --chat-rate 1000000 --chat-burst 1000000 --shards "$shards" "${server_pin[@]}")
echo "${server_cmd[*]}" >"$runs/server.cmd"
server_pid=

start_server() {
  "${server_cmd[@]}" >>"$runs/server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  echo "$server_pid" >"$tmp/server.pid"
  for _ in $(seq 200); do
    kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$runs/server.log" >&2; die "strix-chat-server exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  die "strix-chat-server did not accept on 127.0.0.1:$port within 10 s"
}

stop_server() {
  # A graceful stop closes every session: 30 s and 1 s more per 10,000 of them.
  local wait_s=$((30 + conns / 10000))
  kill -TERM "$server_pid"
  for _ in $(seq $((wait_s * 10))); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$server_pid" 2>/dev/null && die "strix-chat-server did not stop within $wait_s s of SIGTERM"
  local rc=0
  wait "$server_pid" || rc=$?
  [ "$rc" -eq 0 ] || die "strix-chat-server exited $rc on SIGTERM; see $runs/server.log"
}

metric() {  # metric NAME: the sum of its samples on the server's /metrics (0 when absent)
  local body try
  for try in 1 2 3 4 5; do
    if body=$(curl -sf --max-time 10 "http://127.0.0.1:$metrics_port/metrics"); then
      awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2} END {printf "%.0f\n", s}' <<<"$body"
      return 0
    fi
    sleep 1
  done
  echo "bench-c1m: /metrics did not answer in 5 tries" >&2
  return 1
}
rss_of() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status" 2>/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# kernel_snapshot FILE: Slab bytes and sockstat's TCP figures (inuse, mem pages) and sockets used.
kernel_snapshot() {
  {
    awk '/^Slab:/ {printf "slab_bytes %.0f\n", $2 * 1024}' /proc/meminfo
    awk '/^TCP:/ {for (i = 2; i < NF; i += 2) print "tcp_" $i, $(i + 1)} /^sockets:/ {print "sockets_used", $3}' /proc/net/sockstat
  } >"$1"
}

start_server
say "server pid $server_pid: ${shards} shard(s) on CPU(s) $server_set, clients on CPU(s) $client_cpus; $conns connections over $transport"

# The sampler: every second the server's sessions, its RSS and the tool's RSS.
sampler() {
  set +e  # a failed read (the server restarting) is a 0 in the samples, not the sampler's end
  local t0 now spid hpid sessions srss hrss
  t0=$(date +%s.%N)
  echo "t_s sessions server_rss_bytes client_rss_bytes" >"$runs/samples.txt"
  while :; do
    now=$(date +%s.%N)
    spid=$(cat "$tmp/server.pid" 2>/dev/null)
    hpid=$(cat "$tmp/hold.pid" 2>/dev/null)
    sessions=$(metric strix_sessions 2>/dev/null | head -n 1)
    srss=$(rss_of "${spid:-0}" | head -n 1)
    hrss=$(rss_of "${hpid:-0}" | head -n 1)
    printf '%s %s %s %s\n' "$(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%.1f", a - b}')" \
      "${sessions//[^0-9]/}" "${srss//[^0-9]/}" "${hrss//[^0-9]/}" | awk 'NF == 4' >>"$runs/samples.txt"
    sleep 1
  done
}
sampler 9>&- >/dev/null 2>&1 &  # its sleep may outlive the script: not with the lock
pids+=("$!")
disown

# --- 4. the chat workload alone ----------------------------------------------------------------
chat_load() {  # chat_load TAG SECONDS
  local cmd=("${pin[@]}" "$bin/strix-chat-load" --host 127.0.0.1 --port "$port" --clients "$chat_clients"
    --rooms "$chat_rooms" --rps "$chat_rps" --payload-mix "$mix" --duration "$2" --warmup "$chat_warmup"
    --report-every 10 --server-pid "$server_pid" --name-prefix "$1." --json "$runs/$1.json")
  echo "${cmd[*]}" >"$runs/$1.cmd"
  "${cmd[@]}" >"$runs/$1.log" 2>&1 || { tail -n 15 "$runs/$1.log" >&2; die "strix-chat-load ($1) failed: $runs/$1.log"; }
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("bench-c1m: %s: chat p50 %s us, p99 %s us, %s" % (sys.argv[2], d["latency_us"]["p50"], d["latency_us"]["p99"], "verified" if d["verified"] else "NOT VERIFIED"))' "$runs/$1.json" "$1"
}
chat_load alone "$chat_duration"

# --- 5. the held connections --------------------------------------------------------------------
kernel_snapshot "$runs/kernel.before"
server_rss_before=$(rss_of "$server_pid")
hold_cmd=("${pin[@]}" "$bin/strix-chat-hold" --host 127.0.0.1 --port "$port" --jwt-key "$tmp/jwt.key"
  -n "$conns" --hold-room c1m --room-members "$room_members" --broadcast 1 --broadcast-timeout 60 --reconnect
  --hold-seconds "$time_limit" --ramp-timeout "$time_limit" --ping-interval "$ping_interval"
  --in-flight "$in_flight" --read-every "$read_every" --json "$runs/hold.json")
[ "$transport" = ws ] && hold_cmd+=(--ws-port "$ws_port")
echo "${hold_cmd[*]}" >"$runs/hold.cmd"
say "${hold_cmd[*]}"
"${hold_cmd[@]}" >"$runs/hold.out" 2>"$runs/hold.err" &
hold_pid=$!
pids+=("$hold_pid")
echo "$hold_pid" >"$tmp/hold.pid"

# wait_hold PATTERN SECONDS: waits for a line of the tool's progress (stderr).
wait_hold() {
  local end=$((SECONDS + $2))
  while ! grep -Eq -- "$1" "$runs/hold.err" 2>/dev/null; do
    kill -0 "$hold_pid" 2>/dev/null || { tail -n 20 "$runs/hold.err" >&2; cat "$runs/hold.out" >&2; die "strix-chat-hold exited before '$1'"; }
    [ "$SECONDS" -lt "$end" ] || { tail -n 5 "$runs/hold.err" >&2; die "no '$1' from strix-chat-hold within $2 s"; }
    sleep 0.2
  done
}
wait_hold '^holding ' "$time_limit"
held_at=$SECONDS
tail -n 2 "$runs/hold.err" | sed 's/^/bench-c1m: hold: /'

# --- 6. with all N held --------------------------------------------------------------------------
# The ramp's last replies and the broadcast's queues drain, and the idle sweep finds the N quiet
# (the broadcast put every one of them on its list): up to 120 s for the list to come down to
# about what the pings keep on it (each pinged session stays listed about a second: N / interval;
# the window starts at 1.5 times that, since at a million a window started at 3 times it was
# still settling, 44,505 listed at its start and 16,822 at its end).
# (PING_INTERVAL=0: no pings, so nothing keeps a session listed once the broadcast's output is out.)
settle_to=$((ping_interval > 0 ? conns / ping_interval * 3 / 2 + 1000 : 1000))
settle_start=$SECONDS
sleep 2
while [ "$(metric strix_idle_sweep_listed)" -gt "$settle_to" ] && [ $((SECONDS - settle_start)) -lt 120 ]; do sleep 1; done
say "settled in $((SECONDS - settle_start)) s: the idle sweep lists $(metric strix_idle_sweep_listed) sessions"
kernel_snapshot "$runs/kernel.held"
server_rss_held=$(rss_of "$server_pid")
sweep0=$(metric strix_idle_sweep_sessions_total)
listed0=$(metric strix_idle_sweep_listed)
ticks0=$(cpu_ticks "$server_pid")
t0=$(date +%s.%N)
sleep "$idle_s"
ticks1=$(cpu_ticks "$server_pid")
t1=$(date +%s.%N)
sweep1=$(metric strix_idle_sweep_sessions_total)
listed1=$(metric strix_idle_sweep_listed)
sessions_held=$(metric strix_sessions)
python3 - "$runs/idle.json" "$ticks0" "$ticks1" "$t0" "$t1" "$(getconf CLK_TCK)" "$sweep0" "$sweep1" "$listed0" "$listed1" "$sessions_held" <<'PY'
import json, sys
a = sys.argv
wall = float(a[5]) - float(a[4])
json.dump({"idle_s": wall,
           "idle_cpu_pct": 100.0 * (int(a[3]) - int(a[2])) / int(a[6]) / wall,
           "sweep_sessions_per_s": (int(a[8]) - int(a[7])) / wall,
           "sweep_listed_start": int(a[9]), "sweep_listed_end": int(a[10]),
           "sessions": int(a[11])}, open(a[1], "w"))
PY
say "idle: $(cat "$runs/idle.json")"
# The workload beside the N for the rest of the hold (at least CHAT_DURATION), then the restart.
held_for=$((hold_s - (SECONDS - held_at) - chat_warmup))
[ "$held_for" -ge "$chat_duration" ] || held_for=$chat_duration
say "the chat workload for $held_for s beside the $conns held"
chat_load held "$held_for"
held_s=$((SECONDS - held_at))
say "held $conns for $held_s s"

# --- 7. restart --------------------------------------------------------------------------------
say "restarting the server with $conns held"
stop_server
start_server
wait_hold '^verified after reconnect' $((120 + conns / 2000))
tail -n 3 "$runs/hold.err" | sed 's/^/bench-c1m: hold: /'
server_rss_reconnected=$(rss_of "$server_pid")
kill -INT "$hold_pid"
rc=0
wait "$hold_pid" || rc=$?
[ -s "$runs/hold.json" ] || die "strix-chat-hold wrote no summary (exit $rc)"
[ "$rc" -eq 0 ] || { cat "$runs/hold.out" >&2; die "strix-chat-hold exited $rc: not all held, or lost, duplicated, reordered or corrupted (above)"; }
kernel_snapshot "$runs/kernel.after"
stop_server

# --- 8. the report -----------------------------------------------------------------------------
{
  echo "cpus $ncpu"
  echo "server_cpus $server_set"
  echo "server_shards $shards"
  echo "fd_tables $fd_tables"
  echo "client_cpus $client_cpus"
  echo "cpu_model $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "mem_total_kib $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
  echo "kernel $(uname -r)"
  echo "requested $requested"
  echo "server_rss_before $server_rss_before"
  echo "server_rss_held $server_rss_held"
  echo "server_rss_reconnected $server_rss_reconnected"
  echo "nofile_hard $hard"
  echo "ping_interval $ping_interval"
  echo "held_s $held_s"
  echo "chat_workload $chat_clients $chat_rooms $chat_rps $chat_duration $held_for"
} >"$runs/env.txt"
python3 "$here/c1m_report.py" --runs "$runs" --out "$out"
cat "$out/c1m.md"
