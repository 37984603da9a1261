#!/usr/bin/env bash
# make bench-api: the server API under load. The Chat server portfolio's chat workload (500
# clients, 10 rooms, 10 messages/s each, payload 64 B 80 % / 256 B 18 % / 1-2 KB 2 %) through
# strix-chat-load, alone and with wrk POSTing messages to the server API from 50 keep-alive
# connections at the same time, interleaved:
#
#   run r = 1 .. API_RUNS:  alone-rR  strix-chat-load alone
#                           api-rR    the same, with wrk (-c API_CONNECTIONS -t 1 --latency,
#                                     bench/api/api_post.lua) POSTing {"text", "idempotency_key"}
#                                     to /api/v1/rooms/{room}/messages as fast as the answers come,
#                                     from the load tool's "running:" line (setup over) for the
#                                     warmup and the measured window
#
# Every run gets a fresh strix-chat-server on a fresh SQLite database (so no run inherits the
# rooms, accounts and hundreds of thousands of API messages of the one before, and alone and api
# runs start alike): --password-cost fast, the chat and API rate limits lifted (the benchmark
# measures the server, not its limiters), --api-port with one key. Before the load starts, two
# strix-chat-client listeners log in; one creates the API's room, the other joins it, so every
# post is delivered to two members (the load tool's rooms never get an API post: it verifies their
# contents). Like make bench-chat, the server's shards (nproc - 1) are pinned to the first CPUs;
# the load tool, wrk and the listeners share the CPUs left (on 2 cores: server on CPU 0, everything
# else on CPU 1).
#
# Checks, any failure ends the script: the load tool's own verification (nothing lost, duplicated,
# reordered or changed in its rooms), wrk's statuses over 399 and socket errors all 0, the room's
# last_seq (GET /api/v1/rooms/{room}) between the posts answered 200 and the posts wrk generated
# (those in flight when wrk stopped may be stored too: at most API_CONNECTIONS), and each listener
# printed exactly last_seq messages of the room. scripts/api_report.py writes
# <build_dir>/bench/api.md (median [min-max] per mode of chat p50/p99, API requests/s and p99).
#
#   scripts/bench-api.sh <build_dir>
# Environment: API_RUNS (5), API_DURATION (20 s measured), API_WARMUP (5), API_CONNECTIONS (50),
#   API_CLIENTS (500), API_ROOMS (10), API_RPS (10), API_PAYLOAD_MIX (64:80,256:18,1024-2048:2),
#   API_SHARDS (nproc - 1, at least 1).
set -euo pipefail

build=${1:?usage: scripts/bench-api.sh <build_dir>}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs_dir=$out/api-runs
n_runs=${API_RUNS:-5}
duration=${API_DURATION:-20}
warmup=${API_WARMUP:-5}
connections=${API_CONNECTIONS:-50}
clients=${API_CLIENTS:-500}
rooms=${API_ROOMS:-10}
rps=${API_RPS:-10}
mix=${API_PAYLOAD_MIX:-64:80,256:18,1024-2048:2}
lua=$(cd "$here/../bench/api" && pwd)/api_post.lua

die() { echo "bench-api: FAILED: $*" >&2; exit 1; }
for b in strix-chat-server strix-chat-load strix-chat-client; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing; build first (make build)"
done
command -v wrk >/dev/null || die "wrk is not installed (scripts/install-deps.sh)"
command -v curl >/dev/null || die "curl is not installed (scripts/install-deps.sh)"

rm -rf "$runs_dir"
mkdir -p "$runs_dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strix-bench-api.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 65536 2>/dev/null || true
export XDG_STATE_HOME=$tmp/state  # the listeners keep no device tokens, but never in the real home

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# As in make bench-chat: the shards pinned to the first CPUs, the clients on the ones left.
ncpu=$(nproc)
shards=${API_SHARDS:-$((ncpu > 1 ? ncpu - 1 : 1))}
pin=()
client_cpus=all
if [ "$ncpu" -gt "$shards" ] && command -v taskset >/dev/null; then
  client_cpus=$shards-$((ncpu - 1))
  [ "$shards" -eq $((ncpu - 1)) ] && client_cpus=$shards
  pin=(taskset -c "$client_cpus")
fi
key=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$key bench" >"$tmp/api-keys"
chmod 600 "$tmp/api-keys"
cut -d' ' -f1-3 /proc/loadavg >"$runs_dir/loadavg.start"
echo "bench-api: $ncpu CPUs, $shards shard(s) pinned, clients on CPUs $client_cpus; load average $(cat "$runs_dir/loadavg.start")"

# Waits up to 10 s for a line matching the extended regex in the file.
wait_for() {
  for _ in $(seq 200); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  die "no line matching '$2' in $1 within 10 s"
}

# GET <path> on the API with the key; the body on stdout.
api_get() { curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$api_port$1"; }

# start_server <tag>: a server on a fresh database with the API on; sets port, api_port, server_pid.
start_server() {
  local tag=$1
  port=$(free_port)
  api_port=$(free_port)
  local cmd=("$bin/strix-chat-server" --db "sqlite:$tmp/$tag.db" --password-cost fast --port "$port"
             --api-port "$api_port" --api-keys "$tmp/api-keys" --api-rate 1000000000 --api-burst 1000000000
             --chat-rate 1000000 --chat-burst 1000000 --max-connections-per-address 0 --login-queue 1024
             --shards "$shards" --pin)
  echo "${cmd[*]}" >"$runs_dir/$tag.server.cmd"
  "${cmd[@]}" >"$runs_dir/$tag.server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$runs_dir/$tag.server.log" >&2; die "strix-chat-server ($tag) exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$api_port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "strix-chat-server ($tag) did not accept on its API port within 10 s"
}

# start_listeners <tag>: two console clients in a room of their own (sets room); their input
# pipes stay open on fds 7 and 8 until stop_listeners.
start_listeners() {
  local tag=$1 who fd
  mkfifo "$tmp/$tag.a.in" "$tmp/$tag.b.in"
  for who in a b; do
    "${pin[@]}" "$bin/strix-chat-client" --port "$port" --name "apilisten$who" --password "listen-pw-$who" \
      --no-device-token <"$tmp/$tag.$who.in" >"$tmp/$tag.listener-$who.out" 2>&1 &
    pids+=("$!")
  done
  exec 7>"$tmp/$tag.a.in" 8>"$tmp/$tag.b.in"
  printf '/create api-bench\n' >&7
  wait_for "$tmp/$tag.listener-a.out" "^created room [0-9]+ 'api-bench'"
  room=$(sed -nE "s/^created room ([0-9]+) 'api-bench'.*/\1/p" "$tmp/$tag.listener-a.out")
  printf '/join %s\n' "$room" >&8
  wait_for "$tmp/$tag.listener-b.out" "^joined room $room 'api-bench'"
}

stop_listeners() {
  printf '/quit\n' >&7
  printf '/quit\n' >&8
  exec 7>&- 8>&-
}

# stop_server: SIGTERM, which must end it cleanly within 10 s.
stop_server() {
  kill -TERM "$server_pid"
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$server_pid" 2>/dev/null && die "strix-chat-server ignored SIGTERM for 10 s"
  local rc=0
  wait "$server_pid" || rc=$?
  [ "$rc" -eq 0 ] || die "strix-chat-server exited $rc on SIGTERM; see $runs_dir/*.server.log"
}

# check_api <tag>: wrk's counts against the room's last_seq and what the listeners printed.
check_api() {
  local tag=$1 last_seq n who
  [ -s "$runs_dir/$tag.wrk.json" ] || die "$tag: wrk wrote no result (log: $runs_dir/$tag.wrk.log)"
  last_seq=$(api_get "/api/v1/rooms/$room" | python3 -c 'import json, sys; print(json.load(sys.stdin)["last_seq"])') ||
    die "$tag: GET /api/v1/rooms/$room failed"
  python3 - "$runs_dir/$tag.wrk.json" "$last_seq" "$connections" "$tag" <<'PY' || die "$tag: the API's counts do not add up (above)"
import json, sys
w = json.load(open(sys.argv[1]))
stored, conns, tag = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bad = {k: w[k] for k in ("status_errors", "connect_errors", "read_errors", "write_errors", "timeouts") if w[k]}
if bad:
    sys.exit(f"{tag}: wrk counted non-2xx answers or socket errors: {bad}")
ok = w["requests"]
# A post answered 200 must be stored; one still in flight when wrk stopped may be (wrk's sent
# counts one request() call it made to check the script and never sent).
if not ok <= stored <= w["sent"] - 1 or stored - ok > conns:
    sys.exit(f"{tag}: room last_seq {stored}, posts answered 200 {ok}, generated {w['sent'] - 1}")
print(f"{tag}: API posts answered 200: {ok}, stored (room last_seq): {stored} ({stored - ok} in flight at wrk's stop)")
PY
  for who in a b; do
    for _ in $(seq 200); do
      n=$(grep -Ec "^\[$room#[0-9]+\] " "$tmp/$tag.listener-$who.out" || true)
      [ "$n" -ge "$last_seq" ] && break
      sleep 0.05
    done
    if [ "$n" -ne "$last_seq" ]; then
      cp "$tmp/$tag.listener-$who.out" "$runs_dir/"
      die "$tag: listener $who printed $n messages of room $room, which holds $last_seq ($runs_dir/$tag.listener-$who.out)"
    fi
    # Hundreds of thousands of lines: keep the start and the end.
    { head -n 20 "$tmp/$tag.listener-$who.out"; echo ...; tail -n 20 "$tmp/$tag.listener-$who.out"; } >"$runs_dir/$tag.listener-$who.out"
  done
  echo "{\"stored\": $last_seq, \"room\": $room}" >"$runs_dir/$tag.check.json"
}

# run_one <tag> alone|api
run_one() {
  local tag=$1 mode=$2 lpid wpid=
  start_server "$tag"
  start_listeners "$tag"
  local cmd=("${pin[@]}" "$bin/strix-chat-load" --host 127.0.0.1 --port "$port" --clients "$clients" --rooms "$rooms"
             --rps "$rps" --payload-mix "$mix" --duration "$duration" --warmup "$warmup" --report-every 10
             --server-pid "$server_pid" --name-prefix "${tag//-/}." --json "$runs_dir/$tag.json")
  echo "${cmd[*]}" >"$runs_dir/$tag.cmd"
  echo "bench-api: $tag: ${cmd[*]}"
  "${cmd[@]}" >"$runs_dir/$tag.log" 2>&1 &
  lpid=$!
  pids+=("$lpid")
  if [ "$mode" = api ]; then
    for _ in $(seq 6000); do
      grep -q '^running:' "$runs_dir/$tag.log" 2>/dev/null && break
      kill -0 "$lpid" 2>/dev/null || break
      sleep 0.01
    done
    grep -q '^running:' "$runs_dir/$tag.log" || { cat "$runs_dir/$tag.log" >&2; die "$tag: the load tool did not start its run"; }
    local wcmd=("${pin[@]}" wrk -c "$connections" -t 1 -d "$((warmup + duration + 1))s" --timeout 10s --latency
                -s "$lua" "http://127.0.0.1:$api_port" -- "$room" "$key" "$runs_dir/$tag.wrk.json")
    echo "${wcmd[*]}" | sed "s/$key/<key>/" >"$runs_dir/$tag.wrk.cmd"
    "${wcmd[@]}" >"$runs_dir/$tag.wrk.log" 2>&1 &
    wpid=$!
    pids+=("$wpid")
  fi
  local rc=0
  wait "$lpid" || rc=$?
  tail -n 8 "$runs_dir/$tag.log"
  [ "$rc" -eq 0 ] || die "strix-chat-load ($tag) exited $rc (lost, reordered or corrupted messages?); log: $runs_dir/$tag.log"
  if [ -n "$wpid" ]; then
    rc=0
    wait "$wpid" || rc=$?
    cat "$runs_dir/$tag.wrk.log"
    [ "$rc" -eq 0 ] || die "wrk ($tag) exited $rc; log: $runs_dir/$tag.wrk.log"
    check_api "$tag"
  fi
  stop_listeners
  stop_server
  [ "$mode" = api ] || cp "$tmp/$tag.listener-a.out" "$tmp/$tag.listener-b.out" "$runs_dir/"
  rm -f "$tmp/$tag".*
}

for r in $(seq "$n_runs"); do
  run_one "alone-r$r" alone
  run_one "api-r$r" api
done
cut -d' ' -f1-3 /proc/loadavg >"$runs_dir/loadavg.end"
python3 "$here/api_report.py" --runs "$runs_dir" --out "$out/api.md" --cpus "$ncpu" --shards "$shards" \
  --client-cpus "$client_cpus" --connections "$connections"
cat "$out/api.md"
