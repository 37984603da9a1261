#!/usr/bin/env bash
# ctest driver of scripts/bench-zmq.sh: one run of every configuration at tiny counts (pyzmq's
# venvs are the pyzmq suite's, built by scripts/pyzmq-venv.sh on first use: PyPI).
#   bench_zmq_test.sh <build_dir> <work_dir> <strix prefix: /usr for libzmq against itself>
# Passes when the driver exits 0, every run of both families (and of the control family and the
# cross-library pairs) is in runs.jsonl with the count asked for and, once passed, a figure (a
# libzmq-only run may fail once if its rerun passes: libzmq's remote_thr loses its last messages
# over ipc now and then; a run of strix's library may not fail), the strix family loaded the
# prefix's library, and zmq.md has its tables with a ratio in every row. Then a run killed by
# ZMQ_TIMEOUT must make the driver exit 1 and the report list it as failed. Exits 77 (skipped)
# when libzmq's source package cannot be fetched.
# The perf programs are built into <build_dir>/bench/zmq-perf (the cache make bench-zmq uses).
# shellcheck source=../test_lib.sh
. "$(dirname "$0")/../test_lib.sh"
build=${1:?usage: bench_zmq_test.sh <build_dir> <work_dir> <strix prefix>}
work=${2:?usage: bench_zmq_test.sh <build_dir> <work_dir> <strix prefix>}
prefix=${3:?usage: bench_zmq_test.sh <build_dir> <work_dir> <strix prefix>}
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
[ -e "$prefix/lib/libzmq.so.5" ] || [ "$prefix" = /usr ] || fail "$prefix/lib/libzmq.so.5 is missing (build strix_zmq)"

export ZMQ_OUT=$work ZMQ_STRIX_PREFIX=$prefix ZMQ_RUNS=1 ZMQ_SIZES="64 65536"
export ZMQ_SUITES="thr lat rtt cross control py" ZMQ_PY_COUNT=20000 ZMQ_PY_ROUNDTRIPS=300
export ZMQ_COUNT_64=20000 ZMQ_COUNT_65536=500 ZMQ_INPROC_COUNT_64=20000 ZMQ_INPROC_COUNT_65536=500
export ZMQ_ROUNDTRIPS=300 ZMQ_INPROC_ROUNDTRIPS=300 ZMQ_TIMEOUT=30
rc=0
"$root/scripts/bench-zmq.sh" "$build" >"$work/driver.log" 2>&1 || rc=$?
if [ "$rc" = 77 ]; then
  tail -n 1 "$work/driver.log"
  echo "SKIP: libzmq's source package could not be fetched"
  exit 77
fi
[ "$rc" = 0 ] || { cat "$work/driver.log" >&2; fail "bench-zmq.sh exited $rc"; }

# thr, lat, rtt: 3 transports x 2 sizes x 2 families; control: 4; cross: 2 suites x 2 directions.
python3 - "$work/zmq-runs" "$prefix" <<'PY' || fail "runs.jsonl does not hold the runs asked for"
import json, os, sys
runs, prefix = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(runs, "meta.json")))
rows = [json.loads(l) for l in open(os.path.join(runs, "runs.jsonl")) if l.strip()]
want = {(s, t, z, f) for s in ("thr", "lat", "rtt") for t in ("tcp", "ipc", "inproc") for z in (64, 65536)
        for f in ("libzmq", "strix")}
want |= {("thr", t, 64, "control") for t in ("tcp", "ipc", "inproc")} | {("rtt", "tcp", 64, "control")}
want |= {(s, "tcp", 64, f) for s in ("cross-thr", "cross-lat") for f in ("strix->libzmq", "libzmq->strix")}
want |= {(s, "tcp", 64, f) for s in ("py-thr", "py-lat") for f in ("libzmq", "strix")}
# pyzmq's venvs need PyPI: without it (pyzmq-venv.sh's 77) those runs are "not built".
no_pypi = any("exited 77" in m for m in meta["missing"])
got = {(r["suite"], r["transport"], r["size"], r["family"]) for r in rows}
bad = [f"missing {w}" for w in sorted(want - got)] + [f"unexpected {g}" for g in sorted(got - want)]
last = {}
for r in rows:
    key = (r["suite"], r["transport"], r["size"], r["family"])
    last[key] = r
    metric = "msg_s" if "thr" in r["suite"] else ("p50_us" if r["suite"] in ("rtt", "py-lat") else "avg_us")
    if r["status"] == "not_built" and r["suite"].startswith("py-") and no_pypi:
        continue
    if r["status"] == "ok" and not r.get(metric):
        bad.append(f"{key}: ok without {metric}")
    # libzmq's remote_thr loses its last messages over ipc now and then, so a libzmq run may fail
    # once when its rerun passes; strix's library may not.
    if r["status"] != "ok" and (r["rerun"] or ("strix" in r["family"] and not meta["test_mode"])):
        bad.append(f"{key}: {r['status']} {r['why']}{' (rerun)' if r['rerun'] else ''}")
    want_count = {"thr": 20000 if r["size"] == 64 else 500, "cross-thr": 20000, "py-thr": 20000}.get(r["suite"], 300)
    if r["count"] != want_count:
        bad.append(f"{key}: count {r['count']}, expected {want_count}")
lib = os.path.realpath(os.path.join(prefix, "lib/libzmq.so.5")) if prefix != "/usr" else meta["libzmq_lib"]
if meta["strix_lib"] != lib:
    bad.append(f"strix family loaded {meta['strix_lib']}, not {lib}")
if meta["test_mode"] != (prefix == "/usr"):
    bad.append(f"test_mode is {meta['test_mode']}")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY

md=$work/zmq.md
for h in "## Summary: targets" "## Throughput, PUSH/PULL (msg/s)" "## Average latency as perf/remote_lat prints it" \
  "## Round trip, REQ/REP, p50" "## Cross-library pairs, tcp, 64 B" "## Method check: libzmq against itself" \
  "## pyzmq on each library, tcp, 64 B"; do
  expect_text "$md" "$h"
done
# Every family row of the tables has a ratio: "| tcp | 64 B | program | libzmq | strix | **1.02x** |".
rows=$(grep -cE '^\| (tcp|ipc|inproc) \| (64 B|64 KB) \| .* \| \*\*[0-9]+\.[0-9]{2}x\*\* \|$' "$md" || true)
[ "$rows" = 24 ] || { cat "$md" >&2; fail "zmq.md has $rows table rows with a ratio, expected 24 (thr, lat, rtt p50, p99)"; }
expect_line "$md" '^Interop: 4 of 4 cross-library runs passed'
if [ "$prefix" = /usr ]; then expect_text "$md" "**Method check:** both families loaded the same library"; fi

# A run killed by its timeout fails the driver, and the report says why.
rc=0
ZMQ_OUT=$work/killed ZMQ_RERUNS=0 ZMQ_SUITES=thr ZMQ_TRANSPORTS=inproc ZMQ_SIZES=64 ZMQ_INPROC_COUNT_64=2000000000 ZMQ_TIMEOUT=1 \
  "$root/scripts/bench-zmq.sh" "$build" >"$work/killed.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$work/killed.log" >&2; fail "bench-zmq.sh exited $rc after killed runs, not 1"; }
expect_text "$work/killed/zmq.md" "## Failed runs (2)"
expect_text "$work/killed/zmq.md" "inproc_thr killed after 1 s (ZMQ_TIMEOUT)"
echo "bench-zmq smoke test passed ($(wc -l <"$work/zmq-runs/runs.jsonl") runs)"
