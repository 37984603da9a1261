#!/usr/bin/env bash
# ctest driver (cluster.load_reconnect): strix-chat-load --targets over two strix-chat-server
# cluster nodes (one redis-server, one PostgreSQL, all started here on free ports and stopped at
# the end) with --reconnect-share 0.5: 40 clients in 4 rooms (each room's members on both nodes)
# send 5 messages per second each for 3 s; 20 of them reset their connection once, reconnect to
# the other node with their resume token and resume. The tool must exit 0 and its JSON must show
# the exact verdict: nothing lost, duplicated, reordered, corrupt or missing after the refill,
# every dropped client back and resumed, messages actually refilled.
#   cluster_load_test.sh <strix-chat-load> <strix-chat-server> <work dir>
set -euo pipefail

load=$1 ce_server=$2 ce_work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$ce_work"
mkdir -p "$ce_work"
. "$here/../../../scripts/cluster_env.sh"
trap ce_cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

ce_start_redis || fail "redis-server did not start"
ce_start_pg || fail "PostgreSQL did not start"
db=$(ce_new_db chat) || fail "createdb failed"
pa=$(ce_free_port)
pb=$(ce_free_port)
common=(--db "$db" --password-cost fast --metrics-port 0 --shards 1 --io epoll
        --cluster "redis://127.0.0.1:$ce_redis_port")
ce_start_node na "$pa" "${common[@]}" --node-id 1 >"$ce_work/node1.log" 2>&1 || { cat "$ce_work/node1.log" >&2; fail "node 1"; }
ce_start_node nb "$pb" "${common[@]}" --node-id 2 >"$ce_work/node2.log" 2>&1 || { cat "$ce_work/node2.log" >&2; fail "node 2"; }

rc=0
timeout 60 "$load" --targets "127.0.0.1:$pa,127.0.0.1:$pb" --clients 40 --rooms 4 --rps 5 --duration 3 \
  --warmup 1 --report-every 1 --reconnect-share 0.5 --json "$ce_work/load.json" >"$ce_work/load.log" 2>&1 || rc=$?
cat "$ce_work/load.log"
[ "$rc" -eq 0 ] || fail "strix-chat-load exited $rc"
python3 - "$ce_work/load.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["run"] if "run" in j else j
rc = r["reconnect"]
problems = []
def want(name, got, expected):
    if got != expected:
        problems.append(f"{name} = {got}, expected {expected}")
for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt", "unexpected_frames", "disconnects",
          "excess_deliveries"):
    want(k, r[k], 0)
want("errors", r["errors"]["total"], 0)
want("verified", r["verified"], True)
want("reconnect.drops", rc["drops"], 20)           # floor(0.5 x 40)
want("reconnect.reconnects", rc["reconnects"], 20)
want("reconnect.resumes", rc["resumes"], 20)        # every one with nothing missing
want("reconnect.refill_missing", rc["refill_missing"], 0)
want("reconnect.reconnect_failures", rc["reconnect_failures"], 0)
want("reconnect.lost_connections", rc["lost_connections"], 0)
if rc["refilled"] + rc["history_refilled"] == 0:
    problems.append("no message was refilled: the drops missed nothing, so resume went untested")
if r["delivered"] == 0 or r["sent"] == 0:
    problems.append("nothing sent or delivered")
if problems:
    print("FAIL: " + "; ".join(problems)); sys.exit(1)
print(f"ok: {r['sent']} sent, {r['delivered']} delivered, {rc['drops']} drops, {rc['refilled']} refilled by resume, "
      f"{rc['resume_gaps']} gap answers, {rc['history_refilled']} refilled by history")
PY
