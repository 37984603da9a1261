#!/usr/bin/env bash
# The Chat server portfolio's chat load test: strix-chat-server under strix-chat-load over loopback.
#
#   scripts/bench-chat.sh <build_dir>
#
# 1. strix-platform-probe: clock hiccups per CPU and the small-segment ceiling of loopback TCP and
#    Unix sockets on this machine (what any server here can do at best);
# 2. starts strix-chat-server on a fresh temporary SQLite database (cheap password hashes, metrics
#    off, chat rate limit lifted so the sweep measures the server rather than its limiter),
#    listening on 127.0.0.1 TCP and on a Unix socket, its shards pinned to the first CPUs; the load
#    tool is pinned to the CPUs the shards leave free;
# 3. the portfolio's workload: 500 clients, 10 rooms, 10 chat messages per second per client, payload
#    64 B 80 % / 256 B 18 % / 1-2 KB 2 %, for CHAT_DURATION seconds, a row every 10 s: first over
#    TLS (tag run-tls: a server like step 2's with --tls-cert, a self-signed P-256 certificate made
#    with openssl for 127.0.0.1, the load tool with --tls --ca verifying it), then, on a fresh
#    server, over TCP (the portfolio's transport) and over the Unix socket (same server, same code above
#    the socket), so TLS and plain TCP are measured one right after the other, then over WebSocket
#    (tag run-ws: the same server's --ws-port, strix-chat-load --ws: every frame one binary
#    message, the same verification) in the same run;
# 4. the sweep over each transport: the same clients and rooms, the rate starting at 2 messages/s
#    per client and raised x1.5 per 10 s step until p99 passes 10 ms or deliveries fall behind;
# 5. a second server with --ack early (acknowledged when queued for the database, the behaviour
#    before acknowledge-after-write became the default) on a fresh database, and step 3's runs
#    against it (tags run-early, run-unix-early; no sweep), so chat.md shows what waiting for the
#    commit costs next to what it cost not to;
# 6. the README layout: a server with nothing but --port, --db, --metrics-port and --io (every
#    other option at its default: 2 shards on 2 CPUs, not pinned, argon2id at the interactive cost,
#    every limit on) and strix-chat-load with nothing but --port, --duration, --name-prefix and
#    --server-pid (it reads the server's CPU time from /proc)
#    (500 clients, 10 rooms, 10 rps, not pinned), CHAT_README_RUNS times per backend, epoll and
#    io_uring interleaved, each on a fresh database, then the same at a fifth of the rate (tags
#    readme-epoll-10rps-rN, readme-uring-2rps-rN, ...);
# 7. the conversations workload (strix-chat-load --rooms-per-client): CHAT_CONV_CLIENTS accounts
#    (5,000) logged in with protocol version 2, each in 10 group rooms of 50 members and 2 direct
#    partners, 20 % of its messages direct, 0.2 messages/s each (1,000 chat_req/s, ~40,400
#    deliveries/s: a rate one 2-core machine carries with the load tool on the same machine, so the
#    runs measure latency, not overload), CHAT_CONV_RUNS times, interleaved: on one node (a server
#    like step 3's on a fresh SQLite database: tags conv-single-rN) and on two cluster nodes
#    (strix-chat-server --cluster on a fresh PostgreSQL database and a fresh redis-server, started
#    with scripts/cluster_env.sh: tags conv-cluster-rN; each node half the shards, pinned to the
#    server CPUs like the single node, with Redis and PostgreSQL; the load tool on the CPUs left);
#    scripts/chat_conv_report.py writes <build_dir>/bench/chat-conversations.md (and chat.md gets the
#    same section);
# stops each server with SIGTERM, and has scripts/chat_report.py write <build_dir>/bench/chat.md.
# Fails loudly when a binary is missing, the server does not start or stop cleanly, or the load
# tool fails (lost, duplicated, reordered or corrupted messages, errors); a conversations run that
# does not verify is reported in the table and fails the script at the end.
#
# Environment: CHAT_DURATION (default 60), CHAT_WARMUP (5), CHAT_CLIENTS (500), CHAT_ROOMS (10),
#              CHAT_RPS (10), CHAT_PAYLOAD_MIX (64:80,256:18,1024-2048:2), CHAT_SWEEP_RPS (2),
#              CHAT_SWEEP_DURATION (10), CHAT_SWEEP_STEPS (12), CHAT_SHARDS (nproc - 1, at least 1:
#              the load tool shares the machine and gets a core of its own), CHAT_LOAD_THREADS (1),
#              CHAT_SWEEP=0 skips the sweeps, CHAT_UNIX=0 skips the Unix socket runs, CHAT_TLS=0
#              skips the TLS run, CHAT_WS=0 skips the WebSocket run,
#              CHAT_PROBE=0 skips the platform probe, CHAT_EARLY=0 skips the --ack early runs,
#              CHAT_SERVER_ARGS adds arguments to both servers (e.g. --commit-delay-us 500),
#              CHAT_README_RUNS (3; 0 skips step 6), CHAT_README_DURATION (20),
#              CHAT_README_RPS (messages/s per client in step 6, "10 2": the portfolio's rate, then a
#              fifth of it, which shows how the tail behaves with CPUs left idle),
#              CHAT_CONV=0 skips step 7, CHAT_CONV_ONLY=1 runs step 7 alone (no probe, steps 2-6 or
#              chat.md), CHAT_CONV_CLUSTER=0 skips its cluster runs, CHAT_CONV_RUNS (5),
#              CHAT_CONV_CLIENTS (5000), CHAT_CONV_DURATION (30), CHAT_CONV_WARMUP (5), CHAT_CONV_RPS
#              (0.2), CHAT_CONV_ROOMS_PER_CLIENT (10), CHAT_CONV_ROOM_SIZE (50), CHAT_CONV_DM_SHARE (0.2).
#              A short smoke: CHAT_CONV_ONLY=1 CHAT_CONV_RUNS=1 CHAT_CONV_CLIENTS=1000 CHAT_CONV_DURATION=10.
set -euo pipefail

build=${1:?usage: scripts/bench-chat.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs=$out/chat-runs
duration=${CHAT_DURATION:-60}
warmup=${CHAT_WARMUP:-5}
clients=${CHAT_CLIENTS:-500}
rooms=${CHAT_ROOMS:-10}
rps=${CHAT_RPS:-10}
mix=${CHAT_PAYLOAD_MIX:-64:80,256:18,1024-2048:2}
sweep_rps=${CHAT_SWEEP_RPS:-2}
sweep_duration=${CHAT_SWEEP_DURATION:-10}
sweep_steps=${CHAT_SWEEP_STEPS:-12}
load_threads=${CHAT_LOAD_THREADS:-1}
do_sweep=${CHAT_SWEEP:-1}
do_unix=${CHAT_UNIX:-1}
conv_only=${CHAT_CONV_ONLY:-0}
do_conv=${CHAT_CONV:-1}
[ "$conv_only" = 1 ] && do_conv=1
do_conv_cluster=${CHAT_CONV_CLUSTER:-1}
conv_runs_n=${CHAT_CONV_RUNS:-5}
conv_clients=${CHAT_CONV_CLIENTS:-5000}
conv_duration=${CHAT_CONV_DURATION:-30}
conv_warmup=${CHAT_CONV_WARMUP:-5}
conv_rps=${CHAT_CONV_RPS:-0.2}
conv_k=${CHAT_CONV_ROOMS_PER_CLIENT:-10}
conv_m=${CHAT_CONV_ROOM_SIZE:-50}
conv_share=${CHAT_CONV_DM_SHARE:-0.2}
do_probe=${CHAT_PROBE:-$([ "$conv_only" = 1 ] && echo 0 || echo 1)}
do_early=${CHAT_EARLY:-1}
do_tls=${CHAT_TLS:-1}
do_ws=${CHAT_WS:-1}
readme_runs=${CHAT_README_RUNS:-3}
readme_duration=${CHAT_README_DURATION:-20}
read -r -a readme_rates <<<"${CHAT_README_RPS:-10 2}"
read -r -a extra_args <<<"${CHAT_SERVER_ARGS:-}"

die() { echo "bench-chat: FAILED: $*" >&2; exit 1; }

need_bins=(strix-chat-server strix-chat-load)
[ "$do_probe" = 1 ] && need_bins+=(strix-platform-probe)
for b in "${need_bins[@]}"; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
if [ "$do_tls" = 1 ] && [ "$conv_only" != 1 ]; then
  command -v openssl >/dev/null || die "openssl (the command) is missing: it makes the TLS run's certificate; CHAT_TLS=0 skips the run"
fi

rm -rf "$runs"
mkdir -p "$runs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strix-bench-chat.XXXXXX")
server_pid=
ce_loaded=
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
  if [ -n "$ce_loaded" ]; then ce_cleanup; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 "$here/free_port.py"
}

cut -d' ' -f1-3 /proc/loadavg >"$runs/loadavg.start"
if [ "$do_probe" = 1 ]; then
  echo "bench-chat: $bin/strix-platform-probe (clock hiccups, loopback segment ceiling)"
  "$bin/strix-platform-probe" --json "$runs/platform.json" | tee "$runs/platform.md" ||
    die "strix-platform-probe failed"
fi

# The load tool runs on the same machine: leave it one core so the two do not take turns on one.
# On the project's 2-core machine that is one shard (2 shards measured p99 13.5 ms vs 6.6 ms).
shards=${CHAT_SHARDS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
# Shards pin themselves to the first CPUs (--pin: not the default, which leaves them to the
# scheduler); the load tool gets the ones they leave (if any).
ncpu=$(nproc)
pin=()
if [ "$ncpu" -gt "$shards" ] && command -v taskset >/dev/null; then
  pin=(taskset -c "$shards-$((ncpu - 1))")
fi
echo "bench-chat: $(nproc) CPUs, load average at start $(cat "$runs/loadavg.start")"

# start_server <ack mode> <suffix> [args...]: a server on a fresh database, with the args added;
# its command line goes to server<suffix>.cmd, its output to server<suffix>.log.
start_server() {
  local ack=$1 suffix=$2
  shift 2
  port=$(free_port)
  metrics_port=$(free_port)
  wsport=$(free_port)
  sock=$tmp/chat$suffix.sock
  # Every client comes from 127.0.0.1 and logs in at once: the per-address connection cap (256)
  # and the pending-login bound (64) are for hostile clients, not for a load test of 500 known ones.
  server_cmd=("$bin/strix-chat-server" --db "sqlite:$tmp/chat$suffix.db" --password-cost fast --port "$port"
              --unix "$sock" --metrics-port "$metrics_port" --chat-rate 1000000 --chat-burst 1000000
              --max-connections-per-address 0 --login-queue 1024 --shards "$shards" --pin --ack "$ack"
              --ws-port "$wsport" "${extra_args[@]}" "$@")
  launch_server "server$suffix"
}

# launch_server <name>: runs server_cmd (listening on $port), its command line in <name>.cmd and
# its output in <name>.log, and waits until it accepts.
launch_server() {
  local name=$1
  echo "${server_cmd[*]}" >"$runs/$name.cmd"
  echo "bench-chat: ${server_cmd[*]}"
  "${server_cmd[@]}" >"$runs/$name.log" 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$runs/$name.log" >&2; die "strix-chat-server ($name) exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  [ "$up" = 1 ] || die "strix-chat-server ($name) did not accept on 127.0.0.1:$port within 10 s"
}

# stop_server: SIGTERM, which must end it cleanly within 10 s.
stop_server() {
  kill -TERM "$server_pid"
  local stopped=0
  for _ in $(seq 100); do
    if ! kill -0 "$server_pid" 2>/dev/null; then stopped=1; break; fi
    sleep 0.1
  done
  [ "$stopped" = 1 ] || die "strix-chat-server ignored SIGTERM for 10 s"
  local rc=0
  wait "$server_pid" || rc=$?
  server_pid=
  [ "$rc" -eq 0 ] || die "strix-chat-server exited $rc on SIGTERM; see $runs/server*.log"
}

# snap <file>: the server's /metrics now (its event-loop turn histogram is read from the difference
# of the snapshots around each run).
snap() {
  python3 - "$metrics_port" "$1" <<'PY' || die "cannot read the server's metrics"
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10) as r:
    open(sys.argv[2], "wb").write(r.read())
PY
}

# run_load <tag> <limit s> <args...>: strix-chat-load with the common arguments, its output shown
# and kept in <tag>.log; any failure ends the benchmark.
# Each run logs in accounts of its own (--name-prefix TAG.): rooms and memberships persist, so the
# same accounts would find themselves back in the last run's rooms at login.
run_load() {
  local tag=$1 limit=$2
  shift 2
  local target=(--host 127.0.0.1 --port "$port")
  case $tag in
    *-unix|*-unix-early) target=(--unix "$sock") ;;
    *-tls) target+=(--tls --ca "$tls_cert") ;;
    *-ws) target=(--host 127.0.0.1 --port "$wsport" --ws) ;;
  esac
  local cmd=("${pin[@]}" "$bin/strix-chat-load" "${target[@]}" --clients "$clients" --rooms "$rooms"
             --payload-mix "$mix" --threads "$load_threads" --server-pid "$server_pid"
             --name-prefix "$tag." --json "$runs/$tag.json" "$@")
  echo "${cmd[*]}" >"$runs/$tag.cmd"
  echo "bench-chat: ${cmd[*]}"
  snap "$runs/$tag.metrics.before"
  set +e
  timeout "$limit" "${cmd[@]}" 2>&1 | tee "$runs/$tag.log"
  local statuses=("${PIPESTATUS[@]}")
  set -e
  local rc=${statuses[0]}
  if [ "$rc" -ne 0 ]; then
    die "strix-chat-load ($tag) exited $rc; log: $runs/$tag.log, server logs: $runs/server*.log"
  fi
  [ -s "$runs/$tag.json" ] || die "strix-chat-load ($tag) wrote no JSON"
  snap "$runs/$tag.metrics.after"
}

# shellcheck source=bench-chat-conv.sh
. "$here/bench-chat-conv.sh"
if [ "$conv_only" = 1 ]; then
  conversation_runs
  cut -d' ' -f1-3 /proc/loadavg >"$runs/loadavg.end"
  python3 "$here/chat_conv_report.py" --runs "$runs" --out "$out/chat-conversations.md"
  exit 0
fi

# Tags: run / sweep over TCP, run-unix / sweep-unix over the Unix socket (run_load picks the target),
# with -early appended for the --ack early server.
transports=("")
if [ "$do_unix" = 1 ]; then transports+=(-unix); fi
if [ "$do_tls" = 1 ]; then
  # The README's test certificate (self-signed, for 127.0.0.1): the load tool verifies it as a CA.
  tls_cert=$tmp/tls-cert.pem
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$tmp/tls-key.pem" -out "$tls_cert" 2>/dev/null ||
    die "openssl could not make the test certificate"
  start_server stored -tls --tls-cert "$tls_cert" --tls-key "$tmp/tls-key.pem"
  run_load run-tls $((duration + warmup + 300)) --rps "$rps" --duration "$duration" --warmup "$warmup" \
    --report-every 10
  stop_server
fi
start_server stored ""
for t in "${transports[@]}"; do
  run_load "run$t" $((duration + warmup + 300)) --rps "$rps" --duration "$duration" --warmup "$warmup" \
    --report-every 10
done
# WebSocket on the same server, right after TCP and Unix (no sweep: the run is the comparison).
if [ "$do_ws" = 1 ]; then
  run_load run-ws $((duration + warmup + 300)) --rps "$rps" --duration "$duration" --warmup "$warmup" \
    --report-every 10
fi
if [ "$do_sweep" = 1 ]; then
  for t in "${transports[@]}"; do
    run_load "sweep$t" $(((sweep_duration + 15) * sweep_steps + 300)) --sweep --rps "$sweep_rps" \
      --duration "$sweep_duration" --sweep-steps "$sweep_steps" --report-every "$sweep_duration"
  done
fi

stop_server
if [ "$do_early" = 1 ]; then
  start_server early -early
  for t in "${transports[@]}"; do
    run_load "run$t-early" $((duration + warmup + 300)) --rps "$rps" --duration "$duration" --warmup "$warmup" \
      --report-every 10
  done
  stop_server
fi
# Step 6: what a user who follows the README gets. No option but where to listen, where the
# database is and which backend; the load tool unpinned with its defaults.
for r in $(seq "$readme_runs"); do
  for rate in "${readme_rates[@]}"; do
    for io in epoll uring; do
      tag=readme-$io-${rate}rps-r$r
      port=$(free_port)
      metrics_port=$(free_port)
      server_cmd=("$bin/strix-chat-server" --port "$port" --db "sqlite:$tmp/$tag.db" --metrics-port "$metrics_port"
                  --io "$io")
      launch_server "server-$tag"
      cmd=("$bin/strix-chat-load" --port "$port" --duration "$readme_duration" --name-prefix "r$r$io"
           --server-pid "$server_pid" --json "$runs/$tag.json")
      [ "$rate" = 10 ] || cmd+=(--rps "$rate")
      echo "${cmd[*]}" >"$runs/$tag.cmd"
      echo "bench-chat: ${cmd[*]}"
      set +e
      timeout $((readme_duration + 300)) "${cmd[@]}" >"$runs/$tag.log" 2>&1
      rc=$?
      set -e
      tail -n 12 "$runs/$tag.log"
      [ "$rc" -eq 0 ] || die "strix-chat-load ($tag) exited $rc; log: $runs/$tag.log"
      stop_server
    done
  done
done
if [ "$do_conv" = 1 ]; then conversation_runs; fi
cut -d' ' -f1-3 /proc/loadavg >"$runs/loadavg.end"

python3 "$here/chat_report.py" --runs "$runs" --out "$out/chat.md"
# Exits 1 when a conversations run did not verify (chat.md shows it too).
if [ "$do_conv" = 1 ]; then python3 "$here/chat_conv_report.py" --runs "$runs" --out "$out/chat-conversations.md"; fi
