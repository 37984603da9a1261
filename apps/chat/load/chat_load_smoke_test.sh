#!/usr/bin/env bash
# ctest driver (chat.load_smoke): strix-chat-load against a fresh strix-chat-server.
#   chat_load_smoke_test.sh <strix-chat-load> <strix-chat-server> <work dir>
# The server runs on a new SQLite database with cheap password hashes; 40 clients in 4 rooms send
# 5 messages per second each for 3 s. The load tool must exit 0, and its JSON must show every
# delivery verified: lost = duplicates = out_of_order = corrupt = 0, delivered = expected =
# sent x 10 (the room size), and the server must stop cleanly on SIGTERM.
set -euo pipefail

load=$1 server=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port=$(free_port)
"$server" --db "sqlite:$work/chat.db" --password-cost fast --port "$port" --metrics-port 0 >"$work/server.log" 2>&1 &
server_pid=$!
up=0
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "server exited at start"; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
[ "$up" = 1 ] || fail "server did not accept on 127.0.0.1:$port within 10 s"

rc=0
timeout 90 "$load" --host 127.0.0.1 --port "$port" --clients 40 --rooms 4 --rps 5 --duration 3 \
  --warmup 1 --report-every 1 --json "$work/load.json" >"$work/load.log" 2>&1 || rc=$?
cat "$work/load.log"
[ "$rc" -eq 0 ] || fail "strix-chat-load exited $rc against a correct server"

python3 - "$work/load.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: " + what + " in " + sys.argv[1])
need(d["ok"] is True, "ok is not true")
for k in ("lost", "duplicates", "out_of_order", "corrupt", "disconnects"):
    need(d[k] == 0, k + " = " + str(d[k]))
need(d["errors"]["total"] == 0, "errors reported")
need(d["clients"] == 40 and d["rooms"] == 4, "wrong profile")
# 40 clients x 5 rps x 3 s, give or take the pacing at the window edges.
need(540 <= d["sent"] <= 660, "sent = %d, expected about 600" % d["sent"])
need(d["expected_deliveries"] == d["sent"] * 10, "expected_deliveries is not sent x 10")
need(d["delivered"] == d["expected_deliveries"], "delivered != expected_deliveries")
need(d["acked"] == d["sent"], "not every sender saw its own message")
need(d["latency_us"]["count"] == d["delivered"], "latency count != delivered")
need(len(d["intervals"]) == 3, "expected 3 interval rows")
need(sum(r["delivered"] for r in d["intervals"]) == d["delivered"], "interval rows do not add up")
print("load.json: sent %d, delivered %d of %d, p99 %.0f us" % (d["sent"], d["delivered"], d["expected_deliveries"], d["latency_us"]["p99"]))
PY
grep -q "result      PASS" "$work/load.log" || fail "summary does not say PASS"

kill -TERM "$server_pid"
for _ in $(seq 100); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    rc=0
    wait "$server_pid" || rc=$?
    server_pid=
    [ "$rc" -eq 0 ] || fail "server exited with $rc on SIGTERM"
    echo "PASS: strix-chat-load verified a clean run"
    exit 0
  fi
  sleep 0.1
done
fail "server ignored SIGTERM for 10 s"
