#!/usr/bin/env bash
# Where an echo server's time goes: user vs kernel CPU per echoed message, for strix (epoll and
# io_uring), raw epoll, tokio and gnet. Server on CPU 0, strix-echo-bench --mode single on CPU 1
# (taskset), 100 connections x 8 B, depths 1/16/128, the servers interleaved, 3 repetitions; the
# server's utime/stime from /proc/PID/stat over 3 s of each 4 s run. Prints a markdown table of
# medians. Needs make build and bench/peers/build.sh (make bench-echo builds the peers).
#   scripts/echo-cpu-split.sh [build_dir]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
B=$build/bin
declare -A SRV=(
 [strix]="$B/strix-echo-server --shards 2 --io epoll"
 [strix-uring]="$B/strix-echo-server --shards 2 --io uring"
 [raw-epoll]="$B/strix-echo-raw-epoll --threads 2"
 [tokio]="$build/peers/bin/tokio-echo --threads 2"
 [gnet]="$build/peers/bin/gnet-echo --loops 2"
)
tck=$(getconf CLK_TCK)
out=$(mktemp); trap 'rm -f "$out" "$out.json"' EXIT
for rep in 1 2 3; do
for depth in 1 16 128; do
for s in strix strix-uring raw-epoll tokio gnet; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  taskset -c 0 ${SRV[$s]} --port $port >/dev/null 2>&1 & pid=$!
  for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
  taskset -c 1 $B/strix-echo-bench --port $port --connections 100 --size 8 --depth $depth --mode single --duration 4 --warmup 1 --json $out.json >/dev/null 2>&1 &
  cpid=$!
  sleep 1.5
  read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  t0=$(date +%s.%N)
  sleep 3
  read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  t1=$(date +%s.%N)
  wait $cpid
  kill -TERM $pid; wait $pid 2>/dev/null
  rate=$(python3 -c "import json;print(json.load(open('$out.json'))['msgs_in_per_s'])")
  echo "$rep $depth $s $rate $((u1-u0)) $((s1-s0)) $t0 $t1 $tck" >> $out
done; done; done
python3 - "$out" <<'PY'
import statistics as st, collections
import sys
rows=[l.split() for l in open(sys.argv[1])]
agg=collections.defaultdict(list)
for rep,d,s,rate,du,ds,t0,t1,tck in rows:
    el=float(t1)-float(t0); tck=int(tck); rate=float(rate)
    msgs=rate*el
    agg[(int(d),s)].append((rate, int(du)/tck/el*100, int(ds)/tck/el*100, int(du)/tck/msgs*1e9, int(ds)/tck/msgs*1e9))
print("| depth | server | msgs/s (median) | server user CPU % | server kernel CPU % | user ns/msg | kernel ns/msg |")
print("|---:|---|---:|---:|---:|---:|---:|")
for (d,s),v in sorted(agg.items()):
    med=lambda i: st.median(x[i] for x in v)
    print(f"| {d} | {s} | {med(0):,.0f} | {med(1):.0f} | {med(2):.0f} | {med(3):.0f} | {med(4):.0f} |")
PY
