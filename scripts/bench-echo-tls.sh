#!/usr/bin/env bash
# The echo shoot-out over TLS (issue 17): strix-echo-server with a certificate against the
# tokio-rustls and Go crypto/tls echo peers, measured by the same load tool, strix-echo-bench
# --tls, over loopback; then TLS handshakes per second, full and resumed, against the same servers.
#
#   scripts/bench-echo-tls.sh <build_dir>     (make bench-echo-tls)
#
# `make bench-echo` runs it after the plain shoot-out (scripts/bench-echo.sh), unless ECHO_TLS=0.
# Servers (ECHO_TLS_SERVERS, default "strix-tls tokio-tls go-tls"):
#   strix-tls        strix-echo-server --tls-cert CERT --tls-key KEY, otherwise its defaults (as the
#                    plain section's strix); "not built" while strix-echo-server has no --tls-cert
#   strix-epoll-tls  the same with --io epoll (only when named)
#   tokio-tls        bench/peers/tokio-tls-echo (tokio + tokio-rustls) --threads $ECHO_THREADS
#   go-tls           bench/peers/go-tls-echo (Go crypto/tls, GOMAXPROCS = --threads $ECHO_THREADS)
# The certificate: bench/echo/echo_tls_cert.sh writes a throwaway CA and a server certificate for
# 127.0.0.1 (ECDSA P-256; ECHO_TLS_KEY=rsa for RSA 2048) into <build_dir>/bench/tls-cert/; the
# client verifies every server against that CA. TLS 1.3 unless ECHO_TLS_MAX=1.2.
#
# Echo runs, as the plain section's multi-threaded client (depths, 5 interleaved runs, medians):
#   [taskset -c C] strix-echo-bench --tls --ca CA --connections 100 --size 8 --depth D --mode multi
#                  --threads T --duration S --warmup W --server-pid PID --json FILE
# in the layouts of ECHO_TLS_LAYOUTS ["pinned free"] (pinned: server on $ECHO_SERVER_CPUS, client on
# $ECHO_CLIENT_CPUS; free: no taskset).
# Handshake runs, per kind (full, resumed): the server with one thread (--threads 1, strix
# --shards 1) on one CPU (taskset -c $ECHO_SERVER_CPUS when two CPUs and taskset are there), the
# client on the other:
#   strix-echo-bench --tls --ca CA --handshakes [--resume] --connections $ECHO_TLS_HS_CONNECTIONS
#                    --threads T --size 8 --duration S --warmup W --server-pid PID --json FILE
# Each connection does a handshake and one verified echo, then closes. The report gives
# handshakes/s and handshakes per second of server CPU time: on a 2-core machine the client needs
# more CPU per handshake than the servers do, so the servers are not saturated and the per
# CPU-second figure is the per-core one.
# Runs are interleaved: per repetition, every echo cell and then every handshake kind, each server
# in turn. A run that fails is recorded, left out of the medians, flagged in the report, and makes
# this script exit 1 after scripts/echo_tls_report.py wrote <build_dir>/bench/echo-tls.md.
#
# Environment (defaults in brackets; on 2 CPUs the defaults take about 9 minutes):
#   ECHO_DURATION [3] ECHO_WARMUP [1] ECHO_REPS [5] ECHO_DEPTHS ["1 16 128"] ECHO_CONNECTIONS [100]
#   ECHO_SIZE [8] ECHO_THREADS [CPUs] ECHO_CLIENT_THREADS [CPUs] ECHO_SERVER_CPUS ECHO_CLIENT_CPUS
#   ECHO_STRIX_ARGS ECHO_BUILD_PEERS [1]: as in scripts/bench-echo.sh
#   ECHO_TLS_SERVERS, ECHO_TLS_LAYOUTS, ECHO_TLS_KEY [ec], ECHO_TLS_MAX [1.3]: above
#   ECHO_TLS_HS_CONNECTIONS [32]  handshakes in flight   ECHO_TLS_HS_DURATION [3]  seconds per run
#   ECHO_TLS_HANDSHAKES [1]       0 leaves the handshake runs out
set -euo pipefail

build=${1:?usage: scripts/bench-echo-tls.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$build/bin
out=$build/bench
runs=$out/echo-tls-runs
duration=${ECHO_DURATION:-3}
warmup=${ECHO_WARMUP:-1}
reps=${ECHO_REPS:-5}
read -r -a depths <<<"${ECHO_DEPTHS:-1 16 128}"
read -r -a layouts <<<"${ECHO_TLS_LAYOUTS:-pinned free}"
read -r -a wanted <<<"${ECHO_TLS_SERVERS:-strix-tls tokio-tls go-tls}"
connections=${ECHO_CONNECTIONS:-100}
size=${ECHO_SIZE:-8}
cores=$(nproc)
threads=${ECHO_THREADS:-$cores}
client_threads=${ECHO_CLIENT_THREADS:-$cores}
strix_extra=${ECHO_STRIX_ARGS:-}
key_kind=${ECHO_TLS_KEY:-ec}
tls_max=${ECHO_TLS_MAX:-1.3}
hs_connections=${ECHO_TLS_HS_CONNECTIONS:-32}
hs_duration=${ECHO_TLS_HS_DURATION:-3}
handshakes=${ECHO_TLS_HANDSHAKES:-1}
client=$bin/strix-echo-bench

die() { echo "bench-echo-tls: FAILED: $*" >&2; exit 1; }

[ -x "$client" ] || die "$client is missing; build first (make build)"
"$client" --help | grep -q -- --handshakes || die "$client has no --tls/--handshakes; rebuild it"
for l in "${layouts[@]}"; do
  case $l in pinned | free) ;; *) die "ECHO_TLS_LAYOUTS: unknown layout '$l' (pinned, free)" ;; esac
done

allowed=()
while read -r c; do allowed+=("$c"); done < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
server_cpus=${ECHO_SERVER_CPUS:-${allowed[0]}}
client_cpus=${ECHO_CLIENT_CPUS:-${allowed[1]:-}}
can_pin=1
if [ -z "$client_cpus" ] || ! command -v taskset >/dev/null; then
  can_pin=0
  if [[ " ${layouts[*]} " == *" pinned "* ]]; then
    echo "bench-echo-tls: note: the pinned layout needs taskset and two CPUs; measuring the free layout only"
    layouts=(free)
  fi
fi

rm -rf "$runs"
mkdir -p "$runs"
cert_dir=$out/tls-cert
"$root/bench/echo/echo_tls_cert.sh" "$cert_dir" "$key_kind"
cert=$cert_dir/server.crt key=$cert_dir/server.key ca=$cert_dir/ca.crt

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

# servers.txt: name|binary|echo arguments|role|status, as scripts/echo_report.py reads it; the
# handshake runs' one-thread arguments go to handshake-args.txt (name|arguments). CERT and KEY
# stand for the certificate's and key's paths until run_one starts the server.
servers=()
: >"$runs/servers.txt"
: >"$runs/handshake-args.txt"
tls_args="--tls-cert CERT --tls-key KEY"
peer_tls="--cert CERT --key KEY"
add_server() {  # <name> <binary> <echo args> <handshake args> <role> <status>
  echo "$1|$2|$3|$5|$6" >>"$runs/servers.txt"
  echo "$1|$4" >>"$runs/handshake-args.txt"
  [ "$6" = built ] && servers+=("$1|$2|$3|$4")
  return 0
}
strix_tls_status() {
  if [ ! -x "$bin/strix-echo-server" ]; then
    echo "not built|$bin/strix-echo-server is missing"
  elif ! "$bin/strix-echo-server" --help 2>&1 | grep -q -- --tls-cert; then
    echo "not built|strix-echo-server has no --tls-cert option yet (no TLS transport in this build)"
  else
    echo built
  fi
}
for name in "${wanted[@]}"; do
  case $name in
    strix-tls | strix-epoll-tls)
      io=""
      [ "$name" = strix-epoll-tls ] && io="--io epoll "
      add_server "$name" "$bin/strix-echo-server" "$io$tls_args${strix_extra:+ $strix_extra}" \
        "$io--shards 1 $tls_args${strix_extra:+ $strix_extra}" strix "$(strix_tls_status)" ;;
    tokio-tls | go-tls)
      st=$(peer_status "$name")
      bin_path=-
      [ "${st%%|*}" = built ] && bin_path=${st#*|} && st=built
      add_server "$name" "$bin_path" "--threads $threads $peer_tls" "--threads 1 $peer_tls" peer "$st" ;;
    *) die "ECHO_TLS_SERVERS: unknown server '$name' (strix-tls strix-epoll-tls tokio-tls go-tls)" ;;
  esac
done
[ "${#servers[@]}" -gt 0 ] || die "no TLS server to measure (see $runs/servers.txt)"

bench_name=bench-echo-tls
# shellcheck source=echo_bench_lib.sh
. "$here/echo_bench_lib.sh"

failures=0
done_runs=0
# run_one <tag> <label> <name> <binary> <server args> <pin server: 0|1> <client args...>
run_one() {
  local tag=$1 label=$2 name=$3 binary=$4 targ=$5 pin=$6
  shift 6
  local port spin=() cpin=()
  targ=${targ//CERT/$cert}
  targ=${targ//KEY/$key}
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
    "${cpin[@]}" timeout $((duration + hs_duration + warmup + 60)) "$client" --host 127.0.0.1 --port "$port" --tls --ca "$ca" \
      --tls-max "$tls_max" "$@" --server-pid "$server_pid" --json "$runs/$tag.json" >"$runs/$tag.log" 2>&1 || rc=$?
    where_threads "$server_pid" >"$runs/$tag.where"
    stop_server "$name"
    if [ "$rc" -ne 0 ]; then
      echo "strix-echo-bench exited $rc: $(grep -m1 -E 'ERROR|FAIL|failed|only' "$runs/$tag.log" || tail -1 "$runs/$tag.log")" \
        >"$runs/$tag.failed"
    fi
  fi
  done_runs=$((done_runs + 1))
  if [ -f "$runs/$tag.failed" ]; then
    failures=$((failures + 1))
    printf '  [%d/%d] %-28s %-15s FAILED: %s\n' "$done_runs" "$total_runs" "$label" "$name" "$(cat "$runs/$tag.failed")" >&2
  else
    printf '  [%d/%d] %-28s %-15s %s\n' "$done_runs" "$total_runs" "$label" "$name" \
      "$(grep '^summary' "$runs/$tag.log" | sed -e 's/^summary over [^:]*: //' -e 's/ | MB.s in.*client/ | client/')"
  fi
}

kinds=()
[ "$handshakes" != 0 ] && kinds=(full resumed)
total_runs=$((reps * ${#servers[@]} * (${#layouts[@]} * ${#depths[@]} + ${#kinds[@]})))
hs_pin=$can_pin
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
echo "bench-echo-tls: $connections connections, body $size B, depths ${depths[*]}, layouts ${layouts[*]}, handshakes: ${kinds[*]:-none}, ${duration} s + ${warmup} s warmup, $reps reps, $cores CPUs, $key_kind certificate, TLS up to $tls_max: $total_runs runs, about $(((reps * ${#servers[@]} * (${#layouts[@]} * ${#depths[@]} * (duration + warmup + 1) + ${#kinds[@]} * (hs_duration + 2)) + 59) / 60)) min"
echo "bench-echo-tls: servers: $(cut -d'|' -f1,5 "$runs/servers.txt" | tr '|\n' ': ' | sed 's/: $//')"
echo "bench-echo-tls: load average at start: $loadavg_start"
for rep in $(seq "$reps"); do
  for layout in "${layouts[@]}"; do
    pin=0
    [ "$layout" = pinned ] && pin=1
    for depth in "${depths[@]}"; do
      for s in "${servers[@]}"; do
        IFS='|' read -r name binary targ _ <<<"$s"
        run_one "${layout}_multi_${name}_d${depth}_r${rep}" "$layout depth $depth rep $rep" "$name" "$binary" \
          "$targ" "$pin" --connections "$connections" --size "$size" --depth "$depth" --mode multi \
          --threads "$client_threads" --duration "$duration" --warmup "$warmup"
      done
    done
  done
  for kind in "${kinds[@]}"; do
    resume=()
    [ "$kind" = resumed ] && resume=(--resume)
    for s in "${servers[@]}"; do
      IFS='|' read -r name binary _ hsarg <<<"$s"
      run_one "hs_${kind}_${name}_r${rep}" "handshakes $kind rep $rep" "$name" "$binary" "$hsarg" "$hs_pin" \
        --handshakes "${resume[@]}" --connections "$hs_connections" --threads "$client_threads" --size "$size" \
        --duration "$hs_duration" --warmup 1
    done
  done
done
loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-echo-tls: load average at the end: $loadavg_end ($(( ($(date +%s) - started + 30) / 60 )) min)"

python3 "$here/echo_tls_report.py" --runs "$runs" --out "$out" --reps "$reps" --depths "${depths[*]}" \
  --layouts "${layouts[*]}" --kinds "${kinds[*]}" \
  --command "strix-echo-bench --tls --ca CA --tls-max $tls_max --host 127.0.0.1 --port P --connections $connections --size $size --depth D --mode multi --threads $client_threads --duration $duration --warmup $warmup --server-pid PID --json FILE" \
  --hs-command "strix-echo-bench --tls --ca CA --tls-max $tls_max --host 127.0.0.1 --port P --handshakes [--resume] --connections $hs_connections --threads $client_threads --size $size --duration $hs_duration --warmup 1 --server-pid PID --json FILE" \
  --hs-pinned "$hs_pin" --key "$key_kind" --client-threads "$client_threads" --server-cpus "$server_cpus" \
  --client-cpus "$client_cpus" --loadavg "$loadavg_start" --loadavg-end "$loadavg_end"
if [ "$failures" -gt 0 ]; then
  die "$failures of $total_runs runs failed (see FAILED above and $runs/*.failed); the report flags them"
fi
