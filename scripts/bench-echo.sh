#!/usr/bin/env bash
# Seed 001's echo shoot-out: strix-echo-server (when built), the raw epoll reference and the naive
# boost::asio server, each measured by strix-echo-bench over loopback.
#
#   scripts/bench-echo.sh <build_dir>
#
# For every repetition, every depth and every server in turn (interleaved, so drift on a shared
# machine hits all servers alike): start the server on a free port, wait until it accepts, run
#   strix-echo-bench --connections 100 --size 8 --depth D --duration S --warmup 1 --server-pid PID
# and stop the server with SIGTERM (SIGKILL after 5 s). Any failed client run fails the script.
# Then scripts/echo_report.py writes <build_dir>/bench/echo.md and echo.png from the JSON files.
#
# Environment: ECHO_DURATION (default 5), ECHO_WARMUP (1), ECHO_REPS (3), ECHO_DEPTHS ("1 16 128"),
#              ECHO_CONNECTIONS (100), ECHO_SIZE (8).
set -euo pipefail

build=${1:?usage: scripts/bench-echo.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs=$out/echo-runs
duration=${ECHO_DURATION:-5}
warmup=${ECHO_WARMUP:-1}
reps=${ECHO_REPS:-3}
read -r -a depths <<<"${ECHO_DEPTHS:-1 16 128}"
connections=${ECHO_CONNECTIONS:-100}
size=${ECHO_SIZE:-8}
cores=$(nproc)
client=$bin/strix-echo-bench

die() { echo "bench-echo: FAILED: $*" >&2; exit 1; }

for b in strix-echo-bench strix-echo-raw-epoll strix-echo-asio-naive; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done

# name|binary|thread argument. strix-echo-server comes with the engine and may not exist yet.
servers=()
if [ -x "$bin/strix-echo-server" ]; then
  servers+=("strix|$bin/strix-echo-server|--shards $cores")
else
  echo "bench-echo: note: $bin/strix-echo-server not built; measuring the baselines only"
fi
servers+=("raw-epoll|$bin/strix-echo-raw-epoll|--threads $cores")
servers+=("asio-naive|$bin/strix-echo-asio-naive|--threads 20")

rm -rf "$runs"
mkdir -p "$runs"
printf '%s\n' "${servers[@]}" >"$runs/servers.txt"

server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    echo "bench-echo: warning: $1 ignored SIGTERM for 5 s; killing it" >&2
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

run_one() {  # <name> <binary> <thread arg> <depth> <rep>
  local name=$1 binary=$2 targ=$3 depth=$4 rep=$5
  local tag="${name}_d${depth}_r${rep}"
  local port
  port=$(free_port)
  # shellcheck disable=SC2086  # targ is "--threads N" / "--shards N"
  "$binary" --port "$port" $targ >"$runs/$tag.server.log" 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$runs/$tag.server.log" >&2; die "$name exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  [ "$up" = 1 ] || die "$name did not accept on 127.0.0.1:$port within 10 s"
  local rc=0
  timeout $((duration + warmup + 60)) "$client" --host 127.0.0.1 --port "$port" \
    --connections "$connections" --size "$size" --depth "$depth" --duration "$duration" \
    --warmup "$warmup" --server-pid "$server_pid" --json "$runs/$tag.json" \
    >"$runs/$tag.log" 2>&1 || rc=$?
  stop_server "$name"
  if [ "$rc" -ne 0 ]; then
    cat "$runs/$tag.log" >&2
    die "strix-echo-bench exited $rc against $name at depth $depth (rep $rep); log: $runs/$tag.log"
  fi
  printf '  %-11s depth %-4s rep %s: %s\n' "$name" "$depth" "$rep" \
    "$(grep '^summary' "$runs/$tag.log" | sed 's/^summary over [^:]*: //')"
}

echo "bench-echo: $connections connections, body $size B, depths ${depths[*]}, ${duration} s + ${warmup} s warmup, $reps reps, $cores CPUs"
echo "bench-echo: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$reps"); do
  for depth in "${depths[@]}"; do
    for s in "${servers[@]}"; do
      IFS='|' read -r name binary targ <<<"$s"
      run_one "$name" "$binary" "$targ" "$depth" "$rep"
    done
  done
done

python3 "$here/echo_report.py" --runs "$runs" --out "$out" --reps "$reps" --depths "${depths[*]}" \
  --command "strix-echo-bench --host 127.0.0.1 --port P --connections $connections --size $size --depth D --duration $duration --warmup $warmup --server-pid PID --json FILE" \
  --loadavg "$loadavg_start"
