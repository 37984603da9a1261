#!/usr/bin/env python3
"""make bench-api's report: the chat workload alone and with wrk POSTing to the server API.

  api_report.py --runs <build>/bench/api-runs --out <build>/bench/api.md --cpus N --shards N
                --client-cpus LIST --connections N

Reads, per run r, alone-rR.json and api-rR.json (strix-chat-load's), api-rR.wrk.json (wrk's, from
bench/api/api_post.lua) and api-rR.check.json (the room's stored count); writes median [min-max]
over the runs per mode, then every run.
"""
import argparse
import glob
import json
import os
import re
import statistics

from report_common import cpu_model, die


def load_runs(runs_dir):
    rows = []
    for path in sorted(glob.glob(os.path.join(runs_dir, "*-r*.json"))):
        m = re.fullmatch(r"(alone|api)-r(\d+)\.json", os.path.basename(path))
        if not m:
            continue
        mode, run = m.group(1), int(m.group(2))
        j = json.load(open(path))
        bad = {k: j[k] for k in ("lost", "duplicates", "out_of_order", "gaps", "corrupt") if j.get(k)}
        if bad:
            die(f"{mode}-r{run}: the load tool's verification failed: {bad}")
        if not j.get("verified", True):
            die(f"{mode}-r{run}: the load tool did not verify its rooms ({j.get('failure')})")
        row = {"mode": mode, "run": run, "chat_p50": j["latency_us"]["p50"] / 1000,
               "chat_p99": j["latency_us"]["p99"] / 1000, "deliveries": j["deliveries_per_s"],
               "server_cpu": j.get("server_cpu_pct", 0.0),
               "workload": f"{j['clients']} clients, {j['rooms']} rooms, {j['rps']:g} messages/s per client, "
                           f"{j['duration_s']:g} s measured after {j['warmup_s']:g} s warmup"}
        if mode == "api":
            base = path[: -len(".json")]
            try:
                w = json.load(open(base + ".wrk.json"))
                c = json.load(open(base + ".check.json"))
            except OSError as e:
                die(f"{mode}-r{run}: {e}")
            row.update(api_rps=w["requests"] / (w["duration_us"] / 1e6), api_p50=w["latency_us"]["p50"] / 1000,
                       api_p99=w["latency_us"]["p99"] / 1000, api_ok=w["requests"], stored=c["stored"])
        rows.append(row)
    if not rows:
        die(f"no runs in {runs_dir}")
    return rows


def cell(rows, key, fmt):
    v = [r[key] for r in rows if key in r]
    if not v:
        return "-"
    return f"{statistics.median(v):{fmt}} [{min(v):{fmt}}-{max(v):{fmt}}]"


def main():
    ap = argparse.ArgumentParser()
    for a in ("--runs", "--out", "--cpus", "--shards", "--client-cpus", "--connections"):
        ap.add_argument(a, required=True)
    a = ap.parse_args()
    rows = load_runs(a.runs)
    by_mode = {m: [r for r in rows if r["mode"] == m] for m in ("alone", "api")}
    cmd = open(os.path.join(a.runs, "alone-r1.cmd")).read().strip() if os.path.exists(
        os.path.join(a.runs, "alone-r1.cmd")) else "?"
    wcmd = open(os.path.join(a.runs, "api-r1.wrk.cmd")).read().strip() if os.path.exists(
        os.path.join(a.runs, "api-r1.wrk.cmd")) else "?"
    load = {k: open(os.path.join(a.runs, f"loadavg.{k}")).read().strip() for k in ("start", "end")
            if os.path.exists(os.path.join(a.runs, f"loadavg.{k}"))}
    n = max(len(v) for v in by_mode.values())
    lines = [
        "# The server API under load",
        "",
        f"The Chat server portfolio's chat workload (strix-chat-load: {rows[0]['workload']},",
        f"every delivery verified) alone, and with wrk POSTing messages to the server API from",
        f"{a.connections} keep-alive connections (one wrk thread, closed loop: the next request as soon as the",
        "answer came) into a room of its own with two listening members. Runs interleaved (alone, api, alone,",
        "...), each on a fresh server and SQLite database. Figures are median [min-max] over "
        f"{n} run{'s' if n != 1 else ''}; chat latency is the load tool's (send to receipt, measured window), API latency wrk's",
        "(request written to answer read); server CPU is the load tool's reading of /proc over warmup,",
        "measured window and drain (shards and database threads together).",
        "",
        "| mode | chat p50 (ms) | chat p99 (ms) | chat deliveries/s | API requests/s | API p50 (ms) | API p99 (ms) | server CPU (% of a core) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"alone": "chat alone", "api": f"chat + API posts ({a.connections} conns)"}
    for m, rs in by_mode.items():
        if rs:
            lines.append(f"| {names[m]} | {cell(rs, 'chat_p50', '.2f')} | {cell(rs, 'chat_p99', '.2f')} | "
                         f"{cell(rs, 'deliveries', '.0f')} | {cell(rs, 'api_rps', '.0f')} | "
                         f"{cell(rs, 'api_p50', '.2f')} | {cell(rs, 'api_p99', '.2f')} | {cell(rs, 'server_cpu', '.0f')} |")
    lines += [
        "",
        f"Where it ran: {a.cpus} CPUs ({cpu_model()}), all on one machine. strix-chat-server's {a.shards} shard(s) "
        f"pinned to the first CPU(s) (--pin), its database threads unpinned; strix-chat-load, wrk and the two "
        f"strix-chat-client listeners " + ("unpinned" if a.client_cpus == "all" else
                                            f"pinned to CPU(s) {a.client_cpus} (taskset)") + ". Load average at start "
        f"{load.get('start', '?')}, at end {load.get('end', '?')}.",
    ]
    # At the start only: by the end the 1-minute average counts this benchmark's own processes.
    busy = float(load["start"].split()[0]) if "start" in load else 0.0
    if busy > 0.5 * int(a.cpus):
        lines += ["", f"**The machine was busy**: a 1-minute load average of {busy:.2f} on {a.cpus} CPUs "
                  "before these runs began: other work took CPU time from the server and the clients; compare "
                  "the modes with each other, not with a quiet machine's figures."]
    lines += [
        "",
        "Checked in every API run: wrk saw no status over 399 and no socket error; the room's last_seq",
        "(GET /api/v1/rooms/{room}) is at least the posts answered 200 and at most that plus the requests in",
        "flight when wrk stopped; each listener printed exactly last_seq messages; the load tool verified",
        "its rooms (nothing lost, duplicated, reordered or changed).",
        "",
        "| run | mode | chat p50 (ms) | chat p99 (ms) | chat deliveries/s | API requests/s | API p50 (ms) | API p99 (ms) | API 200s | stored | server CPU (%) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["run"], r["mode"] != "alone")):
        api = (f"{r['api_rps']:.0f} | {r['api_p50']:.2f} | {r['api_p99']:.2f} | {r['api_ok']} | {r['stored']}"
               if r["mode"] == "api" else "- | - | - | - | -")
        lines.append(f"| {r['run']} | {r['mode']} | {r['chat_p50']:.2f} | {r['chat_p99']:.2f} | "
                     f"{r['deliveries']:.0f} | {api} | {r['server_cpu']:.0f} |")
    lines += ["", f"Load tool: `{cmd}`", "", f"wrk: `{wcmd}`", ""]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
