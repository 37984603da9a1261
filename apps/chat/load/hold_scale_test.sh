#!/usr/bin/env bash
# ctest driver (chat.hold_scale, label scale): strix-chat-hold against a fresh strix-chat-server
# taking JWT logins (a new HS256 key, new SQLite database).
#   hold_scale_test.sh <strix-chat-hold> <strix-chat-server> <work dir> [sanitized: 0|1]
# 1. 2,000 connections over TCP, all in one room, 3 messages broadcast, held 3 s with pings every
#    second: all held, every message delivered to all 2,000 once and in order, every ping answered.
# 2. 500 over WebSocket, the same.
# 3. Through fault_proxy.py (the held connections only; the control connection posts directly),
#    one chat_msg dropped, duplicated, reordered or corrupted: each run must exit 1 and count
#    exactly that fault.
# The tool's RSS per connection is checked (under 4 KiB at 2,000) except in sanitizer builds,
# whose redzones and quarantine are not the tool's.
set -euo pipefail

hold=$1 server=$2 work=$3 sanitized=${4:-0}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
# fail, free_port, start_server and the kill-on-exit list (pids) come from the bench tools'
# test helpers.
# shellcheck source=../../../bench/test_lib.sh
source "$here/../../../bench/test_lib.sh"

openssl rand -hex 32 >"$work/jwt.key"
wsport=$(free_port)
# Sets port and server_pid, and waits until the server accepts.
start_server "$work/server.log" "$server" --db "sqlite:$work/chat.db" --ws-port "$wsport" \
  --jwt-key "$work/jwt.key" --metrics-port 0 --max-connections 5000

# check NAME N: the run's JSON shows all N held in the room, each broadcast at all of them,
# nothing lost, duplicated, reordered or corrupted, and the pings answered.
check() {
  python3 - "$work/$1.json" "$2" "$sanitized" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
def need(cond, what):
    if not cond:
        sys.exit("FAIL: %s: %s" % (sys.argv[1], what))
need(d["ok"] is True, "ok is not true (first_error: %s)" % d["first_error"])
need(d["connections"] == n and d["room_members"] == n, "%d held, %d in the room, expected %d" % (d["connections"], d["room_members"], n))
for k in ("lost", "duplicated", "out_of_order", "corrupt", "dropped", "failed", "errors"):
    need(d[k] == 0, "%s = %d" % (k, d[k]))
need(len(d["broadcast"]) == 3, "not 3 broadcasts")
for b in d["broadcast"]:
    need(b["delivered"] == n, "message %d reached %d of %d" % (b["k"], b["delivered"], n))
    need(0 < b["first_s"] <= b["last_s"], "message %d has no delivery times" % b["k"])
need(d["pings"] > n and d["pongs"] == d["pings"], "%d pings, %d pongs" % (d["pings"], d["pongs"]))
need(sys.argv[3] == "1" or 0 < d["client_rss_per_conn"] < 4096, "client_rss_per_conn %.0f" % d["client_rss_per_conn"])
print("%s: %d held (%.0f/s), broadcast first-to-last %.1f ms, %.0f B of client RSS each" %
      (d["transport"], n, d["connect_per_s"], 1000 * d["broadcast_all_s"], d["client_rss_per_conn"]))
PY
}

common=(--host 127.0.0.1 --port "$port" --jwt-key "$work/jwt.key" --broadcast 3 --hold-seconds 3
  --ping-interval 1 --broadcast-timeout 20)
timeout 120 "$hold" "${common[@]}" -n 2000 --name-prefix t --hold-room tcp-room \
  --json "$work/tcp.json" >"$work/tcp.log" 2>&1 || { cat "$work/tcp.log"; fail "the TCP run failed"; }
check tcp 2000
# The WebSocket run reads each event as it comes (--read-every 0), the TCP one at most every
# millisecond (the default): both ways must see every message.
timeout 120 "$hold" "${common[@]}" -n 500 --ws-port "$wsport" --read-every 0 --name-prefix w --source-base 127.2.0.1 \
  --hold-room ws-room --json "$work/ws.json" >"$work/ws.log" 2>&1 || { cat "$work/ws.log"; fail "the WebSocket run failed"; }
check ws 500

# 40 members through the proxy: message 1 reaches them as chat_msg 41-80, the 50th is faulted.
for f in drop dup swap corrupt; do
  pport=$(free_port)
  python3 "$here/fault_proxy.py" --listen "$pport" --server "$port" --fault "$f" --after 50 \
    >"$work/proxy-$f.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null; then break; fi
    sleep 0.05
  done
  rc=0
  timeout 60 "$hold" --port "$pport" --control-port "$port" --jwt-key "$work/jwt.key" -n 40 --name-prefix "f$f" \
    --hold-room "room-$f" --broadcast 3 --hold-seconds 1 --broadcast-timeout 1 \
    --json "$work/$f.json" >"$work/$f.log" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/$f.log"; fail "strix-chat-hold exited $rc although the proxy injected a '$f' fault"; }
  python3 - "$work/$f.json" "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = {"drop": {"lost": 1}, "dup": {"duplicated": 1}, "swap": {"out_of_order": 1},
        "corrupt": {"corrupt": 1, "lost": 1}}[sys.argv[2]]
for k in ("lost", "duplicated", "out_of_order", "corrupt"):
    if d[k] != want.get(k, 0):
        sys.exit("FAIL: %s fault: %s = %d, expected %d" % (sys.argv[2], k, d[k], want.get(k, 0)))
print("%s: detected" % sys.argv[2])
PY
done

kill -TERM "$server_pid"
for _ in $(seq 100); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    rc=0
    wait "$server_pid" || rc=$?
    [ "$rc" -eq 0 ] || fail "server exited with $rc on SIGTERM"
    echo "PASS: strix-chat-hold"
    exit 0
  fi
  sleep 0.1
done
fail "server ignored SIGTERM for 10 s"
