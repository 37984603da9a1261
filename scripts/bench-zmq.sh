#!/usr/bin/env bash
# strix's libzmq.so.5 against Debian's libzmq, measured with libzmq's own perf programs built
# twice, once against each library (scripts/zmq-perf-build.sh), run side by side over loopback.
#
#   scripts/bench-zmq.sh <build_dir>
#
# Suites (ZMQ_SUITES, default all of "thr lat rtt cross control py"):
#   thr      perf/local_thr + remote_thr (tcp, ipc: two processes) and perf/inproc_thr (one
#            process, two threads): PUSH/PULL throughput at each of ZMQ_SIZES
#   lat      perf/local_lat + remote_lat and perf/inproc_lat: REQ/REP, "average latency" as the
#            programs print it (the mean round trip over 2)
#   rtt      bench/zmq_abi/zmq_rtt (our REQ client, built twice too) against perf/local_lat of the
#            same build (inproc: its own REP thread): p50 and p99 of the round trips, each timed alone
#   cross    tcp, 64 B: one library's sender against the other's receiver, both ways (remote_thr ->
#            local_thr for throughput, remote_lat -> local_lat for latency): interop under load
#   control  the libzmq build measured a second time as its own family ("libzmq again": thr 64 B over
#            tcp, ipc, inproc and rtt 64 B over tcp): libzmq / libzmq ratios, the method's noise
#   py       pyzmq built against each library (scripts/pyzmq-venv.sh): bench/zmq_abi/pyzmq_thr.py
#            PUSH/PULL and pyzmq_lat.py REQ/REP, 64 B over tcp
# For every repetition and configuration the families run in turn, the order rotating with the
# repetition (libzmq, strix; then strix, libzmq; ...), so drift on the shared machine hits both
# alike. A two-process run starts the receiver (bounded by timeout), waits until its tcp port
# listens or its ipc socket exists, runs the sender, then checks both exit statuses and the
# count the printing side reports. One JSON line per run goes to <out>/zmq-runs/runs.jsonl; a run
# that fails is recorded with why, made once more, and the benchmark goes on. Then
# scripts/zmq_report.py writes <out>/zmq.md. Exits 1 at the end when a rerun failed too (after
# writing the report).
#
# Environment:
#   ZMQ_RUNS (5)             runs per configuration and family
#   ZMQ_SIZES ("64 1024 65536")  message sizes of thr, lat and rtt
#   ZMQ_TRANSPORTS ("tcp ipc inproc")  transports of thr, lat, rtt and control
#   ZMQ_COUNT_<size>         messages per tcp/ipc throughput run: 64: 3000000, 1024: 1000000,
#                            65536: 30000 (about 1 s each for libzmq on a 2-core machine)
#   ZMQ_INPROC_COUNT_<size>  the same for inproc: 64 and 1024: 5000000, 65536: 1000000
#   ZMQ_ROUNDTRIPS (10000), ZMQ_INPROC_ROUNDTRIPS (50000)   round trips per lat and rtt run
#   ZMQ_PY_COUNT (1000000), ZMQ_PY_ROUNDTRIPS (10000)        the py suite's
#   ZMQ_TIMEOUT (60)         seconds any one process may run before it is killed (run failed)
#   ZMQ_GRACE (5)            seconds a receiver may still run once its sender has exited (then
#                            killed: run failed, its last messages lost)
#   ZMQ_RERUNS (1)           0: a failed run is not made again. 1: it is made once more; both are
#                            recorded, and only a failed rerun fails the benchmark
#   PIN (1)                  1: receiver on CPU 0, sender on CPU 1 (taskset); inproc runs are one
#                            process and never pinned. 0: both processes share the cores as the
#                            scheduler places them. Pinned is the default because on a 2-vCPU
#                            machine the placement decides more than the library (the figures:
#                            docs/benchmarks.md, the bench-zmq section)
#   ZMQ_LIBZMQ_PREFIX (/usr), ZMQ_STRIX_PREFIX (<build_dir>/zmq)   the two libraries. With
#                            ZMQ_STRIX_PREFIX=/usr both families are Debian's libzmq (a check of
#                            the method: every ratio should be near 1.0); the report says so
#   ZMQ_OUT (<build_dir>/bench)         where zmq.md and zmq-runs/ go
#   ZMQ_CACHE (<build_dir>/bench/zmq-perf)  the perf programs, a folder per prefix (pyzmq's venvs:
#                            the pyzmq suite's in <build_dir>/zmq-suite/ for /usr and <build_dir>/zmq,
#                            this cache for other prefixes)
# A strix prefix without lib/libzmq.so.5 (strix_zmq not built) leaves the strix runs "not built";
# libzmq is measured alone. So does a py suite without scripts/pyzmq-venv.sh or a venv it can't build.
set -euo pipefail

build=${1:?usage: scripts/bench-zmq.sh <build_dir>}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${ZMQ_OUT:-$build/bench}
cache=${ZMQ_CACHE:-$build/bench/zmq-perf}
runs=$out/zmq-runs
jsonl=$runs/runs.jsonl
reps=${ZMQ_RUNS:-5}
pin=${PIN:-1}
limit=${ZMQ_TIMEOUT:-60}
grace=${ZMQ_GRACE:-5}
reruns=${ZMQ_RERUNS:-1}
n_lost=0
roundtrips=${ZMQ_ROUNDTRIPS:-10000}
inproc_roundtrips=${ZMQ_INPROC_ROUNDTRIPS:-50000}
py_count=${ZMQ_PY_COUNT:-1000000}
py_roundtrips=${ZMQ_PY_ROUNDTRIPS:-10000}
libzmq_prefix=${ZMQ_LIBZMQ_PREFIX:-/usr}
strix_prefix=${ZMQ_STRIX_PREFIX:-$build/zmq}
read -r -a sizes <<<"${ZMQ_SIZES:-64 1024 65536}"
read -r -a suites <<<"${ZMQ_SUITES:-thr lat rtt cross control py}"
read -r -a transports <<<"${ZMQ_TRANSPORTS:-tcp ipc inproc}"
declare -A count=([64]=3000000 [1024]=1000000 [65536]=30000)
declare -A inproc_count=([64]=5000000 [1024]=5000000 [65536]=1000000)
for s in "${sizes[@]}"; do
  v=ZMQ_COUNT_$s; count[$s]=${!v:-${count[$s]:-100000}}
  v=ZMQ_INPROC_COUNT_$s; inproc_count[$s]=${!v:-${inproc_count[$s]:-100000}}
done

die() { echo "bench-zmq: FAILED: $*" >&2; exit 1; }
# shellcheck source=bench-zmq-lib.sh
. "$here/bench-zmq-lib.sh"

for s in "${suites[@]}"; do
  case $s in thr|lat|rtt|cross|control|py) ;; *) die "ZMQ_SUITES: unknown suite '$s'" ;; esac
done
for t in "${transports[@]}"; do
  case $t in tcp|ipc|inproc) ;; *) die "ZMQ_TRANSPORTS: unknown transport '$t'" ;; esac
done
has_suite() { [[ " ${suites[*]} " == *" $1 "* ]]; }
pin_recv=() pin_send=()
if [ "$pin" = 1 ] && [ "$(nproc)" -lt 2 ]; then
  echo "bench-zmq: note: one CPU, so nothing is pinned (PIN=0)"
  pin=0
fi
if [ "$pin" = 1 ]; then
  command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
  # The first two CPUs this script may use.
  read -r first second <<<"$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1])')"
  pin_recv=(taskset -c "$first") pin_send=(taskset -c "$second")
fi
# Every program loads the library it was linked to (RPATH; pyzmq: RUNPATH, and each run checks
# what it mapped). Nothing inherited may swap them.
unset LD_LIBRARY_PATH LD_PRELOAD

# The perf programs, built once per library (cached).
declare -A bin=() lib=() py=()
# cache_dir <prefix>: the prefix's folder in the cache, one per prefix so that runs against
# different prefixes (two smoke tests at once) never rebuild each other's programs.
cache_dir() {
  local p
  p=$(cd "$1" 2>/dev/null && pwd) || die "no such prefix: $1"
  echo "$cache/$(basename "$p")-$(printf '%s' "$p" | sha256sum | cut -c1-8)"
}
# build_perf <prefix> <dir>: zmq-perf-build.sh; its 77 (libzmq's source out of reach) passes through.
build_perf() {
  local rc=0
  "$here/zmq-perf-build.sh" "$1" "$2" >/dev/null || rc=$?
  [ "$rc" = 77 ] && exit 77
  [ "$rc" = 0 ] || die "building the perf programs against $1"
}
dir=$(cache_dir "$libzmq_prefix")
build_perf "$libzmq_prefix" "$dir"
bin[libzmq]=$dir/bin lib[libzmq]=$(cat "$dir/library")
bin[control]=${bin[libzmq]} lib[control]=${lib[libzmq]}
missing=()
has_libzmq() {  # <prefix>: where zmq-perf-build.sh looks for libzmq.so.5
  local d
  for d in "$1/lib" "$1/lib/$(gcc -print-multiarch 2>/dev/null || echo none)" "$1/lib64"; do
    [ -e "$d/libzmq.so.5" ] && return 0
  done
  return 1
}
if has_libzmq "$strix_prefix"; then
  dir=$(cache_dir "$strix_prefix")
  build_perf "$strix_prefix" "$dir"
  bin[strix]=$dir/bin lib[strix]=$(cat "$dir/library")
else
  missing+=("strix's libzmq ($strix_prefix/lib/libzmq.so.5: build the strix_zmq target)")
fi
if has_suite py; then
  setup_pyzmq libzmq "$libzmq_prefix"
  [ -n "${bin[strix]:-}" ] && setup_pyzmq strix "$strix_prefix"
fi
test_mode=false
[ -n "${lib[strix]:-}" ] && [ "${lib[strix]}" = "${lib[libzmq]}" ] && test_mode=true

rm -rf "$runs"
mkdir -p "$runs"
: >"$jsonl"
tmp=$(mktemp -d /tmp/strix-zmq-bench.XXXXXX)  # ipc sockets: short paths (sun_path is 108 bytes)
recv_pid=
cleanup() {
  if [ -n "$recv_pid" ]; then kill -9 "$recv_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The configurations in the order they run within a repetition: "suite transport size families".
configs=()
pair_families="libzmq strix"
for s in "${suites[@]}"; do
  case $s in
    thr|lat|rtt)
      for tr in "${transports[@]}"; do for sz in "${sizes[@]}"; do configs+=("$s $tr $sz $pair_families"); done; done ;;
    cross) configs+=("cross-thr tcp 64 strix->libzmq libzmq->strix" "cross-lat tcp 64 strix->libzmq libzmq->strix") ;;
    control)
      for tr in "${transports[@]}"; do configs+=("thr $tr 64 control"); done
      [[ " ${transports[*]} " == *" tcp "* ]] && configs+=("rtt tcp 64 control") ;;
    py) configs+=("py-thr tcp 64 $pair_families" "py-lat tcp 64 $pair_families") ;;
  esac
done
# control rows join their configuration's libzmq and strix runs, so the three families alternate.
merged=()
for c in "${configs[@]}"; do
  read -r s tr sz fams <<<"$c"
  if [ "$fams" = control ]; then
    found=0
    for i in "${!merged[@]}"; do
      read -r ms mtr msz _ <<<"${merged[$i]}"
      if [ "$ms $mtr $msz" = "$s $tr $sz" ]; then merged[i]="${merged[$i]} control"; found=1; fi
    done
    [ "$found" = 1 ] || merged+=("$c")
  else
    merged+=("$c")
  fi
done
configs=("${merged[@]}")

write_meta
echo "bench-zmq: ${#configs[@]} configurations x $reps runs; libzmq = ${lib[libzmq]}, strix = ${lib[strix]:-not built};" \
  "pinned: $([ "$pin" = 1 ] && echo 'receiver CPU 0, sender CPU 1' || echo no); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$test_mode" = true ] && echo "bench-zmq: note: both families load ${lib[libzmq]} (a check of the method)"
for rep in $(seq "$reps"); do
  for c in "${configs[@]}"; do
    read -r suite transport size fams <<<"$c"
    read -r -a fam <<<"$fams"
    # Rotate the order with the repetition.
    n=${#fam[@]}
    for k in $(seq 0 $((n - 1))); do
      f=${fam[$(((k + rep - 1) % n))]}
      one "$suite" "$transport" "$size" "$f" "$rep"
      # A failed run stays in the report with why; it is made once more (ZMQ_RERUNS), and the
      # benchmark fails when the rerun fails too.
      if [ "$last_status" = failed ]; then
        if [ "$reruns" = 1 ]; then
          rerun=true
          one "$suite" "$transport" "$size" "$f" "$rep"
          rerun=false
        fi
        [ "$last_status" = failed ] && n_lost=$((n_lost + 1))
      fi
    done
  done
done

python3 "$here/zmq_report.py" --runs "$runs" --out "$out"
if [ "$n_failed" -gt 0 ]; then
  echo "bench-zmq: $n_failed of $n_runs runs failed (recorded in $out/zmq.md, logs in $runs);" \
    "$n_lost without a passing rerun" >&2
fi
[ "$n_lost" = 0 ] || exit 1
