#!/usr/bin/env bash
# ctest driver for bench-link's curve suite end to end, at small counts:
#   curve_suite_test.sh <bin dir> <scripts dir> <work dir>
# Runs `RUNS=2 LINK_SUITES=curve scripts/bench-link.sh` on a build directory whose bin/ is this
# build's, then checks runs.jsonl (12 runs, strix and libzmq alternating, every one passed with
# its figures and the command asked for) and link.md (the CURVE section's tables and both target
# rows). Then again with strix-link-curve-lat left out of bin/: its runs must be recorded as not
# built for both families (the tool measures both) while the throughput runs still pass.
# shellcheck source=../../test_lib.sh
. "$(dirname "$0")/../../test_lib.sh"
bin=$(cd "$1" && pwd) scripts=$2 work=$3
rm -rf "$work"
mkdir -p "$work/full" "$work/partial/bin"

ln -s "$bin" "$work/full/bin"
rc=0
RUNS=2 LINK_SUITES=curve LINK_CURVE_COUNT_64=5000 LINK_CURVE_COUNT_1024=2000 LINK_ROUNDTRIPS=200 \
  "$scripts/bench-link.sh" "$work/full" >"$work/full.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/full.out" >&2; fail "bench-link.sh (curve suite) exited $rc"; }

python3 - "$work/full/bench/link-runs" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1] + "/runs.jsonl") if l.strip()]
meta = json.load(open(sys.argv[1] + "/meta.json"))
def fail(why):
    sys.exit(f"FAIL: {why}")
if meta["curve_counts"] != {"64": 5000, "1024": 2000} or meta["suites"] != "curve":
    fail(f"meta.json: {meta}")
want = []
for rep in (1, 2):
    for suite, size, cnt in (("curve-thr", 64, 5000), ("curve-thr", 1024, 2000), ("curve-lat", 64, 200)):
        for fam in ("strix", "zmq"):
            want.append((suite, size, cnt, fam, rep))
got = [(r["suite"], r["size"], r["count"], r["family"], r["run"]) for r in runs]
if got != want:
    fail(f"runs.jsonl has runs {got}, expected {want}")
for r in runs:
    tool = "strix-link-" + r["suite"]
    if r["status"] != "ok" or r["transport"] != "tcp":
        fail(f"run {r}")
    if r["command"] != f"{tool} {r['family']} {r['size']} {r['count']}":
        fail(f"command {r['command']!r}")
    metrics = ("msg_s", "mbit_s") if r["suite"] == "curve-thr" else ("avg_us", "p50_us", "p99_us")
    for m in metrics:
        if not isinstance(r[m], (int, float)) or r[m] <= 0:
            fail(f"{m} of {r}")
PY

md=$work/full/bench/link.md
expect_text "$md" "## CURVE (tcp)"
expect_text "$md" "strix-link-curve-thr L 64 5000   strix-link-curve-thr L 1024 2000"
expect_text "$md" "| tcp | **strix/libzmq** |"
expect_text "$md" "| tcp | **strix/libzmq (lower is better)** |"
grep -Eq '^\| CURVE 64 B throughput, tcp \| [0-9,]+ \| [0-9,]+ \| [0-9.]+x \| >= 1.5x \| (met|NOT met) \|$' "$md" ||
  { cat "$md" >&2; fail "link.md lacks the CURVE throughput target row"; }
grep -Eq '^\| CURVE p50 round trip 64 B, tcp \| [0-9.,]+ \| [0-9.,]+ \| [0-9.]+x \| \(no target\) \| \(no target\) \|$' "$md" ||
  { cat "$md" >&2; fail "link.md lacks the CURVE round-trip row"; }
expect_text "$md" "All runs passed."

# Without strix-link-curve-lat.
for f in "$bin"/*; do
  [ "$(basename "$f")" = strix-link-curve-lat ] || ln -s "$f" "$work/partial/bin/"
done
rc=0
RUNS=1 LINK_SUITES=curve LINK_CURVE_COUNT_64=5000 LINK_CURVE_COUNT_1024=2000 LINK_ROUNDTRIPS=200 \
  "$scripts/bench-link.sh" "$work/partial" >"$work/partial.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/partial.out" >&2; fail "bench-link.sh without strix-link-curve-lat exited $rc"; }
python3 - "$work/partial/bench/link-runs/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
st = [(r["suite"], r["family"], r["status"]) for r in runs]
want = [(s, f, "ok" if s == "curve-thr" else "not_built")
        for s in ("curve-thr", "curve-thr", "curve-lat") for f in ("strix", "zmq")]
if st != want:
    sys.exit(f"FAIL: without strix-link-curve-lat: {st}, expected {want}")
PY
expect_text "$work/partial/bench/link.md" "| tcp | strix | not built | not built |"
echo "curve suite: all checks passed"
