#!/usr/bin/env bash
# ctest driver for strix-platform-probe: a short run (0.3 s of hiccups, 0.5 s per transport, 20
# connections, 300 connects) must exit 0 and write JSON in which every byte sent arrived, both
# transports moved messages, the per-CPU hiccup rows cover every usable CPU, and each connect
# measurement made and served all 300. A bad option must exit 2.
set -euo pipefail
probe=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
"$probe" --hiccup-seconds 0.3 --segment-seconds 0.5 --connections 20 --size 100 --connects 300 --json "$work/p.json" | tee "$work/p.md"
grep -q "| tcp |" "$work/p.md"
grep -q "| unix |" "$work/p.md"
python3 - "$work/p.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
def need(c, what):
    if not c:
        sys.exit("FAIL: " + what)
need(d["ok"] is True, "ok is not true")
need(len(d["hiccups"]) == d["cpus"] == len(os.sched_getaffinity(0)), "one hiccup row per usable CPU")
for h in d["hiccups"]:
    need(0 <= h["lost_pct"] <= 100, "lost_pct out of range")
    need(h["over_50us"] >= h["over_200us"] >= h["over_1ms"] >= h["over_5ms"], "gap counts not nested")
need([s["transport"] for s in d["segments"]] == ["tcp", "unix"], "transports")
for s in d["segments"]:
    need(s["ok"] is True, s["transport"] + " not ok")
    need(s["sends"] > 20, s["transport"] + ": too few sends")
    need(s["bytes_sent"] == s["sends"] * 100, s["transport"] + ": bytes_sent != sends x size")
    need(s["bytes_read"] == s["bytes_sent"], s["transport"] + ": bytes lost")
    need(1 <= s["reads"] <= s["sends"], s["transport"] + ": reads out of range")
need([c["rounds"] for c in d["connects"]] == [0, 1, 2], "connect rows")
for c in d["connects"]:
    need(c["ok"] is True, "connects with %d round trips not ok" % c["rounds"])
    need(c["connections"] == c["accepted"] == 300, "connects with %d round trips: counts" % c["rounds"])
    need(c["connections_per_s"] > 0 and c["connector_cpu_s"] > 0, "connects: no rate or CPU")
print("platform probe: ok")
PY
rc=0
"$probe" --connections 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: --connections 0 exited $rc, expected 2"; exit 1; }
rc=0
"$probe" --in-flight 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: --in-flight 0 exited $rc, expected 2"; exit 1; }
echo "PASS: strix-platform-probe"
