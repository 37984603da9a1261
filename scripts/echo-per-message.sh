#!/usr/bin/env bash
# What an echoed message costs each server, counted rather than timed (counts hold on a noisy
# machine): system calls by kind, context switches (voluntary / involuntary, from
# /proc/PID/task/*/status), CPU migrations and CPU time, for the server and for the client, per
# echoed message. Client: strix-echo-loop (one thread, level-triggered epoll, one read and one
# write per readable event), 100 connections x 8 B at the given depth; no taskset anywhere (client
# and servers go where the scheduler puts them, as a new user runs them). Servers interleaved,
# ECHO_REPS repetitions; medians. Needs perf (software events and syscall tracepoints) unless
# ECHO_PM_PERF=0.
#   scripts/echo-per-message.sh [build_dir] [depth]
#   ECHO_REPS [3]   ECHO_PM_SERVERS ["strix strix-uring strix-1 raw-epoll tokio"] (strix* on epoll unless named -uring); also strix-2,
#                   strix-pin (--pin), strix-batch (SCHED_BATCH), and with ECHO_PM_ALT_BIN=<another
#                   strix-echo-server build> alt, alt-1, alt-uring
#   ECHO_PM_PERF [1]: 0 skips perf (throughput only, nothing attached)
#   ECHO_PM_CLIENT [loop]: loop (strix-echo-loop), or single / multi (strix-echo-bench --mode M,
#                     multi with one thread per CPU; no context switch columns then)
#   ECHO_PM_SCHED [0]: 1 also records sched_switch / sched_wakeup on every CPU for 2 s mid-run
#                     (perf record -a) and counts, per message, the server threads' sleeps, their
#                     wake-ups by the client and onto the client's CPU, and the client's preemptions
# Each run: client --warmup 1 --duration ECHO_PM_DURATION [4]. perf counts each process over its
# whole life, divided by every echo of the run; context switches (voluntary / involuntary) come
# from the client's JSON, over its measured window (the server's threads from /proc).
# On a machine shared with other people's builds, nice alone does nothing across sessions (each
# session is its own autogroup); to keep their work from taking the CPUs the runs need, start it
# in a session of its own whose autogroup is reniced (as root; the servers and the client get the
# same share):
#   setsid bash -c 'echo -20 >/proc/self/autogroup; exec scripts/echo-per-message.sh build 128'
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
depth=${2:-128}
reps=${ECHO_REPS:-3}
use_perf=${ECHO_PM_PERF:-1}
duration=${ECHO_PM_DURATION:-4}
client_mode=${ECHO_PM_CLIENT:-loop}
B=$build/bin
case $client_mode in
  loop) client=("$B/strix-echo-loop") ;;
  single) client=("$B/strix-echo-bench" --mode single) ;;
  multi) client=("$B/strix-echo-bench" --mode multi --threads "$(nproc)") ;;
  *) echo "ECHO_PM_CLIENT: loop, single or multi" >&2; exit 2 ;;
esac
read -r -a servers <<<"${ECHO_PM_SERVERS:-strix strix-uring strix-1 raw-epoll tokio}"
declare -A SRV=(
  [strix]="$B/strix-echo-server --io epoll"
  [strix-uring]="$B/strix-echo-server --io uring"
  [strix-1]="$B/strix-echo-server --shards 1 --io epoll"
  [strix-2]="$B/strix-echo-server --shards 2 --io epoll"
  [strix-pin]="$B/strix-echo-server --pin --io epoll"
  [strix-batch]="chrt -b 0 $B/strix-echo-server --io epoll"
  [raw-epoll]="$B/strix-echo-raw-epoll --threads $(nproc)"
  [tokio]="$build/peers/bin/tokio-echo --threads $(nproc)"
)
if [ -n "${ECHO_PM_ALT_BIN:-}" ]; then
  SRV[alt]="$ECHO_PM_ALT_BIN"
  SRV[alt-1]="$ECHO_PM_ALT_BIN --shards 1"
  SRV[alt-uring]="$ECHO_PM_ALT_BIN --io uring"
fi
events=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter
for sc in read readv recvfrom write writev sendto sendmsg epoll_wait epoll_pwait epoll_ctl io_uring_enter futex sched_yield; do
  events+=",syscalls:sys_enter_$sc"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows
sched=${ECHO_PM_SCHED:-0}
cat >"$tmp/sched.py" <<'PY'
# Reads `perf script` of sched_switch / sched_wakeup; argv: client tids, server tids (comma lists).
# Prints JSON counts: how often the server's threads slept, were woken by the client and onto
# the client's CPU, and how often the client lost its CPU to a server thread (preempted).
import json, re, sys
ctids = {t for t in sys.argv[1].split(",") if t}
stids = {t for t in sys.argv[2].split(",") if t}
line_re = re.compile(r"^\s*.*?\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(sched:\w+):\s+(.*)$")
n = {"client_preempted_by_server": 0, "client_preempted_by_other": 0, "client_slept": 0,
     "server_slept": 0, "server_preempted": 0, "server_woken_by_client": 0, "server_woken_onto_client_cpu": 0}
first = last = None
for line in sys.stdin:
    m = line_re.match(line)
    if not m:
        continue
    tid, cpu, ts, ev, rest = m.groups()
    first = first or float(ts)
    last = float(ts)
    f = dict(re.findall(r"(\w+)=(\S+)", rest))
    if ev == "sched:sched_switch":
        prev, nxt, state = f.get("prev_pid"), f.get("next_pid"), f.get("prev_state", "")
        if prev in ctids:
            if state.startswith("R"):
                n["client_preempted_by_server" if nxt in stids else "client_preempted_by_other"] += 1
            else:
                n["client_slept"] += 1
        elif prev in stids:
            n["server_preempted" if state.startswith("R") else "server_slept"] += 1
    elif ev == "sched:sched_wakeup" and f.get("pid") in stids and tid in ctids:
        n["server_woken_by_client"] += 1
        if f.get("target_cpu", "").lstrip("0") == cpu.lstrip("0"):
            n["server_woken_onto_client_cpu"] += 1
n["seconds"] = (last - first) if first else 0
print(json.dumps(n))
PY

for rep in $(seq "$reps"); do
  for s in "${servers[@]}"; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    perf_s=() perf_c=()
    if [ "$use_perf" = 1 ]; then
      perf_s=(perf stat -x, -e "$events" -o "$tmp/s.perf" --)
      perf_c=(perf stat -x, -e "$events" -o "$tmp/c.perf" --)
    fi
    : >"$tmp/s.perf"
    : >"$tmp/c.perf"
    # shellcheck disable=SC2086
    "${perf_s[@]}" ${SRV[$s]} --port "$port" >"$tmp/server.log" 2>&1 &
    ppid_=$!
    spid=$ppid_
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
    # perf stat forks the server.
    if [ "$use_perf" = 1 ]; then spid=$(pgrep -P "$ppid_" | head -1); fi
    crc=0
    "${perf_c[@]}" "${client[@]}" --port "$port" --connections 100 --size 8 --depth "$depth" \
      --duration "$duration" --warmup 1 --server-pid "$spid" --json "$tmp/c.json" >"$tmp/c.log" 2>&1 &
    cpid=$!
    : >"$tmp/sched.txt"
    if [ "$sched" = 1 ]; then
      # Who runs where: every switch and wakeup on the machine for 2 s of the measured window.
      sleep 1.5
      ctids=$(ls /proc/"$cpid"/task 2>/dev/null | tr '\n' ,)
      [ "$use_perf" = 1 ] && ctids=$(for p in $(pgrep -P "$cpid"); do ls /proc/"$p"/task; done | tr '\n' ,)
      stids=$(ls /proc/"$spid"/task 2>/dev/null | tr '\n' ,)
      perf record -q -a -e sched:sched_switch,sched:sched_wakeup -o "$tmp/sched.data" -- sleep 2 >/dev/null 2>&1
      perf script -i "$tmp/sched.data" 2>/dev/null | python3 "$tmp/sched.py" "$ctids" "$stids" >"$tmp/sched.txt"
    fi
    wait "$cpid" || crc=$?
    kill -TERM "$spid"
    wait "$ppid_" 2>/dev/null
    python3 - "$tmp/c.json" "$tmp/s.perf" "$tmp/c.perf" "$s" "$rep" "$crc" "$tmp/sched.txt" "$tmp/server.log" >>"$rows" <<'PY'
import json, re, sys
cj, sp, cp, name, rep, crc, sc, slog = sys.argv[1:9]
js = json.load(open(cj))
# strix-echo-server prints its shards' loop turns at exit (over its whole life, like perf).
turns = sum(int(t) for t in re.findall(r"shard \d+: (\d+) loop turns", open(slog).read()))
sched = json.loads(open(sc).read() or "{}")
def perf(path):
    out = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) < 3 or line.startswith("#"):
            continue
        try:
            out[f[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "syscalls")] = float(f[0])
        except ValueError:
            pass
    return out
print(json.dumps({"server": name, "rep": int(rep), "ok": bool(js.get("ok")) and crc == "0",
                  "rate": js.get("msgs_in_per_s") or 0, "verified": js.get("verified") or 0,
                  "s": perf(sp), "c": perf(cp), "js": js, "sched": sched, "turns": turns}))
PY
    printf '  rep %s %-12s %s\n' "$rep" "$s" "$(grep '^summary' "$tmp/c.log" | sed 's/^summary over [^:]*: //; s/ | MB.s in.*client/ | client/')" >&2
  done
done

python3 - "$rows" "$depth" "$use_perf" "$client_mode" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
depth, use_perf, cmode = sys.argv[2], sys.argv[3] == "1", sys.argv[4]
names = list(dict.fromkeys(r["server"] for r in rows))
def per(r, side, key):
    if side == "sched":
        msgs = r["rate"] * r["sched"].get("seconds", 0)
        return r["sched"][key] / msgs if msgs and key in r["sched"] else float("nan")
    # perf counts cover each process's whole life (the server's from its start to its SIGTERM):
    # divided by every echo of the run. Context switches come from the client's JSON (its
    # measured window, server threads read from /proc).
    if side == "turns":
        return r["turns"] / r["verified"] if r["turns"] and r["verified"] else float("nan")
    if side == "js":
        v = r["js"].get(key)
        if v is not None and key.endswith("_cpu_pct"):
            # % of one CPU / (msgs/s) -> ns per message; x 1000 undoes the per-1,000 scaling below.
            return v / 100 / r["rate"] * 1e9 / 1000 if r["rate"] else float("nan")
        return float("nan") if v is None else v
    return r[side].get(key, 0.0) / r["verified"] if r["verified"] else float("nan")
def med(vals):
    vals = [v for v in vals if v == v]
    return st.median(vals) if vals else float("nan")
cname = {"loop": "strix-echo-loop", "single": "strix-echo-bench --mode single", "multi": "strix-echo-bench --mode multi"}[cmode]
print(f"Depth {depth}, 100 connections x 8 B, {cname} client, no taskset (client and server free on "
      f"{len(__import__('os').sched_getaffinity(0))} CPUs); medians of {max(r['rep'] for r in rows)} interleaved runs"
      + (" (throughput with perf attached)" if use_perf else ""))
print()
print("| server | M msgs/s (min-max) | failed | server CPU % | client CPU % |")
print("|---|---:|---:|---:|---:|")
for n in names:
    rs = [r for r in rows if r["server"] == n and r["ok"]]
    rates = [r["rate"] / 1e6 for r in rs]
    bad = sum(1 for r in rows if r["server"] == n and not r["ok"])
    print(f"| {n} | {med(rates):.3f} ({min(rates, default=0):.3f}-{max(rates, default=0):.3f}) | {bad} "
          f"| {med([r['js'].get('server_cpu_pct') or 0 for r in rs]):.0f} | {med([r['js'].get('client_cpu_pct') or 0 for r in rs]):.0f} |")
print()
print("Per 1,000 echoed messages (medians; CPU columns in ns per message; cs = context switches):")
print()
cols = [("server syscalls", "s", "syscalls"), ("srv read", "s", ("read", "readv", "recvfrom")),
        ("srv write", "s", ("write", "writev", "sendto", "sendmsg")),
        ("srv epoll_wait", "s", ("epoll_wait", "epoll_pwait")), ("srv epoll_ctl", "s", "epoll_ctl"),
        ("srv uring_enter", "s", "io_uring_enter"), ("srv futex", "s", "futex"),
        ("srv loop turns", "turns", "turns"), ("srv cs vol", "js", "server_voluntary_cs_per_echo"), ("srv cs invol", "js", "server_involuntary_cs_per_echo"),
        ("srv cs (perf)", "s", "context-switches"),
        ("srv migr", "s", "cpu-migrations"), ("srv CPU ns/msg", "s", "task-clock"),
        ("client syscalls", "c", "syscalls"), ("cli read", "c", "read"),
        ("cli cs vol", "js", "client_voluntary_cs_per_echo"), ("cli cs invol", "js", "client_involuntary_cs_per_echo"),
        ("cli CPU ns/msg", "c", "task-clock")]
if not use_perf:
    # Without perf: context switches and the CPU each side used (the client's own rusage and the
    # server's /proc/PID/stat over the measured window), per message.
    cols = [c for c in cols if c[1] == "js"] + [("srv loop turns", "turns", "turns"),("srv CPU ns/msg (proc)", "js", "server_cpu_pct"),
                                                ("cli CPU ns/msg (rusage)", "js", "client_cpu_pct")]
if any(r["sched"] for r in rows):
    cols += [("srv slept (trace)", "sched", "server_slept"), ("srv woken by client", "sched", "server_woken_by_client"),
             ("srv woken onto client CPU", "sched", "server_woken_onto_client_cpu"),
             ("cli preempted by srv", "sched", "client_preempted_by_server"),
             ("cli preempted by other", "sched", "client_preempted_by_other")]
print("| server | " + " | ".join(c[0] for c in cols) + " |")
print("|---|" + "---:|" * len(cols))
for n in names:
    rs = [r for r in rows if r["server"] == n and r["ok"]]
    cells = []
    for label, side, key in cols:
        if isinstance(key, tuple):
            vals = [sum(per(r, side, k) for k in key) for r in rs]
        else:
            vals = [per(r, side, key) for r in rs]
        # Counts per 1,000 messages; task-clock (ms) as ns per message.
        v = med(vals) * (1e6 if key == "task-clock" else 1000)
        cells.append(f"{v:.2f}" if v < 100 else f"{v:.0f}")
    print(f"| {n} | " + " | ".join(cells) + " |")
PY
