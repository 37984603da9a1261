#!/usr/bin/env bash
# The WebSocket echo shoot-out (issue 18): strix's WebSocket echo server against three WebSocket
# peers, fastwebsockets (Rust, hyper upgrade), tokio-tungstenite (Rust) and gobwas/ws (Go, its
# low-level API), all measured by one load tool, strix-echo-bench --ws, over loopback; then a
# broadcast test (every client sends, every client receives every message).
#
#   scripts/bench-echo-ws.sh <build_dir>     (make bench-echo-ws; make bench-echo runs it too)
#
# Echo servers (ECHO_WS_SERVERS, default "strix-ws fastwebsockets tungstenite gobwas"):
#   strix-ws        strix-echo-server $ECHO_WS_STRIX_ARGS [--ws], otherwise its defaults (io_uring
#                   where the kernel allows it, one shard per CPU); "not built" while
#                   strix-echo-server has no --ws option
#   fastwebsockets  bench/peers/fastwebsockets-echo --threads $ECHO_THREADS
#   tungstenite     bench/peers/tungstenite-echo --threads $ECHO_THREADS
#   gobwas          bench/peers/gobwas-echo --threads $ECHO_THREADS (GOMAXPROCS)
# Echo runs, every cell ECHO_REPS times, interleaved (per repetition, layout, size and depth,
# every server in turn, so drift on a shared machine hits all alike):
#   [taskset -c C] strix-echo-bench --ws --connections 100 --size S --depth D --mode multi
#                  --threads T --duration 3 --warmup 1 --server-pid PID --json FILE
# sizes ECHO_WS_SIZES ["64 1024"] (payload bytes of one binary message), depths ECHO_DEPTHS
# ["1 16 128"] (messages in flight per connection), layouts ECHO_WS_LAYOUTS ["pinned free"]
# (pinned: server on $ECHO_SERVER_CPUS, client on $ECHO_CLIENT_CPUS; free: no taskset).
#
# Broadcast runs (ECHO_WS_BROADCAST [1]; 0 leaves them out), free layout:
#   strix-echo-bench --ws --broadcast --connections $ECHO_WS_BC_CONNECTIONS [100] --size 64
#                    --depth D (ECHO_WS_BC_DEPTHS ["1 16"]) --mode multi ...
# Servers: gobwas-bc (gobwas-echo --broadcast: one frame built per message, one writer goroutine
# per client) and strix-ws-bc (bench/echo/ws_broadcast_server.cpp, strix-ws-broadcast-server
# $ECHO_WS_STRIX_BC_ARGS: one frame built per message, a hub per shard, the other shards reached
# through the mesh). Why only these two: a broadcast server is an application,
# not a library feature: each peer would need its own hub written by us, and the test measures the
# fan-out path (one encode, N writes), which one good peer shows; gobwas, the best peer in most cells of our
# echo trials, with its low-level API is the one whose hub costs the least of ours.
#
# A run that fails (a lost, corrupted or reordered message, a server that dies) is recorded, left
# out of the medians, flagged in the report, and makes this script exit 1 after
# scripts/echo_ws_report.py wrote <build_dir>/bench/echo-ws.md.
#
# Environment (defaults in brackets; on 2 CPUs the defaults take about 23 minutes):
#   ECHO_DURATION [3] ECHO_WARMUP [1] ECHO_REPS [5] ECHO_DEPTHS ["1 16 128"] ECHO_CONNECTIONS [100]
#   ECHO_THREADS [CPUs] ECHO_CLIENT_THREADS [CPUs] ECHO_SERVER_CPUS ECHO_CLIENT_CPUS
#   ECHO_BUILD_PEERS [1]: as in scripts/bench-echo.sh
#   ECHO_WS_SERVERS, ECHO_WS_SIZES, ECHO_WS_LAYOUTS, ECHO_WS_STRIX_ARGS, ECHO_WS_BROADCAST,
#   ECHO_WS_BC_CONNECTIONS, ECHO_WS_BC_DEPTHS, ECHO_WS_STRIX_BC_ARGS: above
set -euo pipefail

build=${1:?usage: scripts/bench-echo-ws.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$build/bin
out=$build/bench
runs=$out/echo-ws-runs
duration=${ECHO_DURATION:-3}
warmup=${ECHO_WARMUP:-1}
reps=${ECHO_REPS:-5}
read -r -a depths <<<"${ECHO_DEPTHS:-1 16 128}"
read -r -a sizes <<<"${ECHO_WS_SIZES:-64 1024}"
read -r -a layouts <<<"${ECHO_WS_LAYOUTS:-pinned free}"
read -r -a wanted <<<"${ECHO_WS_SERVERS:-strix-ws fastwebsockets tungstenite gobwas}"
read -r -a bc_depths <<<"${ECHO_WS_BC_DEPTHS:-1 16}"
broadcast=${ECHO_WS_BROADCAST:-1}
bc_connections=${ECHO_WS_BC_CONNECTIONS:-100}
bc_size=64
connections=${ECHO_CONNECTIONS:-100}
cores=$(nproc)
threads=${ECHO_THREADS:-$cores}
client_threads=${ECHO_CLIENT_THREADS:-$cores}
strix_args=${ECHO_WS_STRIX_ARGS:---ws}
strix_bc_args=${ECHO_WS_STRIX_BC_ARGS:-}
client=$bin/strix-echo-bench

die() { echo "bench-echo-ws: FAILED: $*" >&2; exit 1; }

[ -x "$client" ] || die "$client is missing; build first (make build)"
"$client" --help | grep -q -- --broadcast || die "$client has no --ws/--broadcast; rebuild it"
for l in "${layouts[@]}"; do
  case $l in pinned | free) ;; *) die "ECHO_WS_LAYOUTS: unknown layout '$l' (pinned, free)" ;; esac
done

allowed=()
while read -r c; do allowed+=("$c"); done < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
server_cpus=${ECHO_SERVER_CPUS:-${allowed[0]}}
client_cpus=${ECHO_CLIENT_CPUS:-${allowed[1]:-}}
if [[ " ${layouts[*]} " == *" pinned "* ]]; then
  if [ -z "$client_cpus" ] || ! command -v taskset >/dev/null; then
    echo "bench-echo-ws: note: the pinned layout needs taskset and two CPUs; measuring the free layout only"
    layouts=(free)
  fi
fi

rm -rf "$runs"
mkdir -p "$runs"

# --- the servers ----------------------------------------------------------------------------------
if [ "${ECHO_BUILD_PEERS:-1}" != 0 ]; then
  "$root/bench/peers/build.sh" "$build"
fi
peer_status() {  # <name>: prints "built|<binary>" or "not built|<reason>"
  local line
  line=$(grep "^$1|" "$build/peers/status.txt" 2>/dev/null | tail -1 || true)
  if [ -z "$line" ]; then
    echo "not built|bench/peers/build.sh did not run (ECHO_BUILD_PEERS=0 and no earlier build)"
  else
    echo "${line#*|}"
  fi
}
strix_status() {  # <option the server must offer>
  if [ ! -x "$bin/strix-echo-server" ]; then
    echo "not built|$bin/strix-echo-server is missing"
  elif ! "$bin/strix-echo-server" --help 2>&1 | grep -q -- "$1"; then
    echo "not built|pending: strix-echo-server has no $1 option yet (strix's WebSocket server, issue 18 item 1, is not in this build)"
  else
    echo built
  fi
}

# servers.txt (echo) and bc-servers.txt (broadcast): name|binary|arguments|role|status, as
# scripts/echo_report.py's Server reads them.
servers=()
bc_servers=()
: >"$runs/servers.txt"
: >"$runs/bc-servers.txt"
add_server() {  # <file> <name> <binary> <args> <role> <status>
  echo "$2|$3|$4|$5|$6" >>"$runs/$1"
  if [ "$6" = built ]; then
    if [ "$1" = servers.txt ]; then servers+=("$2|$3|$4"); else bc_servers+=("$2|$3|$4"); fi
  fi
  return 0
}
for name in "${wanted[@]}"; do
  case $name in
    strix-ws)
      st=$(strix_status --ws)
      add_server servers.txt strix-ws "$bin/strix-echo-server" "$strix_args" strix "$st" ;;
    fastwebsockets | tungstenite | gobwas)
      st=$(peer_status "$name")
      bin_path=-
      [ "${st%%|*}" = built ] && bin_path=${st#*|} && st=built
      add_server servers.txt "$name" "$bin_path" "--threads $threads" peer "$st" ;;
    *) die "ECHO_WS_SERVERS: unknown server '$name' (strix-ws fastwebsockets tungstenite gobwas)" ;;
  esac
done
if [ "$broadcast" != 0 ]; then
  st=built
  [ -x "$bin/strix-ws-broadcast-server" ] ||
    st="not built|$bin/strix-ws-broadcast-server is missing (it needs strix's WebSocket server, issue 18 item 1)"
  add_server bc-servers.txt strix-ws-bc "$bin/strix-ws-broadcast-server" "$strix_bc_args" strix "$st"
  st=$(peer_status gobwas)
  bin_path=-
  [ "${st%%|*}" = built ] && bin_path=${st#*|} && st=built
  add_server bc-servers.txt gobwas-bc "$bin_path" "--threads $threads --broadcast" peer "$st"
fi
[ "${#servers[@]}" -gt 0 ] || die "no WebSocket echo server to measure (see $runs/servers.txt)"

bench_name=bench-echo-ws
# shellcheck source=echo_bench_lib.sh
. "$here/echo_bench_lib.sh"

failures=0
done_runs=0
# run_one <tag> <label> <name> <binary> <server args> <pin server: 0|1> <client args...>
run_one() {
  local tag=$1 label=$2 name=$3 binary=$4 targ=$5 pin=$6
  shift 6
  local port spin=() cpin=()
  port=$(free_port)
  if [ "$pin" = 1 ]; then
    spin=(taskset -c "$server_cpus")
    cpin=(taskset -c "$client_cpus")
  fi
  # shellcheck disable=SC2086  # targ is a list of options
  "${spin[@]}" "$binary" --port "$port" $targ >"$runs/$tag.server.log" 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 200); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "$name exited at start: $(tail -3 "$runs/$tag.server.log" | tr '\n' ' ')" >"$runs/$tag.failed"
      server_pid=
      break
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.05
  done
  if [ "$up" != 1 ]; then
    [ -f "$runs/$tag.failed" ] || echo "$name did not accept on 127.0.0.1:$port within 10 s" >"$runs/$tag.failed"
    [ -n "$server_pid" ] && stop_server "$name"
  else
    local rc=0
    "${cpin[@]}" timeout $((duration + warmup + 60)) "$client" --host 127.0.0.1 --port "$port" --ws "$@" \
      --server-pid "$server_pid" --json "$runs/$tag.json" >"$runs/$tag.log" 2>&1 || rc=$?
    where_threads "$server_pid" >"$runs/$tag.where"
    stop_server "$name"
    if [ "$rc" -ne 0 ]; then
      echo "strix-echo-bench exited $rc: $(grep -m1 -E 'ERROR|FAIL|failed' "$runs/$tag.log" || tail -1 "$runs/$tag.log")" \
        >"$runs/$tag.failed"
    fi
  fi
  done_runs=$((done_runs + 1))
  if [ -f "$runs/$tag.failed" ]; then
    failures=$((failures + 1))
    printf '  [%d/%d] %-30s %-15s FAILED: %s\n' "$done_runs" "$total_runs" "$label" "$name" "$(cat "$runs/$tag.failed")" >&2
  else
    printf '  [%d/%d] %-30s %-15s %s\n' "$done_runs" "$total_runs" "$label" "$name" \
      "$(grep '^summary' "$runs/$tag.log" | sed -e 's/^summary over [^:]*: //' -e 's/ | MB.s in.*client/ | client/')"
  fi
}

bc_runs=0
[ "$broadcast" != 0 ] && bc_runs=$((reps * ${#bc_servers[@]} * ${#bc_depths[@]}))
total_runs=$((reps * ${#servers[@]} * ${#layouts[@]} * ${#sizes[@]} * ${#depths[@]} + bc_runs))
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
echo "bench-echo-ws: $connections connections, payloads ${sizes[*]} B, depths ${depths[*]}, layouts ${layouts[*]}, broadcast depths ${bc_depths[*]} over $bc_connections connections, ${duration} s + ${warmup} s warmup, $reps reps, $cores CPUs: $total_runs runs, about $(((total_runs * (duration + warmup + 1) + 59) / 60)) min"
echo "bench-echo-ws: servers: $(cut -d'|' -f1,5 "$runs/servers.txt" "$runs/bc-servers.txt" | tr '|\n' ': ' | sed 's/: $//')"
echo "bench-echo-ws: load average at start: $loadavg_start"
for rep in $(seq "$reps"); do
  for layout in "${layouts[@]}"; do
    pin=0
    [ "$layout" = pinned ] && pin=1
    for size in "${sizes[@]}"; do
      for depth in "${depths[@]}"; do
        for s in "${servers[@]}"; do
          IFS='|' read -r name binary targ <<<"$s"
          run_one "${layout}_s${size}_${name}_d${depth}_r${rep}" "$layout ${size} B depth $depth rep $rep" "$name" \
            "$binary" "$targ" "$pin" --connections "$connections" --size "$size" --depth "$depth" --mode multi \
            --threads "$client_threads" --duration "$duration" --warmup "$warmup"
        done
      done
    done
  done
  if [ "$broadcast" != 0 ]; then
    for depth in "${bc_depths[@]}"; do
      for s in "${bc_servers[@]}"; do
        IFS='|' read -r name binary targ <<<"$s"
        run_one "bc_s${bc_size}_${name}_d${depth}_r${rep}" "broadcast depth $depth rep $rep" "$name" "$binary" \
          "$targ" 0 --broadcast --connections "$bc_connections" --size "$bc_size" --depth "$depth" --mode multi \
          --threads "$client_threads" --duration "$duration" --warmup "$warmup"
      done
    done
  fi
done
loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-echo-ws: load average at the end: $loadavg_end ($(( ($(date +%s) - started + 30) / 60 )) min)"

python3 "$here/echo_ws_report.py" --runs "$runs" --out "$out" --reps "$reps" --depths "${depths[*]}" \
  --sizes "${sizes[*]}" --layouts "${layouts[*]}" --broadcast "$broadcast" --bc-depths "${bc_depths[*]}" \
  --command "strix-echo-bench --ws --host 127.0.0.1 --port P --connections $connections --size S --depth D --mode multi --threads $client_threads --duration $duration --warmup $warmup --server-pid PID --json FILE" \
  --bc-command "strix-echo-bench --ws --broadcast --host 127.0.0.1 --port P --connections $bc_connections --size $bc_size --depth D --mode multi --threads $client_threads --duration $duration --warmup $warmup --server-pid PID --json FILE" \
  --client-threads "$client_threads" --server-cpus "$server_cpus" --client-cpus "$client_cpus" \
  --loadavg "$loadavg_start" --loadavg-end "$loadavg_end"
if [ "$failures" -gt 0 ]; then
  die "$failures of $total_runs runs failed (see FAILED above and $runs/*.failed); the report flags them"
fi
