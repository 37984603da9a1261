# Shared by the ctest drivers of the benchmark tools (bench/echo/*_test.sh, bench/link/*/*_test.sh):
# a failure with its reason, background processes killed when the test exits, free loopback ports,
# servers started on one and stopped, the lines and exit statuses a tool must give. Source it first
# (it sets -euo pipefail); the perf-tool helpers read $bin (the tools' directory) and $work.
# shellcheck shell=bash
set -euo pipefail

pids=()  # background processes, killed when the test exits
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

# A port below the ephemeral range (scripts/free_port.py says why).
free_port_py=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/free_port.py
free_port() {
  python3 "$free_port_py"
}

expect_line() {  # <file> <regex>
  grep -Eq "$2" "$1" || { cat "$1" >&2; fail "$1 lacks a line matching '$2'"; }
}

expect_text() {  # <file> <fixed string>
  grep -Fq -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks a line with '$2'"; }
}

json_field() {  # <file> <field>: the field of a JSON object, as Python prints it
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# --- servers --------------------------------------------------------------------------------------

# start_server <log> <binary> <args...>: starts it on a free port; sets server_pid and port once it
# accepts there, fails the test when it exits first or does not accept within 10 s.
start_server() {
  local log=$1 server=$2
  shift 2
  port=$(free_port)
  "$server" --port "$port" "$@" >"$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; fail "$(basename "$server") exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  fail "$(basename "$server") did not accept on port $port within 10 s"
}

# stop_server [any]: SIGTERM; the server must exit 0 within 10 s (with `any`: however and whenever it exits).
stop_server() {
  kill -TERM "$server_pid"
  if [ "${1:-}" = any ]; then wait "$server_pid" 2>/dev/null || true; return 0; fi
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$server_pid" 2>/dev/null && fail "server ignored SIGTERM for 10 s"
  local rc=0
  wait "$server_pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "server exited with $rc on SIGTERM"
}

peer_binary() {  # <build dir> <peer>: the binary bench/peers/build.sh built for it, or nothing
  local line
  line=$(grep "^$2|built|" "$1/peers/status.txt" 2>/dev/null | tail -1 || true)
  if [ -n "$line" ] && [ -x "${line##*|}" ]; then echo "${line##*|}"; fi
}

# run_client <name> <log and json stem> <args...>: $client "${client_opts[@]}" for 1 s against the
# server on $port; its exit status in rc, its output on stdout with [name] before each line.
run_client() {
  local name=$1 stem=$2
  shift 2
  rc=0
  "$client" --port "$port" "${client_opts[@]}" --duration 1 --warmup 0 --server-pid "$server_pid" \
    --json "$stem.json" "$@" >"$stem.log" 2>&1 || rc=$?
  sed "s/^/  [$name] /" "$stem.log"
}

# --- the perf tools (libzmq's command lines) ------------------------------------------------------

# pair <receiver> <sender> <endpoint> <args...> [-- <sender's args...>]: the receiver in the background,
# the sender in the foreground (it reconnects until the bind is there), both with the args (the
# sender with its own after --); both must exit 0. The receiver's output is in $work/recv.out, the
# sender's in $work/send.out (their stderr in .err).
pair() {
  local recv=$1 send=$2 ep=$3 rargs=() rp rrc=0 src=0
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do rargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift || set -- "${rargs[@]}"
  timeout 60 "$bin/$recv" "$ep" "${rargs[@]}" >"$work/recv.out" 2>"$work/recv.err" &
  rp=$!
  pids+=("$rp")
  timeout 60 "$bin/$send" "$ep" "$@" >"$work/send.out" 2>"$work/send.err" || src=$?
  wait "$rp" || rrc=$?
  if [ "$rrc" != 0 ] || [ "$src" != 0 ]; then
    cat "$work/recv.err" "$work/send.err" >&2
    fail "$send -> $recv over $ep (${rargs[*]}): receiver exited $rrc, sender $src"
  fi
}

thr_lines() {  # <file> <size> <count>: libzmq local_thr's four lines, and no other
  expect_line "$1" "^message size: $2 \\[B\\]$"
  expect_line "$1" "^message count: $3$"
  expect_line "$1" '^mean throughput: [0-9]+ \[msg/s\]$'
  expect_line "$1" '^mean throughput: [0-9]+\.[0-9]{3} \[Mb/s\]$'
  [ "$(wc -l <"$1")" = 4 ] || { cat "$1" >&2; fail "$1 has other lines than libzmq's four"; }
}

lat_lines() {  # <file> <size> <count>: the latency tools' lines
  expect_line "$1" "^message size: $2 \\[B\\]$"
  expect_line "$1" "^roundtrip count: $3$"
  expect_line "$1" '^average latency: [0-9]+\.[0-9]{3} \[us\]$'
  expect_line "$1" '^p50 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
  expect_line "$1" '^p99 roundtrip: [0-9]+\.[0-9]{3} \[us\]$'
}

# receiver_fails <stem> <what> <receiver command...> -- <sender command...>: the receiver in the
# background (output in $work/<stem>.out and .err), then the sender, whose exit status does not
# matter; the receiver must exit 1.
receiver_fails() {
  local stem=$1 what=$2 recv=() r rc=0
  shift 2
  while [ "$1" != -- ]; do recv+=("$1"); shift; done
  shift
  "${recv[@]}" >"$work/$stem.out" 2>"$work/$stem.err" &
  r=$!
  pids+=("$r")
  "$@" >/dev/null 2>&1 || true
  wait "$r" || rc=$?
  [ "$rc" = 1 ] || fail "$what exited $rc, not 1"
}

# usage_checks <tool> <usage regex> <arguments...>: each argument string (split at spaces) makes the
# tool exit 2 with the usage on stderr; --help exits 0 with it on stdout.
usage_checks() {
  local tool=$1 usage=$2 args rc
  shift 2
  for args in "$@"; do
    rc=0
    # shellcheck disable=SC2086  # the arguments are meant to split
    "$bin/$tool" $args >/dev/null 2>"$work/usage.err" || rc=$?
    [ "$rc" = 2 ] || fail "$tool $args exited $rc, not 2"
    expect_line "$work/usage.err" "$usage"
  done
  "$bin/$tool" --help >"$work/help.out" || fail "$tool --help exited nonzero"
  expect_line "$work/help.out" "$usage"
}

exits() {  # <status> <command...>: the command (output discarded) must exit with that status
  local want=$1 rc=0
  shift
  "$@" >/dev/null 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, not $want"
}
