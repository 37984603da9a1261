#!/usr/bin/env bash
# The echo shoot-out: strix's echo servers against a reference and the peers users compare with, measured by
# one load tool (strix-echo-bench) over loopback, every server restarted for every run, runs interleaved.
#
#   scripts/bench-echo.sh <build_dir> [all|plain|tls|ws]
#
# plain: against raw epoll, naive asio, tokio and gnet (echo.md, echo.png); tls (make bench-echo-tls): over TLS
# against tokio-rustls and Go crypto/tls, then handshakes/s (echo-tls.md); ws (make bench-echo-ws): WebSocket
# against fastwebsockets, tokio-tungstenite and gobwas/ws, then a broadcast test (echo-ws.md); all (the default,
# make bench-echo): plain, then tls unless ECHO_TLS=0, then ws unless ECHO_WS=0. A failed run is flagged in the
# report and makes the script exit 1. docs/benchmarks.md describes the runs and lists every ECHO_* setting.
set -euo pipefail

build=${1:?usage: scripts/bench-echo.sh <build_dir> [all|plain|tls|ws]} section=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd) bin=$build/bin out=$build/bench
case $section in tls | ws) name=bench-echo-$section ;; *) name=bench-echo ;; esac
die() { echo "$name: FAILED: $*" >&2; exit 1; }

if [ "$section" = all ]; then  # the peers once, then each section; a failed section fails the whole
  [ "${ECHO_BUILD_PEERS:-1}" = 0 ] || "$root/bench/peers/build.sh" "$build"
  rc=0
  for s in plain tls ws; do
    case $s:${ECHO_TLS:-1}:${ECHO_WS:-1} in tls:0:* | ws:*:0) ;; *) ECHO_BUILD_PEERS=0 "$0" "$build" "$s" || rc=1 ;; esac
  done
  exit "$rc"
fi

duration=${ECHO_DURATION:-3} warmup=${ECHO_WARMUP:-1} reps=${ECHO_REPS:-5} cores=$(nproc)
connections=${ECHO_CONNECTIONS:-100} size=${ECHO_SIZE:-8} extra=${ECHO_STRIX_ARGS:-}
threads=${ECHO_THREADS:-$cores} client_threads=${ECHO_CLIENT_THREADS:-$cores} client=$bin/strix-echo-bench
read -r -a depths <<<"${ECHO_DEPTHS:-1 16 128}"
[ -x "$client" ] || die "$client is missing; build first (make build)"
# Per section: the servers, the cell columns (client modes; ws: s<payload bytes>), what every client run
# adds, the runs after the echo cells (tls: handshake kinds; ws: broadcast depths).
client_opts=() fail_pattern='ERROR|FAIL|failed' hs_duration=0 kinds=() bc_depths=() broadcast=0 need=
case $section in
  plain)
    runs=$out/echo-runs var=ECHO
    read -r -a columns <<<"${ECHO_MODES:-multi single loop}"
    read -r -a wanted <<<"${ECHO_SERVERS:-strix strix-epoll raw-epoll asio-naive tokio gnet}"
    # An A/B against another build in the same interleaved run: its servers join the default list.
    [ -n "${ECHO_BASELINE_BIN:-}" ] && [ -z "${ECHO_SERVERS:-}" ] && wanted+=(strix-base strix-epoll-base)
    for b in strix-echo-loop strix-echo-raw-epoll strix-echo-asio-naive; do [ -x "$bin/$b" ] || die "$bin/$b is missing"; done
    for m in "${columns[@]}"; do
      [[ $m =~ ^(multi|single|loop)$ ]] || die "ECHO_MODES: unknown client mode '$m' (multi, single, loop)"
    done ;;
  tls)
    runs=$out/echo-tls-runs var=ECHO_TLS columns=(multi) need=--tls-cert fail_pattern='ERROR|FAIL|failed|only'
    read -r -a wanted <<<"${ECHO_TLS_SERVERS:-strix-tls tokio-tls go-tls}"
    key_kind=${ECHO_TLS_KEY:-ec} tls_max=${ECHO_TLS_MAX:-1.3}
    hs_connections=${ECHO_TLS_HS_CONNECTIONS:-32} hs_duration=${ECHO_TLS_HS_DURATION:-3}
    [ "${ECHO_TLS_HANDSHAKES:-1}" = 0 ] || kinds=(full resumed)
    "$client" --help | grep -q -- --handshakes || die "$client has no --tls/--handshakes; rebuild it" ;;
  ws)
    runs=$out/echo-ws-runs var=ECHO_WS client_opts=(--ws) need=--ws
    read -r -a sizes <<<"${ECHO_WS_SIZES:-64 1024}"
    columns=("${sizes[@]/#/s}")
    read -r -a wanted <<<"${ECHO_WS_SERVERS:-strix-ws fastwebsockets tungstenite gobwas}"
    broadcast=${ECHO_WS_BROADCAST:-1} bc_connections=${ECHO_WS_BC_CONNECTIONS:-100} bc_size=64
    [ "$broadcast" = 0 ] || read -r -a bc_depths <<<"${ECHO_WS_BC_DEPTHS:-1 16}"
    "$client" --help | grep -q -- --broadcast || die "$client has no --ws/--broadcast; rebuild it" ;;
  *) die "unknown section '$section' (all, plain, tls, ws)" ;;
esac
layouts_var=${var}_LAYOUTS servers_var=${var}_SERVERS
read -r -a layouts <<<"${!layouts_var:-pinned free}"
for l in "${layouts[@]}"; do [[ $l =~ ^(pinned|free)$ ]] || die "$layouts_var: unknown layout '$l' (pinned, free)"; done

# The pinned layout: server and client on the first and second CPU this script may run on.
read -r cpu0 cpu1 < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')
server_cpus=${ECHO_SERVER_CPUS:-$cpu0} client_cpus=${ECHO_CLIENT_CPUS:-${cpu1:-}} can_pin=1
[ -n "$client_cpus" ] && command -v taskset >/dev/null || can_pin=0
if [ "$can_pin" = 0 ] && [[ " ${layouts[*]} " == *" pinned "* ]]; then
  echo "$name: note: the pinned layout needs taskset and two CPUs; measuring the free layout only"
  layouts=(free)
fi

rm -rf "$runs"
mkdir -p "$runs"
if [ "$section" = tls ]; then
  "$root/bench/echo/echo_tls_cert.sh" "$out/tls-cert" "$key_kind"
  cert=$out/tls-cert/server.crt key=$out/tls-cert/server.key
  client_opts=(--tls --ca "$out/tls-cert/ca.crt" --tls-max "$tls_max")
fi
[ "${ECHO_BUILD_PEERS:-1}" = 0 ] || "$root/bench/peers/build.sh" "$build"

# --- the servers ----------------------------------------------------------------------------------
# servers.txt (ws: bc-servers.txt for the broadcast runs): name|binary|arguments|role|status, as
# scripts/echo_report.py reads them; tls: the handshake runs' one-thread arguments in handshake-args.txt
# (name|arguments). CERT and KEY stand for the certificate's and key's paths until run_one starts the server.
servers=() bc_servers=()
: >"$runs/servers.txt"
[ "$section" != ws ] || : >"$runs/bc-servers.txt"
add_server() {  # <file> <name> <binary> <args> <role> [<handshake args>]: its status from the binary
  local st=built line
  if [ "$5" = peer ]; then  # bench/peers/build.sh's word on it (name-bc: the peer's broadcast server)
    line=$(grep "^${2%-bc}|" "$build/peers/status.txt" 2>/dev/null | tail -1 || true)
    st=${line#*|}
    [ -n "$line" ] || st="not built|bench/peers/build.sh did not run (ECHO_BUILD_PEERS=0 and no earlier build)"
    if [ "${st%%|*}" = built ]; then set -- "$1" "$2" "${st#*|}" "$4" "$5" "${6:-}" && st=built; fi
  elif [ ! -x "$3" ]; then
    st="not built|$3 is missing"
  elif [ "$3" = "$strix" ] && [ -n "$need" ] && ! "$3" --help 2>&1 | grep -q -- "$need"; then
    st="not built|$([ "$section" = tls ] || echo "pending: ")strix-echo-server has no $need option yet"
  fi
  echo "$2|$3|$4|$5|$st" >>"$runs/$1"
  [ "$section" != tls ] || echo "$2|$6" >>"$runs/handshake-args.txt"
  [ "$st" != built ] || if [ "$1" = servers.txt ]; then servers+=("$2|$3|$4|${6:-}"); else bc_servers+=("$2|$3|$4"); fi
}
strix=$bin/strix-echo-server base=${ECHO_BASELINE_BIN:-}/strix-echo-server
tls_args="--tls-cert CERT --tls-key KEY${extra:+ $extra}" peer_tls="--cert CERT --key KEY"
for n in "${wanted[@]}"; do
  case $section:$n in
    plain:strix) add_server servers.txt strix "$strix" "$extra" strix ;;
    plain:strix-epoll) add_server servers.txt strix-epoll "$strix" "--io epoll${extra:+ $extra}" strix ;;
    # The baseline's backend is named: its default may not be this build's.
    plain:strix-base) add_server servers.txt strix-base "$base" "--io uring" strix-base ;;
    plain:strix-epoll-base) add_server servers.txt strix-epoll-base "$base" "--io epoll" strix-base ;;
    plain:raw-epoll) add_server servers.txt raw-epoll "$bin/strix-echo-raw-epoll" "--threads $threads" reference ;;
    plain:asio-naive) add_server servers.txt asio-naive "$bin/strix-echo-asio-naive" "--threads 20" baseline ;;
    plain:tokio) add_server servers.txt tokio - "--threads $threads" peer ;;
    plain:gnet) add_server servers.txt gnet - "--loops $threads" peer ;;
    tls:strix-tls) add_server servers.txt strix-tls "$strix" "$tls_args" strix "--shards 1 $tls_args" ;;
    tls:strix-epoll-tls)
      add_server servers.txt strix-epoll-tls "$strix" "--io epoll $tls_args" strix "--io epoll --shards 1 $tls_args" ;;
    tls:tokio-tls | tls:go-tls) add_server servers.txt "$n" - "--threads $threads $peer_tls" peer "--threads 1 $peer_tls" ;;
    ws:strix-ws) add_server servers.txt strix-ws "$strix" "${ECHO_WS_STRIX_ARGS:---ws}" strix ;;
    ws:fastwebsockets | ws:tungstenite | ws:gobwas) add_server servers.txt "$n" - "--threads $threads" peer ;;
    *) die "$servers_var: unknown server '$n' (docs/benchmarks.md lists them)" ;;
  esac
done
if [ "$broadcast" != 0 ]; then
  add_server bc-servers.txt strix-ws-bc "$bin/strix-ws-broadcast-server" "${ECHO_WS_STRIX_BC_ARGS:-}" strix
  add_server bc-servers.txt gobwas-bc - "--threads $threads --broadcast" peer
fi
[ "${#servers[@]}" -gt 0 ] || die "no server to measure (see $runs/servers.txt)"

# --- one run --------------------------------------------------------------------------------------
server_pid= failures=0 done_runs=0
trap '[ -z "$server_pid" ] || kill -9 "$server_pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
# run_one <tag> <label> <server|binary|args> <pin: 0|1> <client binary> <client args...>: starts the server
# on a free port, waits until it accepts, runs the client, records where the server's threads may run
# (every thread's Cpus_allowed_list) and stops the server (SIGTERM, SIGKILL after 5 s).
run_one() {
  local tag=$1 label=$2 pin=$4 cbin=$5 n binary targ port spin=() cpin=() up=0 rc=0 t
  IFS='|' read -r n binary targ _ <<<"$3"
  shift 5
  if [ "$section" = tls ]; then targ=${targ//CERT/$cert} && targ=${targ//KEY/$key}; fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  [ "$pin" = 0 ] || spin=(taskset -c "$server_cpus") cpin=(taskset -c "$client_cpus")
  # shellcheck disable=SC2086  # targ is a list of options
  "${spin[@]}" "$binary" --port "$port" $targ >"$runs/$tag.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 200); do
    kill -0 "$server_pid" 2>/dev/null || { echo "$n exited at start: $(tail -3 "$runs/$tag.server.log" | tr '\n' ' ')" \
      >"$runs/$tag.failed" && server_pid= && break; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.05
  done
  if [ "$up" != 1 ]; then
    [ -f "$runs/$tag.failed" ] || echo "$n did not accept on 127.0.0.1:$port within 10 s" >"$runs/$tag.failed"
  else
    "${cpin[@]}" timeout $((duration + hs_duration + warmup + 60)) "$cbin" --host 127.0.0.1 --port "$port" \
      "${client_opts[@]}" "$@" --server-pid "$server_pid" --json "$runs/$tag.json" >"$runs/$tag.log" 2>&1 || rc=$?
    for t in /proc/"$server_pid"/task/*/status; do
      awk '/^Cpus_allowed_list:/ {print $2}' "$t" 2>/dev/null || true
    done | sort | uniq -c | awk '{printf "%s%d thread%s on %s", (NR > 1 ? "; " : ""), $1, ($1 > 1 ? "s" : ""), $2}' \
      >"$runs/$tag.where"
    [ "$rc" -eq 0 ] || echo "$(basename "$cbin") exited $rc: $(grep -m1 -E "$fail_pattern" "$runs/$tag.log" ||
      tail -1 "$runs/$tag.log")" >"$runs/$tag.failed"
  fi
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null && sleep 0.05 || break; done
    if kill -0 "$server_pid" 2>/dev/null; then
      echo "$name: warning: $n ignored SIGTERM for 5 s; killing it" >&2
      kill -9 "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
  done_runs=$((done_runs + 1))
  if [ -f "$runs/$tag.failed" ]; then
    failures=$((failures + 1))
    printf '  [%d/%d] %-30s %-15s FAILED: %s\n' "$done_runs" "$total_runs" "$label" "$n" "$(cat "$runs/$tag.failed")" >&2
  else
    printf '  [%d/%d] %-30s %-15s %s\n' "$done_runs" "$total_runs" "$label" "$n" \
      "$(grep '^summary' "$runs/$tag.log" | sed -e 's/^summary over [^:]*: //' -e 's/ | MB.s in.*client/ | client/')"
  fi
}

rep_runs() {  # <rep>: every echo cell, then tls's handshake runs or ws's broadcast runs
  local layout pin col depth s cbin sz copts kind resume
  for layout in "${layouts[@]}"; do
    pin=0
    [ "$layout" != pinned ] || pin=1
    for col in "${columns[@]}"; do
      cbin=$client sz=$size copts=(--mode multi --threads "$client_threads")
      case $col in single) copts=(--mode single) ;; loop) cbin=$bin/strix-echo-loop copts=() ;; s*) sz=${col#s} ;; esac
      for depth in "${depths[@]}"; do
        for s in "${servers[@]}"; do
          run_one "${layout}_${col}_${s%%|*}_d${depth}_r$1" "$layout $col depth $depth rep $1" "$s" "$pin" "$cbin" \
            --connections "$connections" --size "$sz" --depth "$depth" "${copts[@]}" --duration "$duration" \
            --warmup "$warmup"
        done
      done
    done
  done
  for kind in "${kinds[@]}"; do
    resume=()
    [ "$kind" = full ] || resume=(--resume)
    for s in "${servers[@]}"; do  # the handshake arguments (the fourth field) in place of the echo ones
      run_one "hs_${kind}_${s%%|*}_r$1" "handshakes $kind rep $1" "$(cut -d'|' -f1,2,4 <<<"$s")" "$can_pin" \
        "$client" --handshakes "${resume[@]}" --connections "$hs_connections" --threads "$client_threads" \
        --size "$size" --duration "$hs_duration" --warmup 1
    done
  done
  for depth in "${bc_depths[@]}"; do
    for s in "${bc_servers[@]}"; do
      run_one "bc_s${bc_size}_${s%%|*}_d${depth}_r$1" "broadcast depth $depth rep $1" "$s" 0 "$client" --broadcast \
        --connections "$bc_connections" --size "$bc_size" --depth "$depth" --mode multi --threads "$client_threads" \
        --duration "$duration" --warmup "$warmup"
    done
  done
}

# --- the run and the report -----------------------------------------------------------------------
echo_runs=$((reps * ${#layouts[@]} * ${#columns[@]} * ${#depths[@]} * ${#servers[@]}))
hs_runs=$((reps * ${#kinds[@]} * ${#servers[@]})) bc_runs=$((reps * ${#bc_depths[@]} * ${#bc_servers[@]}))
total_runs=$((echo_runs + hs_runs + bc_runs))
minutes=$((((echo_runs + bc_runs) * (duration + warmup + 1) + hs_runs * (hs_duration + 2) + 59) / 60))
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg) started=$(date +%s)
echo "$name: $connections connections, columns ${columns[*]}, depths ${depths[*]}, layouts ${layouts[*]}," \
  "${kinds[*]:+handshakes ${kinds[*]}, }${bc_depths[*]:+broadcast depths ${bc_depths[*]}, }${duration} s + ${warmup} s" \
  "warmup, $reps reps, $cores CPUs: $total_runs runs, about $minutes min"
echo "$name: servers: $(cut -d'|' -f1,5 "$runs"/*servers.txt | tr '|\n' ': ' | sed 's/: $//')"
[[ " ${layouts[*]} " != *" pinned "* ]] || echo "$name: pinned layout: server on CPU $server_cpus, client on CPU $client_cpus"
echo "$name: load average at start: $loadavg_start"
for rep in $(seq "$reps"); do rep_runs "$rep"; done
loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$name: load average at the end: $loadavg_end ($(( ($(date +%s) - started + 30) / 60 )) min)"

report=(python3 "$here/echo_report.py" --section "$section" --runs "$runs" --out "$out" --reps "$reps"
  --depths "${depths[*]}" --layouts "${layouts[*]}" --client-threads "$client_threads" --server-cpus "$server_cpus"
  --client-cpus "$client_cpus" --loadavg "$loadavg_start" --loadavg-end "$loadavg_end")
# The client command lines the report's Method section shows (P, PID, FILE: each run's port, server, JSON).
at="--host 127.0.0.1 --port P" multi="--mode multi --threads $client_threads" tail="--server-pid PID --json FILE"
run="--duration $duration --warmup $warmup $tail"
case $section in
  plain) "${report[@]}" --modes "${columns[*]}" \
    --command "strix-echo-bench $at --connections $connections --size $size --depth D $run" ;;
  tls) tls="strix-echo-bench --tls --ca CA --tls-max $tls_max $at"
    "${report[@]}" --kinds "${kinds[*]}" --hs-pinned "$can_pin" --key "$key_kind" \
      --command "$tls --connections $connections --size $size --depth D $multi $run" --hs-command \
      "$tls --handshakes [--resume] --connections $hs_connections --threads $client_threads --size $size --duration $hs_duration --warmup 1 $tail" ;;
  ws) "${report[@]}" --sizes "${sizes[*]}" --broadcast "$broadcast" --bc-depths "${ECHO_WS_BC_DEPTHS:-1 16}" \
      --command "strix-echo-bench --ws $at --connections $connections --size S --depth D $multi $run" --bc-command \
      "strix-echo-bench --ws --broadcast $at --connections $bc_connections --size $bc_size --depth D $multi $run" ;;
esac
[ "$failures" -eq 0 ] || die "$failures of $total_runs runs failed (see FAILED above and $runs/*.failed); the report flags them"
