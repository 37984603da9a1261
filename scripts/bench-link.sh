#!/usr/bin/env bash
# strix::link against libzmq (ServerLink porting log, ASIO batching experiment): the strix-link-*
# perf tools and the libzmq ones (zmq-*, bench/link/zmq/) with the same command lines, side by side
# over loopback.
#
#   scripts/bench-link.sh <build_dir>
#
# Suites (LINK_SUITES, default all of "thr dr pubsub fanout lat cross blocking curve"):
#   thr     PUSH/PULL throughput at 64 B, 256 B, 1 KB, 8 KB, 64 KB over tcp, ipc (local-thr +
#           remote-thr, two processes) and inproc (inproc-thr, one process, two threads)
#   dr      DEALER -> ROUTER throughput (--pattern dealerrouter) at 64 B, 256 B and 1 KB over tcp,
#           ipc and inproc (the ASIO batching experiment's grid)
#   pubsub  XPUB -> SUB throughput (--pattern pubsub) at 64 B and 64 KB over tcp
#   fanout  one XPUB to LINK_SUBSCRIBERS (8) SUB threads at 64 B over tcp and inproc
#   lat     REQ/REP round trips at 64 B, 1 KB, 8 KB over tcp, ipc (local-lat + remote-lat) and
#           inproc (inproc-lat): p50 and p99 round trip. At 64 B a third family, "floor"
#           (wake-floor-lat: two threads of one process, pinned to two CPUs, passing the message over the transport,
#           eventfds for inproc, no library), gives the least a round trip between two sleeping
#           threads costs on this machine
#   cross   tcp, 64 B: strix sender -> libzmq receiver and back (throughput), strix REQ -> libzmq
#           REP and back (latency): interop proof, and a check of which side limits
#   blocking  both libraries called from application threads, 64 B over tcp, ipc and inproc:
#           strix's blocking_socket (strix-link-blocking-*) against zmq_send/zmq_recv
#           (zmq-blocking-*), PUSH/PULL throughput (suite bthr) and REQ/REP p50 round trip (blat)
#   curve   CURVE over tcp, strix against libzmq's CURVE, each tool running both halves in one
#           process (bench/link/curve): PUSH/PULL throughput at 64 B and 1 KB
#           (strix-link-curve-thr, suite curve-thr) and REQ/REP p50/p99 round trip at 64 B
#           (strix-link-curve-lat, suite curve-lat); the library is the tools' first argument
# For every repetition, every configuration and each family in turn (strix, libzmq, strix, ...,
# so drift on the shared machine hits both alike): start the receiver (bounded by timeout), wait
# until its tcp port listens or its ipc socket exists, run the sender (bounded too), check both
# exit statuses and the counts the tools print, and append one JSON line per run to
# <build_dir>/bench/link-runs/runs.jsonl. A run that fails is recorded as failed with why, and the
# benchmark goes on. Then scripts/link_report.py writes <build_dir>/bench/link.md and link.png.
# Exits 1 at the end when any run failed (after writing the report).
#
# Environment:
#   RUNS (5)                runs per configuration and family
#   PIN (0)                 1: receiver on CPU 0 and sender on CPU 1 (taskset); one-process runs
#                           (inproc, fan-out, curve) are never pinned. Default: not pinned, the two
#                           processes share the machine's cores with the scheduler's placement
#   LINK_COUNT_64 (2000000), LINK_COUNT_256 (1000000), LINK_COUNT_1024 (500000),
#   LINK_COUNT_8192 (100000), LINK_COUNT_65536 (20000)   messages per throughput run, by message
#                           size (about 0.5-2 s each on a 2-core machine)
#   LINK_ROUNDTRIPS (10000) round trips per latency run (the blocking family's too)
#   LINK_BLOCKING_COUNT (300000) messages per blocking-family throughput run
#   LINK_FANOUT_COUNT (300000), LINK_SUBSCRIBERS (8)
#   LINK_CURVE_COUNT_64 (300000), LINK_CURVE_COUNT_1024 (100000)   messages per CURVE throughput
#                           run (about 0.3-1 s each); CURVE round trips: LINK_ROUNDTRIPS
#   LINK_TIMEOUT (60)       seconds any one process may run before it is killed (run failed)
#   LINK_SUITES             the suites to run (see above)
#   STRIX_LINK_PREFIX (strix-link-)  binary prefix of the strix family. Test override only:
#                           STRIX_LINK_PREFIX=zmq- points the strix family at the libzmq tools to
#                           exercise the two-family logic before strix-link-* exists; the report
#                           then says in its header that both columns are libzmq. In the curve
#                           suite the strix family then runs strix-link-curve-* with "zmq".
# Binaries of the strix family that are missing are recorded as "not built" and the libzmq
# family still runs; a missing zmq-* binary stops the script (build first). The curve tools
# measure both libraries: when one is missing, both families' runs of it are "not built".
set -euo pipefail

build=${1:?usage: scripts/bench-link.sh <build_dir>}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
out=$build/bench
runs=$out/link-runs
jsonl=$runs/runs.jsonl
reps=${RUNS:-5}
pin=${PIN:-0}
strix_prefix=${STRIX_LINK_PREFIX:-strix-link-}
zmq_prefix=zmq-
limit=${LINK_TIMEOUT:-60}
roundtrips=${LINK_ROUNDTRIPS:-10000}
fanout_count=${LINK_FANOUT_COUNT:-300000}
subscribers=${LINK_SUBSCRIBERS:-8}
blocking_count=${LINK_BLOCKING_COUNT:-300000}
read -r -a suites <<<"${LINK_SUITES:-thr dr pubsub fanout lat cross blocking curve}"
declare -A count=(
  [64]=${LINK_COUNT_64:-2000000}
  [256]=${LINK_COUNT_256:-1000000}
  [1024]=${LINK_COUNT_1024:-500000}
  [8192]=${LINK_COUNT_8192:-100000}
  [65536]=${LINK_COUNT_65536:-20000}
)
declare -A curve_count=(
  [64]=${LINK_CURVE_COUNT_64:-300000}
  [1024]=${LINK_CURVE_COUNT_1024:-100000}
)
tools=(local-thr remote-thr local-lat remote-lat inproc-thr inproc-lat fanout)
# The blocking family's tools: <prefix>blocking-<tool>.
blocking_tools=(local-thr remote-thr local-lat remote-lat inproc-thr inproc-lat)
# The CURVE tools: strix-link-<tool> strix|zmq SIZE COUNT, one binary for both families.
curve_tools=(curve-thr curve-lat)
want_blocking=0 want_curve=0
for s in "${suites[@]}"; do
  [ "$s" = blocking ] && want_blocking=1
  [ "$s" = curve ] && want_curve=1
done

die() { echo "bench-link: FAILED: $*" >&2; exit 1; }

for t in "${tools[@]}"; do
  [ -x "$bin/$zmq_prefix$t" ] || die "$bin/$zmq_prefix$t is missing; build first (make build)"
done
if [ "$want_blocking" = 1 ]; then
  for t in "${blocking_tools[@]}"; do
    [ -x "$bin/${zmq_prefix}blocking-$t" ] || die "$bin/${zmq_prefix}blocking-$t is missing; build first (make build)"
  done
fi
missing=()
for t in "${tools[@]}"; do
  [ -x "$bin/$strix_prefix$t" ] || missing+=("$strix_prefix$t")
done
if [ "$want_blocking" = 1 ]; then
  for t in "${blocking_tools[@]}"; do
    [ -x "$bin/${strix_prefix}blocking-$t" ] || missing+=("${strix_prefix}blocking-$t")
  done
fi
if [ "$want_curve" = 1 ]; then
  for t in "${curve_tools[@]}"; do
    [ -x "$bin/strix-link-$t" ] || missing+=("strix-link-$t")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bench-link: note: not built: ${missing[*]}; those strix runs are recorded as 'not built'"
fi
for s in "${suites[@]}"; do
  case $s in thr|dr|pubsub|fanout|lat|cross|blocking|curve) ;; *) die "LINK_SUITES: unknown suite '$s'" ;; esac
done
pin_recv=() pin_send=()
if [ "$pin" = 1 ]; then
  command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
  [ "$(nproc)" -ge 2 ] || die "PIN=1 needs 2 CPUs, this machine has $(nproc)"
  pin_recv=(taskset -c 0) pin_send=(taskset -c 1)
fi

rm -rf "$runs"
mkdir -p "$runs"
: >"$jsonl"
tmp=$(mktemp -d /tmp/strix-link-bench.XXXXXX)  # ipc sockets: short paths (sun_path is 108 bytes)
recv_pid=
cleanup() {
  if [ -n "$recv_pid" ]; then kill -9 "$recv_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 "$here/free_port.py"
}

json_str() {  # a JSON string literal of $1 (control characters dropped)
  local s
  s=$(printf '%s' "$1" | tr -d '\000-\037')
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

elapsed() {  # <t0> <t1> (date +%s.%N): seconds between, 3 decimals
  awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}

num() {  # a JSON number, or null when $1 is empty
  if [ -n "$1" ]; then printf '%s' "$1"; else printf 'null'; fi
}

field() {  # <file> <sed regex with one group>: the group from the first matching line, or ""
  [ -f "$1" ] && sed -n "s/$2/\\1/p" "$1" | head -n 1 || true
}

have_ss=0
command -v ss >/dev/null && have_ss=1

# wait_ready <pid> <tcp|ipc> <port|path>: 0 once the endpoint is up, 1 if the process exits first
# or 10 s pass.
wait_ready() {
  local pid=$1 kind=$2 where=$3
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || return 1
    if [ "$kind" = tcp ] && [ "$have_ss" = 1 ]; then
      [ -n "$(ss -Hltn "sport = :$where" 2>/dev/null)" ] && return 0
    elif [ "$kind" = tcp ]; then
      # Without ss (iproute2): a connection that closes at once, which ZMTP peers shrug off.
      (exec 3<>"/dev/tcp/127.0.0.1/$where") 2>/dev/null && return 0
    else
      [ -S "$where" ] && return 0
    fi
    sleep 0.05
  done
  return 1
}

exit_why() {  # <what> <rc> <stderr file>: one line saying why a process failed
  local what=$1 rc=$2 err=$3
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "$what killed after ${limit} s (LINK_TIMEOUT)"
  else
    echo "$what exited $rc: $(tail -n 1 "$err" 2>/dev/null)"
  fi
}

n_runs=0 n_failed=0 seq_no=0

# record <suite> <transport> <size> <count> <family> <run> <status> <why> <wall_s> <cmd> <out>
# Appends the JSON line; figures are read from <out> (the output of the tool that prints them).
record() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 status=$7 why=$8 wall=$9
  local cmd=${10} outf=${11}
  local msg_s="" mbit_s="" avg="" p50="" p99="" deliv_s="" log=""
  if [ -n "$outf" ]; then  # the run's tag: its files are link-runs/<tag>.*
    log=$(basename "$outf" .out); log=${log%.recv}; log=${log%.send}
  fi
  if [ "$status" = ok ]; then
    msg_s=$(field "$outf" '^mean throughput: \([0-9]*\) \[msg\/s\]$')
    mbit_s=$(field "$outf" '^mean throughput: \([0-9.]*\) \[Mb\/s\]$')
    avg=$(field "$outf" '^average latency: \([0-9.]*\) \[us\]$')
    p50=$(field "$outf" '^p50 roundtrip: \([0-9.]*\) \[us\]$')
    p99=$(field "$outf" '^p99 roundtrip: \([0-9.]*\) \[us\]$')
    deliv_s=$(field "$outf" '^aggregate throughput: \([0-9]*\) \[deliveries\/s\]$')
  fi
  {
    printf '{"suite":"%s","transport":"%s","size":%s,"count":%s,"family":"%s","run":%s,' \
      "$suite" "$transport" "$size" "$cnt" "$family" "$rep"
    printf '"status":"%s","why":%s,"wall_s":%s,"command":%s,"log":"%s",' \
      "$status" "$(json_str "$why")" "$(num "$wall")" "$(json_str "$cmd")" "$log"
    printf '"msg_s":%s,"mbit_s":%s,"avg_us":%s,"p50_us":%s,"p99_us":%s,"deliveries_s":%s' \
      "$(num "$msg_s")" "$(num "$mbit_s")" "$(num "$avg")" "$(num "$p50")" "$(num "$p99")" \
      "$(num "$deliv_s")"
    [ "$suite" = fanout ] && printf ',"subscribers":%s' "$subscribers"
    printf '}\n'
  } >>"$jsonl"
  if [ "$status" = not_built ]; then return; fi
  n_runs=$((n_runs + 1))
  local shown
  case $status in
    ok)
      if [ -n "$p50" ]; then shown="p50 ${p50} us, p99 ${p99} us"
      elif [ -n "$deliv_s" ]; then shown="$(printf "%'d" "$msg_s") msg/s, $(printf "%'d" "$deliv_s") deliveries/s"
      else shown="$(printf "%'d" "$msg_s") msg/s"; fi ;;
    *) n_failed=$((n_failed + 1)); shown="FAILED: $why" ;;
  esac
  printf '  %-9s %-6s %6s B  %-11s run %s: %s\n' "$suite" "$transport" "$size" "$family" "$rep" "$shown"
}

# check_counts <out> <regex> <expected>: "" when the tool printed the expected count, else why.
check_counts() {
  local got
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || echo "printed count '${got}', expected $3"
}

# verdict <exit status> <what ran> <its stderr> <its output> <count regex> <expected count>: why
# a finished run failed (exit_why, check_counts), nothing when it passed.
verdict() {
  if [ "$1" != 0 ]; then exit_why "$2" "$1" "$3"; else check_counts "$4" "$5" "$6"; fi
}

# record_verdict <suite> <transport> <size> <count> <family> <run> <why> <t0> <t1> <command> <output>:
# record, ok when why is empty.
record_verdict() {
  record "$1" "$2" "$3" "$4" "$5" "$6" "$([ -z "$7" ] && echo ok || echo failed)" "$7" "$(elapsed "$8" "$9")" \
    "${10}" "${11}"
}

# pair <suite> <transport> <size> <count> <family label> <run> <receiver> <sender> <count regex>
#      <expected count> <extra args...>
# The two-process runs (thr, pubsub, lat, cross): receiver binds, sender connects. The printed
# figures come from the receiver for throughput and from the sender (REQ) for latency.
pair() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 recv=$7 send=$8 cre=$9
  local expect=${10}
  shift 10
  local extra=("$@")
  seq_no=$((seq_no + 1))
  local tag="${suite}_${transport}_${size}_${family/->/-to-}_r${rep}"
  local ep where kind=$transport
  if [ "$transport" = tcp ]; then
    where=$(free_port)
    ep="tcp://127.0.0.1:$where"
  else
    where="$tmp/r$seq_no.sock"
    ep="ipc://$where"
    rm -f "$where"
  fi
  local rcmd=("$bin/$recv" "$ep" "$size" "$cnt" "${extra[@]}")
  local scmd=("$bin/$send" "$ep" "$size" "$cnt" "${extra[@]}")
  local cmd="${pin_recv[*]} $recv $ep $size $cnt ${extra[*]} & ${pin_send[*]} $send $ep $size $cnt ${extra[*]}"
  cmd=$(echo "$cmd" | tr -s ' ' | sed 's/^ //; s/ $//; s/ & /  \&  /')
  local t0 t1 rrc=0 src=0 why="" printer
  t0=$(date +%s.%N)
  "${pin_recv[@]}" timeout "$limit" "${rcmd[@]}" >"$runs/$tag.recv.out" 2>"$runs/$tag.recv.err" &
  recv_pid=$!
  if ! wait_ready "$recv_pid" "$kind" "$where"; then
    kill -9 "$recv_pid" 2>/dev/null || true
    wait "$recv_pid" 2>/dev/null || rrc=$?
    recv_pid=
    why="receiver did not listen on $ep within 10 s ($(exit_why receiver "$rrc" "$runs/$tag.recv.err"))"
    record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" failed "$why" "" "$cmd" "$runs/$tag.recv.out"
    return
  fi
  "${pin_send[@]}" timeout "$limit" "${scmd[@]}" >"$runs/$tag.send.out" 2>"$runs/$tag.send.err" || src=$?
  wait "$recv_pid" || rrc=$?
  recv_pid=
  t1=$(date +%s.%N)
  rm -f "$where"
  if [ "$suite" = lat ] || [ "$suite" = cross-lat ] || [ "$suite" = blat ]; then printer=send; else printer=recv; fi
  if [ "$rrc" != 0 ]; then
    why=$(exit_why "receiver $recv" "$rrc" "$runs/$tag.recv.err")
  else
    why=$(verdict "$src" "sender $send" "$runs/$tag.send.err" "$runs/$tag.$printer.out" "$cre" "$expect")
  fi
  record_verdict "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "$why" "$t0" "$t1" "$cmd" "$runs/$tag.$printer.out"
}

# single <suite> <transport> <size> <count> <family> <run> <binary> <count regex> <expected>
#        <args...>: the one-process runs (inproc-thr, inproc-lat, fanout).
single() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 tool=$7 cre=$8 expect=$9
  shift 9
  local tag="${suite}_${transport}_${size}_${family}_r${rep}"
  local cmd="$tool $*" t0 t1 rc=0 why=""
  t0=$(date +%s.%N)
  timeout "$limit" "$bin/$tool" "$@" >"$runs/$tag.out" 2>"$runs/$tag.err" || rc=$?
  t1=$(date +%s.%N)
  why=$(verdict "$rc" "$tool" "$runs/$tag.err" "$runs/$tag.out" "$cre" "$expect")
  record_verdict "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "$why" "$t0" "$t1" "$cmd" "$runs/$tag.out"
}

built() {  # <prefix> <tool>...: all present?
  local p=$1; shift
  for t in "$@"; do [ -x "$bin/$p$t" ] || return 1; done
}

thr_count_re='^message count: \([0-9]*\)$'
lat_count_re='^roundtrip count: \([0-9]*\)$'
fan_count_re='^deliveries: \([0-9]*\)$'

# one <suite> <transport> <size> <family> <prefix> <run>: one run of one configuration.
one() {
  local suite=$1 transport=$2 size=$3 family=$4 p=$5 rep=$6
  local cnt=${count[$size]:-}
  [ "$suite" = bthr ] && cnt=$blocking_count
  case $suite in
    thr|dr|pubsub|bthr)
      local extra=()
      [ "$suite" = pubsub ] && extra=(--pattern pubsub)
      [ "$suite" = dr ] && extra=(--pattern dealerrouter)
      if [ "$transport" = inproc ]; then
        if ! built "$p" inproc-thr; then
          record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" not_built "${p}inproc-thr not built" "" "" ""
          return
        fi
        single "$suite" inproc "$size" "$cnt" "$family" "$rep" "${p}inproc-thr" "$thr_count_re" "$cnt" \
          "$size" "$cnt" "${extra[@]}"
      else
        if ! built "$p" local-thr remote-thr; then
          record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" not_built "${p}local-thr/remote-thr not built" "" "" ""
          return
        fi
        pair "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "${p}local-thr" "${p}remote-thr" \
          "$thr_count_re" "$cnt" "${extra[@]}"
      fi ;;
    lat|blat)
      cnt=$roundtrips
      if [ "$transport" = inproc ]; then
        if ! built "$p" inproc-lat; then
          record "$suite" inproc "$size" "$cnt" "$family" "$rep" not_built "${p}inproc-lat not built" "" "" ""
          return
        fi
        single "$suite" inproc "$size" "$cnt" "$family" "$rep" "${p}inproc-lat" "$lat_count_re" "$cnt" "$size" "$cnt"
      else
        if ! built "$p" local-lat remote-lat; then
          record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" not_built "${p}local-lat/remote-lat not built" "" "" ""
          return
        fi
        pair "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "${p}local-lat" "${p}remote-lat" \
          "$lat_count_re" "$cnt"
      fi ;;
    fanout)
      cnt=$fanout_count
      if ! built "$p" fanout; then
        record fanout "$transport" "$size" "$cnt" "$family" "$rep" not_built "${p}fanout not built" "" "" ""
        return
      fi
      local ep
      if [ "$transport" = tcp ]; then ep="tcp://127.0.0.1:$(free_port)"; else ep="inproc://strix-link-fanout"; fi
      single fanout "$transport" "$size" "$cnt" "$family" "$rep" "${p}fanout" "$fan_count_re" \
        "$((cnt * subscribers))" "$ep" "$subscribers" "$size" "$cnt" ;;
  esac
}

# cross <kind thr|lat> <sender prefix> <receiver prefix> <label> <run>
cross() {
  local kind=$1 sp=$2 rp=$3 label=$4 rep=$5 cnt
  if [ "$kind" = thr ]; then
    cnt=${count[64]}
    if ! built "$sp" remote-thr || ! built "$rp" local-thr; then
      record cross-thr tcp 64 "$cnt" "$label" "$rep" not_built "${sp}remote-thr or ${rp}local-thr not built" "" "" ""
      return
    fi
    pair cross-thr tcp 64 "$cnt" "$label" "$rep" "${rp}local-thr" "${sp}remote-thr" "$thr_count_re" "$cnt"
  else
    cnt=$roundtrips
    if ! built "$sp" remote-lat || ! built "$rp" local-lat; then
      record cross-lat tcp 64 "$cnt" "$label" "$rep" not_built "${sp}remote-lat or ${rp}local-lat not built" "" "" ""
      return
    fi
    pair cross-lat tcp 64 "$cnt" "$label" "$rep" "${rp}local-lat" "${sp}remote-lat" "$lat_count_re" "$cnt"
  fi
}

# curve_one <suite curve-thr|curve-lat> <size> <family> <library argument> <run>: one run of a
# CURVE tool, both halves in one process over tcp.
curve_one() {
  local suite=$1 size=$2 family=$3 lib=$4 rep=$5 tool cnt cre
  if [ "$suite" = curve-thr ]; then
    tool=strix-link-curve-thr cnt=${curve_count[$size]} cre=$thr_count_re
  else
    tool=strix-link-curve-lat cnt=$roundtrips cre=$lat_count_re
  fi
  if ! built "" "$tool"; then
    record "$suite" tcp "$size" "$cnt" "$family" "$rep" not_built "$tool not built" "" "" ""
    return
  fi
  single "$suite" tcp "$size" "$cnt" "$family" "$rep" "$tool" "$cre" "$cnt" "$lib" "$size" "$cnt"
}

# The configurations, in the order they run within a repetition: "suite transport size".
configs=()
for s in "${suites[@]}"; do
  case $s in
    thr) for tr in tcp ipc inproc; do for sz in 64 256 1024 8192 65536; do configs+=("thr $tr $sz"); done; done ;;
    dr) for tr in tcp ipc inproc; do for sz in 64 256 1024; do configs+=("dr $tr $sz"); done; done ;;
    pubsub) configs+=("pubsub tcp 64" "pubsub tcp 65536") ;;
    fanout) configs+=("fanout tcp 64" "fanout inproc 64") ;;
    lat) for tr in tcp ipc inproc; do for sz in 64 1024 8192; do configs+=("lat $tr $sz"); done; done ;;
    cross) configs+=("cross tcp 64") ;;
    blocking)
      for tr in tcp ipc inproc; do configs+=("bthr $tr 64"); done
      for tr in tcp ipc inproc; do configs+=("blat $tr 64"); done ;;
    curve) configs+=("curve-thr tcp 64" "curve-thr tcp 1024" "curve-lat tcp 64") ;;
  esac
done

commit=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$here/.." status --porcelain --untracked-files=no 2>/dev/null | wc -l)
tests_line=$(ctest --test-dir "$build" -N -L link 2>/dev/null | grep -E '^Total Tests:' || echo "Total Tests: unknown (ctest failed)")
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
{
  printf '{"runs":%s,"pin":%s,"strix_prefix":"%s","zmq_prefix":"%s","timeout_s":%s,' \
    "$reps" "$([ "$pin" = 1 ] && echo true || echo false)" "$strix_prefix" "$zmq_prefix" "$limit"
  printf '"counts":{"64":%s,"256":%s,"1024":%s,"8192":%s,"65536":%s},' \
    "${count[64]}" "${count[256]}" "${count[1024]}" "${count[8192]}" "${count[65536]}"
  printf '"roundtrips":%s,"fanout_count":%s,"subscribers":%s,"blocking_count":%s,"suites":"%s",' \
    "$roundtrips" "$fanout_count" "$subscribers" "$blocking_count" "${suites[*]}"
  printf '"curve_counts":{"64":%s,"1024":%s},' "${curve_count[64]}" "${curve_count[1024]}"
  printf '"commit":"%s","dirty_files":%s,"tests_line":%s,"loadavg_start":"%s","nproc":%s,' \
    "$commit" "$dirty" "$(json_str "$tests_line")" "$loadavg" "$(nproc)"
  printf '"started":"%s","missing":%s}\n' "$(date '+%Y-%m-%d %H:%M %Z')" "$(json_str "${missing[*]:-}")"
} >"$runs/meta.json"

echo "bench-link: ${#configs[@]} configurations x 2 families x $reps runs; families ${strix_prefix}* and ${zmq_prefix}*;" \
  "pinned: $([ "$pin" = 1 ] && echo 'receiver CPU 0, sender CPU 1' || echo no); $(nproc) CPUs; load average $loadavg"
[ "$strix_prefix" = "$zmq_prefix" ] &&
  echo "bench-link: note: STRIX_LINK_PREFIX=$strix_prefix: the 'strix' family runs the libzmq tools (test mode)"
for rep in $(seq "$reps"); do
  for c in "${configs[@]}"; do
    read -r suite transport size <<<"$c"
    if [ "$suite" = cross ]; then
      cross thr "$strix_prefix" "$zmq_prefix" "strix->zmq" "$rep"
      cross thr "$zmq_prefix" "$strix_prefix" "zmq->strix" "$rep"
      cross lat "$strix_prefix" "$zmq_prefix" "strix->zmq" "$rep"
      cross lat "$zmq_prefix" "$strix_prefix" "zmq->strix" "$rep"
    elif [ "$suite" = curve-thr ] || [ "$suite" = curve-lat ]; then
      # Test mode (STRIX_LINK_PREFIX=zmq-): the strix family measures libzmq too.
      curve_one "$suite" "$size" strix "$([ "$strix_prefix" = "$zmq_prefix" ] && echo zmq || echo strix)" "$rep"
      curve_one "$suite" "$size" zmq zmq "$rep"
    elif [ "$suite" = bthr ] || [ "$suite" = blat ]; then
      one "$suite" "$transport" "$size" strix "${strix_prefix}blocking-" "$rep"
      one "$suite" "$transport" "$size" zmq "${zmq_prefix}blocking-" "$rep"
    else
      one "$suite" "$transport" "$size" strix "$strix_prefix" "$rep"
      one "$suite" "$transport" "$size" zmq "$zmq_prefix" "$rep"
      # The floor under both libraries' round trips: two bare threads waking each other.
      if [ "$suite" = lat ] && [ "$size" = 64 ] && built "" wake-floor-lat; then
        single lat "$transport" 64 "$roundtrips" floor "$rep" wake-floor-lat "$lat_count_re" "$roundtrips" \
          "$transport" 64 "$roundtrips"
      fi
    fi
  done
done

python3 "$here/link_report.py" --runs "$runs" --out "$out"
if [ "$n_failed" -gt 0 ]; then
  echo "bench-link: $n_failed of $n_runs runs failed (recorded in $out/link.md, logs in $runs)" >&2
  exit 1
fi
