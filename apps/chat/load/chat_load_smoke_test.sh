#!/usr/bin/env bash
# ctest driver: strix-chat-load against a fresh strix-chat-server (new SQLite database, cheap
# password hashes), which must stop cleanly on SIGTERM afterwards.
#   chat_load_smoke_test.sh clean|unix|ws|limits|targets|faults|conv|conv-faults <strix-chat-load> <strix-chat-server> <work dir>
# clean  (chat.load_smoke): 40 clients in 4 rooms send 5 messages per second each for 3 s. The load
#        tool must exit 0 and its JSON must show every delivery verified: lost = duplicates =
#        out_of_order = corrupt = 0, delivered = expected = sent x 10 (the room size).
# unix   (chat.load_smoke_unix): the same run over the server's --unix socket instead of TCP.
# ws     (chat.load_smoke_ws): the same run over the server's --ws-port (strix-chat-load --ws).
# limits (chat.load_server_limits): the clean run against a server that admits 2 logins at a time
#        and 12 connections per address: the tool must retry the logins it is told to retry later
#        (and say how many) and spread its 40 clients over 4 loopback source addresses.
# targets (chat.load_targets): the clean run with --targets naming the server directly and
#        through fault_proxy.py as a plain forwarder (its fault armed after 10^9 messages): two
#        "nodes" of one room space. Each room's members must be spread over both (20 clients each)
#        and every delivery verified.
# faults (chat.load_detects_faults): four runs at once, each through fault_proxy.py, which drops,
#        duplicates, reorders or corrupts one chat_msg: each run must exit 1 and count exactly that.
# conv   (chat.load_conversations): the conversations workload: 200 clients logged in with protocol
#        version 2, each in 3 group rooms of 10 members and 2 direct pairs, 20 % of 2 messages per
#        second each sent direct, for 3 s, against a server that allows 2 room changes at once (so
#        the tool's "retry later" path runs). Every delivery verified per conversation: nothing
#        lost, duplicated, out of order or corrupt, group and direct messages both sent and each
#        delivered to exactly its room's members.
# conv-faults (chat.load_conversations_faults): the conversations workload through fault_proxy.py
#        dropping, duplicating or corrupting one chat_msg: each run must exit 1 and count exactly that.
set -euo pipefail

mode=$1 load=$2 server=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
# fail, free_port and the kill-on-exit list (pids) come from the bench tools' test helpers.
# shellcheck source=../../../bench/test_lib.sh
source "$here/../../../bench/test_lib.sh"
server_pid=

port=$(free_port)
sock=$work/chat.sock
server_extra=()
load_extra=()
wsport=
if [ "$mode" = ws ]; then
  wsport=$(free_port)
  server_extra=(--ws-port "$wsport")
fi
if [ "$mode" = limits ]; then
  server_extra=(--login-queue 2 --max-connections-per-address 12)
  load_extra=(--clients-per-source 10)
fi
if [ "$mode" = conv ]; then
  # A client sends its room requests one at a time, so a third within one refill (1/rate) of the
  # first is refused and retried. At 50 a second (20 ms) a slow server (clang's ASan build, once)
  # answered too late for any refusal; at 2 (500 ms) the refusals no longer hang on its speed.
  server_extra=(--room-burst 2 --room-rate 2)
fi
"$server" --db "sqlite:$work/chat.db" --password-cost fast --port "$port" --unix "$sock" --metrics-port 0 \
  "${server_extra[@]}" >"$work/server.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
up=0
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "server exited at start"; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
[ "$up" = 1 ] || fail "server did not accept on 127.0.0.1:$port within 10 s"

if [ "$mode" = faults ] || [ "$mode" = conv-faults ]; then
  faults=(drop dup swap corrupt)
  profile=(--clients 12 --rooms 2 --rps 20)
  if [ "$mode" = conv-faults ]; then
    # A swap across two conversations breaks no order: drop, dup and corrupt only. 24 opening
    # messages go first (12 pairs, to both sides); the 100th chat_msg is one of the run.
    faults=(drop dup corrupt)
    profile=(--clients 12 --rooms-per-client 2 --room-size 4 --dm-share 0.5 --rps 20)
  fi
  loads=()
  for f in "${faults[@]}"; do
    pport=$(free_port)
    python3 "$here/fault_proxy.py" --listen "$pport" --server "$port" --fault "$f" --after 100 \
      >"$work/proxy-$f.log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null; then break; fi
      sleep 0.05
    done
    timeout 60 "$load" --port "$pport" "${profile[@]}" --duration 1 --warmup 0 \
      --report-every 1 --drain-timeout 1 --name-prefix "$f" --json "$work/$f.json" >"$work/$f.log" 2>&1 &
    loads+=("$!")
  done
  for k in "${!faults[@]}"; do
    f=${faults[$k]}
    rc=0
    wait "${loads[$k]}" || rc=$?
    cat "$work/$f.log"
    [ "$rc" -eq 1 ] || fail "strix-chat-load exited $rc although the proxy injected a '$f' fault"
  done
  python3 - "$work" "${faults[@]}" <<'PY'
import json, sys
work = sys.argv[1]
def load(f):
    return json.load(open("%s/%s.json" % (work, f)))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
# What each fault must show, and every other counter must stay 0.
want = {
    "drop": {"lost": 1, "gaps": 1},
    "dup": {"duplicates": 1},
    "swap": {"out_of_order": 1, "gaps": 1},
    "corrupt": {"corrupt": 1, "lost": 1},
}
for f in sys.argv[2:]:
    counts = want[f]
    d = load(f)
    need(d["ok"] is False, f + ": ok is not false")
    for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt", "disconnects"):
        need(d[k] == counts.get(k, 0), "%s: %s = %d, expected %d" % (f, k, d[k], counts.get(k, 0)))
    need(d["sent"] > 100, f + ": too little was sent for the fault to trigger")
    print("%s: detected (%s)" % (f, d["verdict"]))
PY
  grep -q "result      FAIL" "$work/dup.log" || fail "the summary of the dup run does not say FAIL"
elif [ "$mode" = conv ]; then
  rc=0
  timeout 60 "$load" --port "$port" --clients 200 --rooms-per-client 3 --room-size 10 --dm-share 0.2 \
    --dm-partners 2 --rps 2 --duration 3 --warmup 1 --report-every 1 --json "$work/load.json" \
    >"$work/load.log" 2>&1 || rc=$?
  cat "$work/load.log"
  [ "$rc" -eq 0 ] || fail "strix-chat-load (conversations) exited $rc against a correct server"
  python3 - "$work/load.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: " + what + " in " + sys.argv[1])
need(d["ok"] is True, "ok is not true")
for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt", "disconnects", "unexpected_frames",
          "excess_deliveries"):
    need(d[k] == 0, k + " = " + str(d[k]))
need(d["errors"]["total"] == 0, "errors reported")
c = d["conversations"]
need(d["clients"] == 200 and d["rooms"] == 60 and c["group_rooms"] == 60 and c["direct_pairs"] == 200,
     "wrong layout: %d clients, %d rooms, %d pairs" % (d["clients"], d["rooms"], c["direct_pairs"]))
# 200 clients x 2 rps x 3 s, give or take the pacing at the window edges; a fifth direct.
need(1080 <= d["sent"] <= 1320, "sent = %d, expected about 1200" % d["sent"])
room, direct = c["room"], c["direct"]
need(room["sent"] + direct["sent"] == d["sent"], "group + direct sends != sent")
need(0.12 * d["sent"] <= direct["sent"] <= 0.28 * d["sent"], "direct sent = %d of %d, expected about 20 %%" % (direct["sent"], d["sent"]))
# Each group message to its 10 members, each direct one to its 2, every one of them received.
need(room["expected_deliveries"] == 10 * room["sent"], "group expected != sent x 10")
need(direct["expected_deliveries"] == 2 * direct["sent"], "direct expected != sent x 2")
need(room["delivered"] == room["expected_deliveries"], "group delivered %d of %d" % (room["delivered"], room["expected_deliveries"]))
need(direct["delivered"] == direct["expected_deliveries"] > 0, "direct delivered %d of %d" % (direct["delivered"], direct["expected_deliveries"]))
need(d["delivered"] == d["expected_deliveries"], "delivered != expected_deliveries")
need(d["acked"] == d["sent"], "not every sender saw its own message")
need(room["latency_us"]["count"] == room["delivered"] and direct["latency_us"]["count"] == direct["delivered"],
     "latency counts per kind != delivered")
need(0 < direct["latency_us"]["p50"] <= direct["latency_us"]["p99"], "direct percentiles out of order")
print("load.json: %d sent (%d direct), %d delivered (%d direct), p99 group %.0f us, direct %.0f us"
      % (d["sent"], direct["sent"], d["delivered"], direct["delivered"], room["latency_us"]["p99"],
         direct["latency_us"]["p99"]))
PY
  grep -q "result      PASS" "$work/load.log" || fail "summary does not say PASS"
  retried=$(sed -n 's/.* \([0-9]*\) room requests retried after.*/\1/p' "$work/load.log")
  [ -n "$retried" ] && [ "$retried" -gt 0 ] ||
    fail "3 rooms and a direct room per client against --room-burst 2 were not retried (the tool reported '${retried:-nothing}')"
  echo "conv: $retried room requests retried after rate_limited"
else
target=(--host 127.0.0.1 --port "$port")
if [ "$mode" = targets ]; then
  pport=$(free_port)
  python3 "$here/fault_proxy.py" --listen "$pport" --server "$port" --fault drop --after 1000000000 \
    >"$work/proxy.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null; then break; fi
    sleep 0.05
  done
  target=(--targets "127.0.0.1:$port,127.0.0.1:$pport")
fi
if [ "$mode" = unix ]; then
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  target=(--unix "$sock")
fi
if [ "$mode" = ws ]; then
  target=(--host 127.0.0.1 --port "$wsport" --ws)
fi
rc=0
timeout 90 "$load" "${target[@]}" --clients 40 --rooms 4 --rps 5 --duration 3 \
  --warmup 1 --report-every 1 "${load_extra[@]}" --json "$work/load.json" >"$work/load.log" 2>&1 || rc=$?
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
# The latency split at the server's timestamp: one inbound sample per message (the sender's own
# copy), one outbound per delivery; only a wall-clock step may drop a few, and each leg is shorter
# than the whole path.
ts, fs = d["latency_to_server_us"], d["latency_from_server_us"]
need(ts["count"] >= 0.99 * d["acked"] and ts["count"] <= d["acked"], "to_server count %d vs acked %d" % (ts["count"], d["acked"]))
need(fs["count"] >= 0.99 * d["delivered"] and fs["count"] <= d["delivered"], "from_server count %d vs delivered %d" % (fs["count"], d["delivered"]))
need(0 < ts["p50"] <= d["latency_us"]["max"] and 0 < fs["p50"] <= d["latency_us"]["max"], "split percentiles out of range")
# How long the load tool's threads waited for a CPU, summed over them (/proc schedstat), and the
# hypervisor's steal over all CPUs: present wherever the kernel keeps the accounts, and within
# what the wall time allows.
import glob, os
if glob.glob("/proc/self/task/*/schedstat"):
    need("load_run_queue_wait_ms_per_s" in d, "no load_run_queue_wait_ms_per_s although /proc has schedstat")
    need(0 <= d["load_run_queue_wait_ms_per_s"] <= 1000.0 * (d["threads"] + 2), "load_run_queue_wait_ms_per_s out of range")
if "steal_ms_per_s" in d:
    need(0 <= d["steal_ms_per_s"] <= 1000.0 * os.cpu_count(), "steal_ms_per_s out of range")
print("load.json: sent %d, delivered %d of %d, p99 %.0f us" % (d["sent"], d["delivered"], d["expected_deliveries"], d["latency_us"]["p99"]))
PY
grep -q "result      PASS" "$work/load.log" || fail "summary does not say PASS"
if [ "$mode" = ws ]; then
  grep -q "127.0.0.1:$wsport" "$work/load.log" || fail "the load tool did not report connecting to the WebSocket port"
fi
if [ "$mode" = unix ]; then
  grep -q "unix:$sock" "$work/load.log" || fail "the load tool did not report connecting to unix:$sock"
fi
if [ "$mode" = targets ]; then
  grep -q "127.0.0.1:$port, 127.0.0.1:$pport" "$work/load.log" || fail "the load tool did not report both targets"
  # One line per accepted connection, minus the readiness probe above.
  through=$(($(grep -c accepted "$work/proxy.log") - 1))
  [ "$through" -eq 20 ] || fail "$through clients connected through the second target, expected 20 of 40"
  echo "targets: 20 clients on each target"
fi
if [ "$mode" = limits ]; then
  retried=$(sed -n 's/.*clients logged in ([0-9.]* s, \([0-9]*\) logins retried.*/\1/p' "$work/load.log")
  [ -n "$retried" ] && [ "$retried" -gt 0 ] ||
    fail "40 logins against --login-queue 2 were not retried (the tool reported '${retried:-nothing}')"
  echo "limits: $retried logins retried after server_busy"
fi

fi

kill -TERM "$server_pid"
for _ in $(seq 100); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    rc=0
    wait "$server_pid" || rc=$?
    server_pid=
    [ "$rc" -eq 0 ] || fail "server exited with $rc on SIGTERM"
    echo "PASS: strix-chat-load ($mode)"
    exit 0
  fi
  sleep 0.1
done
fail "server ignored SIGTERM for 10 s"
