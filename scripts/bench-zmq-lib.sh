# The run machinery of scripts/bench-zmq.sh (sourced by it, not run alone): one run of one
# configuration and family, its checks, and its JSON line. Reads the driver's variables (bin, lib,
# py, runs, jsonl, tmp, limit, pin_recv, pin_send, count, inproc_count, roundtrips, ...).
# shellcheck shell=bash

n_runs=0 n_failed=0 seq_no=0
last_status= rerun=false  # the last run's status; whether the run being made is a rerun

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

json_str() {  # a JSON string literal of $1 (control characters dropped)
  local s
  s=$(printf '%s' "$1" | tr -d '\000-\037')
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

num() {  # a JSON number, or null when $1 is empty
  if [ -n "$1" ]; then printf '%s' "$1"; else printf 'null'; fi
}

field() {  # <file> <sed regex with one group>: the group from the first matching line, or ""
  [ -f "$1" ] && sed -n "s/$2/\\1/p" "$1" | head -n 1 || true
}

# wait_ready <pid> <tcp|ipc> <port|path>: 0 once the endpoint is up, 1 if the process exits first
# or 10 s pass.
wait_ready() {
  local pid=$1 kind=$2 where=$3
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || return 1
    if [ "$kind" = tcp ]; then
      [ -n "$(ss -Hltn "sport = :$where" 2>/dev/null)" ] && return 0
    else
      [ -S "$where" ] && return 0
    fi
    sleep 0.05
  done
  return 1
}

exit_why() {  # <what> <rc> <output file>: one line saying why a process failed
  local what=$1 rc=$2 outf=$3 last
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "$what killed after ${limit} s (ZMQ_TIMEOUT)"
  else
    # libzmq's perf programs print their errors on stdout.
    last=$(cat "${outf%.out}.err" "$outf" 2>/dev/null | grep -v '^$' | tail -n 1)
    echo "$what exited $rc: $last"
  fi
}

# record <suite> <transport> <size> <count> <family> <run> <status> <why> <wall_s> <cmd> <out>
# Appends the run's JSON line; the figures come from <out> (the side that prints them).
record() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 status=$7 why=$8 wall=$9
  local cmd=${10} outf=${11}
  local msg_s="" mbit_s="" avg="" rtt_avg="" p50="" p99="" log=""
  [ -n "$outf" ] && log=$(basename "${outf%.out}")
  if [ "$status" = ok ]; then
    msg_s=$(field "$outf" '^mean throughput: \([0-9]*\) \[msg\/s\]$')
    mbit_s=$(field "$outf" '^mean throughput: \([0-9.]*\) \[Mb\/s\]$')
    avg=$(field "$outf" '^average latency: \([0-9.]*\) \[us\]$')
    rtt_avg=$(field "$outf" '^average roundtrip: \([0-9.]*\) \[us\]$')
    p50=$(field "$outf" '^p50 roundtrip: \([0-9.]*\) \[us\]$')
    p99=$(field "$outf" '^p99 roundtrip: \([0-9.]*\) \[us\]$')
  fi
  {
    printf '{"suite":"%s","transport":"%s","size":%s,"count":%s,"family":"%s","run":%s,' \
      "$suite" "$transport" "$size" "$cnt" "$family" "$rep"
    printf '"status":"%s","why":%s,"rerun":%s,"wall_s":%s,"command":%s,"log":"%s",' \
      "$status" "$(json_str "$why")" "$rerun" "$(num "$wall")" "$(json_str "$cmd")" "$log"
    printf '"msg_s":%s,"mbit_s":%s,"avg_us":%s,"rtt_avg_us":%s,"p50_us":%s,"p99_us":%s}\n' \
      "$(num "$msg_s")" "$(num "$mbit_s")" "$(num "$avg")" "$(num "$rtt_avg")" "$(num "$p50")" "$(num "$p99")"
  } >>"$jsonl"
  last_status=$status
  [ "$status" = not_built ] && return
  n_runs=$((n_runs + 1))
  local shown
  case $status in
    ok)
      if [ -n "$p50" ]; then shown="p50 ${p50} us, p99 ${p99} us"
      elif [ -n "$avg" ]; then shown="average latency ${avg} us"
      else shown="$(printf "%'d" "$msg_s") msg/s"; fi ;;
    *) n_failed=$((n_failed + 1)); shown="FAILED: $why" ;;
  esac
  printf '  %-9s %-6s %6s B  %-14s run %s: %s\n' "$suite" "$transport" "$size" "$family" "$rep" "$shown"
}

# verdict <rc> <what> <output> <count regex> <expected>: why a finished run failed (its exit
# status, the count it printed), nothing when it passed.
verdict() {
  local rc=$1 what=$2 outf=$3 cre=$4 expect=$5 got
  if [ "$rc" != 0 ]; then exit_why "$what" "$rc" "$outf"; return; fi
  got=$(field "$outf" "$cre")
  [ "$got" = "$expect" ] || echo "$what printed count '${got}', expected $expect"
}

loaded() {  # <what> <output> <library>: nothing when the output's "library:" line names it
  local got
  got=$(field "$2" '^library: \(.*\)$')
  [ "$got" = "$3" ] || echo "$1 loaded '${got}', not $3"
}

short_cmd() {  # <command line>: with $CACHE for the cache and paths under the checkout relative
  echo "$1" | sed "s|$cache/|\$CACHE/|g; s|$root/||g" | tr -s ' ' | sed 's/^ //; s/ $//'
}

wait_exit() {  # <pid> <seconds>: 0 once the process has exited, 1 if it still runs after that long
  local pid=$1 n
  n=$(awk -v s="$2" 'BEGIN { printf "%d", s * 20 }')
  for _ in $(seq "$n"); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  ! kill -0 "$pid" 2>/dev/null
}

elapsed() {  # <t0> <t1> (date +%s.%N): seconds between, 3 decimals
  awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}

# pair <suite> <transport> <size> <count> <family> <run> <printer recv|send> <count regex>
#      <library pyzmq must load, or ""> ; the commands in the arrays rcmd and scmd, with ENDPOINT
# in place of the endpoint. The receiver binds in the background, the sender connects.
pair() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 printer=$7 cre=$8 want_lib=$9
  seq_no=$((seq_no + 1))
  local tag="${suite}_${transport}_${size}_${family/->/-to-}_r${rep}"
  [ "$rerun" = true ] && tag+=b
  local ep where
  if [ "$transport" = tcp ]; then
    where=$(free_port)
    ep="tcp://127.0.0.1:$where"
  else
    where="$tmp/r$seq_no.sock"
    ep="ipc://$where"
    rm -f "$where"
  fi
  local r=("${rcmd[@]/ENDPOINT/$ep}") s=("${scmd[@]/ENDPOINT/$ep}")
  local cmd
  cmd=$(short_cmd "${pin_recv[*]} ${r[*]} & ${pin_send[*]} ${s[*]}")
  local t0 t1 rrc=0 src=0 why=""
  t0=$(date +%s.%N)
  "${pin_recv[@]}" timeout "$limit" "${r[@]}" >"$runs/$tag.recv.out" 2>"$runs/$tag.recv.err" &
  recv_pid=$!
  if ! wait_ready "$recv_pid" "$transport" "$where"; then
    kill -9 "$recv_pid" 2>/dev/null || true
    wait "$recv_pid" 2>/dev/null || rrc=$?
    recv_pid=
    why="receiver did not listen on $ep within 10 s ($(exit_why receiver "$rrc" "$runs/$tag.recv.out"))"
    record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" failed "$why" "" "$cmd" "$runs/$tag.recv.out"
    return
  fi
  "${pin_send[@]}" timeout "$limit" "${s[@]}" >"$runs/$tag.send.out" 2>"$runs/$tag.send.err" || src=$?
  # A receiver has only a few seconds left once the sender is gone: past that its messages are
  # lost (libzmq's own remote_thr drops its last messages over ipc now and then) and waiting out
  # ZMQ_TIMEOUT would only cost time.
  local lost=""
  if ! wait_exit "$recv_pid" "$grace"; then
    kill -9 "$recv_pid" 2>/dev/null || true
    lost="receiver still running ${grace} s after the sender exited $src (ZMQ_GRACE): messages lost"
  fi
  wait "$recv_pid" || rrc=$?
  recv_pid=
  t1=$(date +%s.%N)
  rm -f "$where"
  if [ -n "$lost" ] && [ "$src" = 0 ]; then
    why=$lost
  elif [ "$rrc" != 0 ] && [ -z "$lost" ]; then
    why=$(exit_why "receiver" "$rrc" "$runs/$tag.recv.out")
  elif [ "$src" != 0 ]; then
    why=$(exit_why "sender" "$src" "$runs/$tag.send.out")
  else
    why=$(verdict 0 "$printer" "$runs/$tag.$printer.out" "$cre" "$cnt")
    # pyzmq, both sides: the family's library, not whichever the loader found.
    if [ -z "$why" ] && [ -n "$want_lib" ]; then
      why=$(loaded receiver "$runs/$tag.recv.out" "$want_lib")$(loaded sender "$runs/$tag.send.out" "$want_lib")
    fi
  fi
  record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "$([ -z "$why" ] && echo ok || echo failed)" \
    "$why" "$(elapsed "$t0" "$t1")" "$cmd" "$runs/$tag.$printer.out"
}

# single <suite> <transport> <size> <count> <family> <run> <count regex> <command...>: the
# one-process runs (inproc).
single() {
  local suite=$1 transport=$2 size=$3 cnt=$4 family=$5 rep=$6 cre=$7
  shift 7
  local tag="${suite}_${transport}_${size}_${family}_r${rep}"
  [ "$rerun" = true ] && tag+=b
  local cmd t0 t1 rc=0 why
  cmd=$(short_cmd "$*")
  t0=$(date +%s.%N)
  timeout "$limit" "$@" >"$runs/$tag.out" 2>"$runs/$tag.err" || rc=$?
  t1=$(date +%s.%N)
  why=$(verdict "$rc" "$(basename "$1")" "$runs/$tag.out" "$cre" "$cnt")
  record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" "$([ -z "$why" ] && echo ok || echo failed)" \
    "$why" "$(elapsed "$t0" "$t1")" "$cmd" "$runs/$tag.out"
}

thr_count_re='^message count: \([0-9]*\)$'
lat_count_re='^roundtrip count: \([0-9]*\)$'

# one <suite> <transport> <size> <family> <run>: one run of one configuration. A family is
# libzmq, strix, control (the libzmq build again) or sender->receiver (the cross suites).
one() {
  local suite=$1 transport=$2 size=$3 family=$4 rep=$5
  local sf=${family%->*} rf=${family#*->} cnt
  case $suite in
    thr|cross-thr) if [ "$transport" = inproc ]; then cnt=${inproc_count[$size]}; else cnt=${count[$size]}; fi ;;
    py-thr) cnt=$py_count ;;
    py-lat) cnt=$py_roundtrips ;;
    *) if [ "$transport" = inproc ]; then cnt=$inproc_roundtrips; else cnt=$roundtrips; fi ;;
  esac
  if [[ $suite == py-* ]]; then
    if [ -z "${py[$sf]:-}" ]; then
      record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" not_built "pyzmq on $sf not built" "" "" ""
      return
    fi
  elif [ -z "${bin[$sf]:-}" ] || [ -z "${bin[$rf]:-}" ]; then
    record "$suite" "$transport" "$size" "$cnt" "$family" "$rep" not_built "perf programs on strix not built" "" "" ""
    return
  fi
  local sb=${bin[$sf]:-} rb=${bin[$rf]:-}
  case $suite in
    thr|cross-thr)
      if [ "$transport" = inproc ]; then
        single "$suite" inproc "$size" "$cnt" "$family" "$rep" "$thr_count_re" "$sb/inproc_thr" "$size" "$cnt"
      else
        rcmd=("$rb/local_thr" ENDPOINT "$size" "$cnt") scmd=("$sb/remote_thr" ENDPOINT "$size" "$cnt")
        pair "$suite" "$transport" "$size" "$cnt" "$family" "$rep" recv "$thr_count_re" ""
      fi ;;
    lat|cross-lat)
      if [ "$transport" = inproc ]; then
        single "$suite" inproc "$size" "$cnt" "$family" "$rep" "$lat_count_re" "$sb/inproc_lat" "$size" "$cnt"
      else
        rcmd=("$rb/local_lat" ENDPOINT "$size" "$cnt") scmd=("$sb/remote_lat" ENDPOINT "$size" "$cnt")
        pair "$suite" "$transport" "$size" "$cnt" "$family" "$rep" send "$lat_count_re" ""
      fi ;;
    rtt)
      if [ "$transport" = inproc ]; then
        single rtt inproc "$size" "$cnt" "$family" "$rep" "$lat_count_re" "$sb/zmq_rtt" inproc://strix-zmq-rtt "$size" "$cnt"
      else
        rcmd=("$rb/local_lat" ENDPOINT "$size" "$cnt") scmd=("$sb/zmq_rtt" ENDPOINT "$size" "$cnt")
        pair rtt "$transport" "$size" "$cnt" "$family" "$rep" send "$lat_count_re" ""
      fi ;;
    py-thr)
      rcmd=("${py[$sf]}" "$root/bench/zmq_abi/pyzmq_thr.py" recv ENDPOINT "$size" "$cnt")
      scmd=("${py[$sf]}" "$root/bench/zmq_abi/pyzmq_thr.py" send ENDPOINT "$size" "$cnt")
      pair py-thr "$transport" "$size" "$cnt" "$family" "$rep" recv "$thr_count_re" "${lib[$sf]}" ;;
    py-lat)
      rcmd=("${py[$sf]}" "$root/bench/zmq_abi/pyzmq_lat.py" rep ENDPOINT "$size" "$cnt")
      scmd=("${py[$sf]}" "$root/bench/zmq_abi/pyzmq_lat.py" req ENDPOINT "$size" "$cnt")
      pair py-lat "$transport" "$size" "$cnt" "$family" "$rep" send "$lat_count_re" "${lib[$sf]}" ;;
  esac
}

# setup_pyzmq <family> <prefix>: pyzmq built against the prefix's libzmq by scripts/pyzmq-venv.sh
# (its RUNPATH picks the prefix's library); sets py[family] when it imports and loads that
# library, else notes why in missing. The venvs of /usr and <build_dir>/zmq are the pyzmq suite's
# (<build_dir>/zmq-suite/venv-libzmq, venv-strix: built once for both); any other prefix gets
# one in the cache.
setup_pyzmq() {
  local family=$1 prefix venv got
  prefix=$(cd "$2" && pwd)
  if [ "$prefix" = /usr ]; then venv=$build/zmq-suite/venv-libzmq
  elif [ "$prefix" = "$build/zmq" ]; then venv=$build/zmq-suite/venv-strix
  else venv=$(cache_dir "$prefix")/pyzmq; fi
  if [ ! -x "$here/pyzmq-venv.sh" ]; then
    missing+=("pyzmq on $family (scripts/pyzmq-venv.sh is not there)")
    return
  fi
  local rc=0
  mkdir -p "$(dirname "$venv")"
  "$here/pyzmq-venv.sh" "$prefix" "$venv" >"$venv.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    missing+=("pyzmq on $family (scripts/pyzmq-venv.sh exited $rc$([ "$rc" = 77 ] && echo ': PyPI out of reach'): see $venv.out)")
    return
  fi
  got=$("$venv/bin/python" -c \
    'import zmq; print([l.split()[-1] for l in open("/proc/self/maps") if "libzmq" in l][0])' 2>/dev/null || true)
  if [ -z "$got" ] || [ "$(readlink -f "$got")" != "${lib[$family]}" ]; then
    missing+=("pyzmq on $family (its venv loads '${got:-nothing}', not ${lib[$family]})")
    return
  fi
  py[$family]=$venv/bin/python
}

# write_meta: how the run was made, for the report.
write_meta() {
  local commit dirty command v
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
  command=""
  for v in $(compgen -e | grep -E '^(ZMQ_|PIN$)' | sort); do command+="$v=${!v} "; done
  command+="scripts/bench-zmq.sh ${build#"$root/"}"
  local counts="" icounts="" s
  for s in "${sizes[@]}"; do
    counts+="\"$s\":${count[$s]},"
    icounts+="\"$s\":${inproc_count[$s]},"
  done
  {
    printf '{"runs":%s,"pin":%s,"timeout_s":%s,"grace_s":%s,"reruns":%s,"sizes":[%s],"suites":"%s",' "$reps" \
      "$([ "$pin" = 1 ] && echo true || echo false)" "$limit" "$grace" "$reruns" "$(IFS=,; echo "${sizes[*]}")" \
      "${suites[*]}"
    printf '"counts":{%s},"inproc_counts":{%s},"roundtrips":%s,"inproc_roundtrips":%s,' \
      "${counts%,}" "${icounts%,}" "$roundtrips" "$inproc_roundtrips"
    printf '"py_count":%s,"py_roundtrips":%s,"test_mode":%s,' "$py_count" "$py_roundtrips" "$test_mode"
    printf '"pin_recv":"%s","pin_send":"%s",' "${pin_recv[*]:-}" "${pin_send[*]:-}"
    printf '"libzmq_prefix":%s,"strix_prefix":%s,"libzmq_lib":%s,"strix_lib":%s,' \
      "$(json_str "$libzmq_prefix")" "$(json_str "$strix_prefix")" "$(json_str "${lib[libzmq]}")" \
      "$(json_str "${lib[strix]:-}")"
    printf '"libzmq_py":%s,"strix_py":%s,' "$(json_str "${py[libzmq]:-}")" "$(json_str "${py[strix]:-}")"
    printf '"commit":"%s","dirty_files":%s,"loadavg_start":"%s","nproc":%s,"cpus_allowed":"%s",' \
      "$commit" "$dirty" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" \
      "$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)"
    printf '"started":"%s","command":%s,"missing":[' "$(date '+%Y-%m-%d %H:%M %Z')" "$(json_str "$command")"
    local first=1 m
    for m in "${missing[@]}"; do
      [ "$first" = 1 ] || printf ','
      first=0
      json_str "$m"
    done
    printf ']}\n'
  } >"$runs/meta.json"
}
