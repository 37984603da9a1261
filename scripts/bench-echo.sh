#!/usr/bin/env bash
# Seed 001's echo shoot-out: strix-echo-server against the raw epoll reference, the naive
# boost::asio server and two peers users compare with, tokio (Rust) and gnet (Go), all measured
# by the same load tool, strix-echo-bench, over loopback, and cross-checked by an independent
# client, strix-echo-loop.
#
#   scripts/bench-echo.sh <build_dir>
#
# The peers are built first by bench/peers/build.sh (cargo and go, crates.io and the Go module
# proxy; binaries in <build_dir>/peers/bin/). A peer that cannot be built is left out and the
# report says "not built"; nothing else needs the network.
#
# The matrix, every cell measured 5 times:
#   layout   pinned  server limited to CPU $ECHO_SERVER_CPUS (taskset), client to $ECHO_CLIENT_CPUS
#            free    no taskset anywhere: every server runs as it does by default (raw epoll pins
#                    its threads, one per allowed CPU; strix does not unless given --pin) and the
#                    client goes where the scheduler puts it
#   client   multi   strix-echo-bench --mode multi --threads $ECHO_CLIENT_THREADS (one epoll loop
#                    per thread, plus a sampling thread)
#            single  strix-echo-bench --mode single (one thread, one epoll loop, every connection)
#            loop    strix-echo-loop (bench/echo/echo_loop_client.cpp): an independent single-threaded
#                    client, one level-triggered epoll loop, one read and one write per readable
#                    event, the way a user writes one to try a server
#   depth    1, 16, 128 messages in flight per connection
# Runs are interleaved: for each repetition, layout, client mode and depth, every server runs once
# in turn, so drift on a shared machine hits all servers alike. Each run starts the server on a
# free port, waits until it accepts, runs
#   [taskset -c C] strix-echo-bench --connections 100 --size 8 --depth D --mode M [--threads T]
#                  --duration S --warmup W --server-pid PID --json FILE
# (in loop mode strix-echo-loop with the same options but --mode and --threads)
# records the CPUs each server thread may run on, and stops the server (SIGTERM, SIGKILL after
# 5 s). A run that fails verification is recorded, left out of the medians and flagged in the
# report, and makes this script exit 1 after the report is written.
# Then scripts/echo_report.py writes <build_dir>/bench/echo.md and echo.png.
#
# Then the TLS section (issue 17), scripts/bench-echo-tls.sh with the same environment: strix
# over TLS against the tokio-rustls and Go crypto/tls peers, depths 1/16/128, and handshakes/s
# (full and resumed), into <build_dir>/bench/echo-tls.md; ECHO_TLS=0 leaves it out, and
# `make bench-echo-tls` runs it alone. Its options are described in its header.
#
# Then the WebSocket section (issue 18), scripts/bench-echo-ws.sh with the same environment: strix's
# WebSocket echo server against fastwebsockets, tokio-tungstenite and gobwas/ws, 64 B and 1 KB
# messages at depths 1/16/128, and a broadcast test, into <build_dir>/bench/echo-ws.md; ECHO_WS=0
# leaves it out, and `make bench-echo-ws` runs it alone. Its options are described in its header.
#
# Environment (defaults in brackets; a full run on 2 CPUs takes about 39 minutes, plus about 9 for
# the TLS section and about 23 for the WebSocket section):
#   ECHO_DURATION [3]  measured seconds per run     ECHO_WARMUP [1]  warmup seconds per run
#   ECHO_REPS [5]      runs per cell                ECHO_DEPTHS ["1 16 128"]
#   ECHO_LAYOUTS ["pinned free"]                    ECHO_MODES ["multi single loop"]
#   ECHO_SERVERS ["strix strix-epoll raw-epoll asio-naive tokio gnet"]  (a subset to shorten a trial run;
#                            strix is strix-echo-server with no option but --port: the default
#                            configuration a user gets (io_uring where the kernel allows it, one
#                            shard per CPU); strix-epoll adds --io epoll)
#   ECHO_BASELINE_BIN [none] a bin directory of another strix build (e.g. the previous commit's):
#                            adds strix-base and strix-epoll-base, run from it the same way, so
#                            the report's A/B section compares the two builds in one run
#   ECHO_CONNECTIONS [100]   ECHO_SIZE [8]
#   ECHO_THREADS [CPUs]      threads of raw epoll, tokio and gnet (strix takes its default: one
#                            shard per CPU the process may use)
#   ECHO_CLIENT_THREADS [CPUs]  client worker threads in multi mode
#   ECHO_SERVER_CPUS, ECHO_CLIENT_CPUS [first and second CPU this script may use]: the pinned layout
#   ECHO_STRIX_ARGS [none]   extra strix-echo-server options (e.g. "--pin"), in both layouts
#   ECHO_BUILD_PEERS [1]     0 reuses the peers already in <build_dir>/peers/ without building
#   ECHO_TLS [1]             0 leaves out the TLS section
#   ECHO_WS [1]              0 leaves out the WebSocket section
set -euo pipefail

build=${1:?usage: scripts/bench-echo.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$build/bin
out=$build/bench
runs=$out/echo-runs
duration=${ECHO_DURATION:-3}
warmup=${ECHO_WARMUP:-1}
reps=${ECHO_REPS:-5}
read -r -a depths <<<"${ECHO_DEPTHS:-1 16 128}"
read -r -a layouts <<<"${ECHO_LAYOUTS:-pinned free}"
read -r -a modes <<<"${ECHO_MODES:-multi single loop}"
read -r -a wanted <<<"${ECHO_SERVERS:-strix strix-epoll raw-epoll asio-naive tokio gnet}"
# An A/B against another build of strix in the same interleaved run: its servers join the default
# list (name strix-base / strix-epoll-base in ECHO_SERVERS to choose).
if [ -n "${ECHO_BASELINE_BIN:-}" ] && [ -z "${ECHO_SERVERS:-}" ]; then wanted+=(strix-base strix-epoll-base); fi
connections=${ECHO_CONNECTIONS:-100}
size=${ECHO_SIZE:-8}
cores=$(nproc)
threads=${ECHO_THREADS:-$cores}
client_threads=${ECHO_CLIENT_THREADS:-$cores}
strix_extra=${ECHO_STRIX_ARGS:-}
client=$bin/strix-echo-bench
loop_client=$bin/strix-echo-loop

die() { echo "bench-echo: FAILED: $*" >&2; exit 1; }

for b in strix-echo-bench strix-echo-loop strix-echo-raw-epoll strix-echo-asio-naive; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
for l in "${layouts[@]}"; do
  case $l in pinned | free) ;; *) die "ECHO_LAYOUTS: unknown layout '$l' (pinned, free)" ;; esac
done
for m in "${modes[@]}"; do
  case $m in multi | single | loop) ;; *) die "ECHO_MODES: unknown client mode '$m' (multi, single, loop)" ;; esac
done

# The pinned layout's CPUs: by default the first two this script may run on.
allowed=()
while read -r c; do allowed+=("$c"); done < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
server_cpus=${ECHO_SERVER_CPUS:-${allowed[0]}}
client_cpus=${ECHO_CLIENT_CPUS:-${allowed[1]:-}}
if [[ " ${layouts[*]} " == *" pinned "* ]]; then
  if [ -z "$client_cpus" ] || ! command -v taskset >/dev/null; then
    echo "bench-echo: note: the pinned layout needs taskset and two CPUs; measuring the free layout only"
    layouts=(free)
  fi
fi

rm -rf "$runs"
mkdir -p "$runs"

# --- the peers ------------------------------------------------------------------------------------
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

# --- the servers ----------------------------------------------------------------------------------
# servers.txt: name|binary|arguments|role|status. The role sorts them in the report: strix, the
# reference (raw epoll), peers (tokio, gnet) and the naive baseline (asio).
servers=()
: >"$runs/servers.txt"
add_server() {  # <name> <binary> <args> <role> <status>
  echo "$1|$2|$3|$4|$5" >>"$runs/servers.txt"
  [ "$5" = built ] && servers+=("$1|$2|$3")
  return 0
}
for name in "${wanted[@]}"; do
  case $name in
    strix)
      if [ -x "$bin/strix-echo-server" ]; then
        add_server strix "$bin/strix-echo-server" "${strix_extra}" strix built
      else
        add_server strix - - strix "not built|$bin/strix-echo-server is missing"
      fi ;;
    strix-epoll)
      if [ -x "$bin/strix-echo-server" ]; then
        add_server strix-epoll "$bin/strix-echo-server" "--io epoll${strix_extra:+ $strix_extra}" strix built
      else
        add_server strix-epoll - - strix "not built|$bin/strix-echo-server is missing"
      fi ;;
    strix-base | strix-epoll-base)
      base=${ECHO_BASELINE_BIN:-}
      # The backend is named for both: the baseline's default may not be this build's.
      barg="--io uring"
      [ "$name" = strix-epoll-base ] && barg="--io epoll"
      if [ -n "$base" ] && [ -x "$base/strix-echo-server" ]; then
        add_server "$name" "$base/strix-echo-server" "$barg" strix-base built
      else
        add_server "$name" - "$barg" strix-base "not built|ECHO_BASELINE_BIN ($base) has no strix-echo-server"
      fi ;;
    raw-epoll) add_server raw-epoll "$bin/strix-echo-raw-epoll" "--threads $threads" reference built ;;
    asio-naive) add_server asio-naive "$bin/strix-echo-asio-naive" "--threads 20" baseline built ;;
    tokio | gnet)
      st=$(peer_status "$name")
      targ="--threads $threads"
      [ "$name" = gnet ] && targ="--loops $threads"
      if [ "${st%%|*}" = built ]; then
        add_server "$name" "${st#*|}" "$targ" peer built
      else
        add_server "$name" - "$targ" peer "$st"
      fi ;;
    *) die "ECHO_SERVERS: unknown server '$name' (strix strix-epoll strix-base strix-epoll-base raw-epoll asio-naive tokio gnet)" ;;
  esac
done
[ "${#servers[@]}" -gt 0 ] || die "no server to measure"

bench_name=bench-echo
# shellcheck source=echo_bench_lib.sh
. "$here/echo_bench_lib.sh"

failures=0
run_one() {  # <layout> <mode> <name> <binary> <args> <depth> <rep>
  local layout=$1 mode=$2 name=$3 binary=$4 targ=$5 depth=$6 rep=$7
  local tag="${layout}_${mode}_${name}_d${depth}_r${rep}"
  local port spin=() cpin=() cargs=() cbin=$client
  port=$(free_port)
  if [ "$layout" = pinned ]; then
    spin=(taskset -c "$server_cpus")
    cpin=(taskset -c "$client_cpus")
  fi
  case $mode in
    multi) cargs=(--mode multi --threads "$client_threads") ;;
    single) cargs=(--mode single) ;;
    loop) cbin=$loop_client ;;
  esac
  # shellcheck disable=SC2086  # targ is "--threads N" / "--shards N ..."
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
    "${cpin[@]}" timeout $((duration + warmup + 60)) "$cbin" --host 127.0.0.1 --port "$port" \
      --connections "$connections" --size "$size" --depth "$depth" "${cargs[@]}" \
      --duration "$duration" --warmup "$warmup" --server-pid "$server_pid" --json "$runs/$tag.json" \
      >"$runs/$tag.log" 2>&1 || rc=$?
    where_threads "$server_pid" >"$runs/$tag.where"
    stop_server "$name"
    if [ "$rc" -ne 0 ]; then
      echo "$(basename "$cbin") exited $rc: $(grep -m1 -E 'ERROR|FAIL|failed' "$runs/$tag.log" || tail -1 "$runs/$tag.log")" \
        >"$runs/$tag.failed"
    fi
  fi
  done_runs=$((done_runs + 1))
  if [ -f "$runs/$tag.failed" ]; then
    failures=$((failures + 1))
    printf '  [%d/%d] %-6s %-6s %-10s depth %-3s rep %s: FAILED: %s\n' "$done_runs" "$total_runs" \
      "$layout" "$mode" "$name" "$depth" "$rep" "$(cat "$runs/$tag.failed")" >&2
  else
    printf '  [%d/%d] %-6s %-6s %-10s depth %-3s rep %s: %s\n' "$done_runs" "$total_runs" \
      "$layout" "$mode" "$name" "$depth" "$rep" \
      "$(grep '^summary' "$runs/$tag.log" | sed -e 's/^summary over [^:]*: //' -e 's/ | MB.s in.*client/ | client/')"
  fi
}

total_runs=$((reps * ${#layouts[@]} * ${#modes[@]} * ${#depths[@]} * ${#servers[@]}))
done_runs=0
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
echo "bench-echo: $connections connections, body $size B, depths ${depths[*]}, layouts ${layouts[*]}, client modes ${modes[*]}, ${duration} s + ${warmup} s warmup, $reps reps, $cores CPUs: $total_runs runs, about $(((total_runs * (duration + warmup + 1) + 59) / 60)) min"
echo "bench-echo: servers: $(cut -d'|' -f1,5 "$runs/servers.txt" | tr '|\n' ': ' | sed 's/: $//')"
if [[ " ${layouts[*]} " == *" pinned "* ]]; then
  echo "bench-echo: pinned layout: server on CPU $server_cpus, client on CPU $client_cpus"
fi
echo "bench-echo: load average at start: $loadavg_start"
for rep in $(seq "$reps"); do
  for layout in "${layouts[@]}"; do
    for mode in "${modes[@]}"; do
      for depth in "${depths[@]}"; do
        for s in "${servers[@]}"; do
          IFS='|' read -r name binary targ <<<"$s"
          run_one "$layout" "$mode" "$name" "$binary" "$targ" "$depth" "$rep"
        done
      done
    done
  done
done
loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-echo: load average at the end: $loadavg_end ($(( ($(date +%s) - started + 30) / 60 )) min)"

python3 "$here/echo_report.py" --runs "$runs" --out "$out" --reps "$reps" --depths "${depths[*]}" \
  --layouts "${layouts[*]}" --modes "${modes[*]}" \
  --command "strix-echo-bench --host 127.0.0.1 --port P --connections $connections --size $size --depth D --duration $duration --warmup $warmup --server-pid PID --json FILE" \
  --client-threads "$client_threads" --server-cpus "$server_cpus" --client-cpus "$client_cpus" \
  --loadavg "$loadavg_start" --loadavg-end "$loadavg_end"

# The TLS section: the peers were built (or not) above.
tls_rc=0
if [ "${ECHO_TLS:-1}" != 0 ]; then
  ECHO_BUILD_PEERS=0 "$here/bench-echo-tls.sh" "$build" || tls_rc=$?
fi
# The WebSocket section: the peers were built (or not) above.
ws_rc=0
if [ "${ECHO_WS:-1}" != 0 ]; then
  ECHO_BUILD_PEERS=0 "$here/bench-echo-ws.sh" "$build" || ws_rc=$?
fi
if [ "$failures" -gt 0 ]; then
  die "$failures of $total_runs runs failed (see FAILED above and $runs/*.failed); the report flags them"
fi
[ "$tls_rc" -eq 0 ] || die "the TLS section failed (bench-echo-tls.sh exited $tls_rc; see above)"
[ "$ws_rc" -eq 0 ] || die "the WebSocket section failed (bench-echo-ws.sh exited $ws_rc; see above)"
