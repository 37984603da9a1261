# Shared by the echo shoot-out scripts (bench-echo.sh, bench-echo-tls.sh, bench-echo-ws.sh):
# one server at a time in $server_pid, killed if the script exits early; free loopback ports;
# a graceful stop; where the server's threads may run. Source it after setting bench_name.
# shellcheck shell=bash

server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_server() {  # <server name>: SIGTERM, then SIGKILL after 5 s
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    echo "$bench_name: warning: $1 ignored SIGTERM for 5 s; killing it" >&2
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

where_threads() {  # <pid>: "N thread(s) on CPUS; ..." from every thread's Cpus_allowed_list
  local t
  for t in /proc/"$1"/task/*/status; do
    awk '/^Cpus_allowed_list:/ {print $2}' "$t" 2>/dev/null || true
  done | sort | uniq -c | awk '{printf "%s%d thread%s on %s", (NR > 1 ? "; " : ""), $1, ($1 > 1 ? "s" : ""), $2}'
}
