#!/usr/bin/env python3
"""Writes <out> (build/bench/cluster.md) from one scripts/bench-cluster.sh run.

Every figure comes from the strix-chat-load JSON files in --runs (TAG.json) and the script's own
measurements next to them (TAG.extra.json: CPU shares from /proc, Redis restart and resubscription
times). Steady runs: single-rN (one node) and cluster-rN (two nodes and Redis), interleaved; fault
runs: single-drops, drops, redis-kill, node-kill. A missing steady run fails the report; every run
is reported with its verdict, and steady runs that did not verify are named under the table.
"""
import argparse
import datetime
import glob
import json
import os
import statistics

from report_common import cpu_model, die


def load(runs, tag):
    try:
        with open(os.path.join(runs, tag + ".json")) as f:
            j = json.load(f)
        with open(os.path.join(runs, tag + ".extra.json")) as f:
            x = json.load(f)
    except (OSError, ValueError) as e:
        return None, None, str(e)
    return j, x, None


def diagnostics(runs, tag, limit=8):
    """The first distinct per-client warnings of a run's log."""
    seen, out = set(), []
    try:
        with open(os.path.join(runs, tag + ".log")) as f:
            for line in f:
                if not line.startswith("strix-chat-load: client"):
                    continue
                shape = "".join("N" if ch.isdigit() else ch for ch in line)
                if shape in seen:
                    continue
                seen.add(shape)
                out.append(line.rstrip())
                if len(out) >= limit:
                    break
    except OSError:
        pass
    return out


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, float) and digits:
        return f"{v:,.{digits}f}"
    return f"{v:,.0f}" if isinstance(v, (int, float)) else str(v)


def ms(us):
    return "-" if us is None else f"{us / 1000:.2f}"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default="")
    ap.add_argument("--elapsed", default="?")
    ap.add_argument("--redis-version", default="?")
    ap.add_argument("--pg-version", default="?")
    ap.add_argument("--loadavg", default="?")
    a = ap.parse_args()
    cfg = dict(kv.split("=", 1) for kv in a.config.split())
    n = int(cfg.get("runs", "3"))

    steady = {"single": [], "cluster": []}
    for r in range(1, n + 1):
        for kind in ("single", "cluster"):
            tag = f"{kind}-r{r}"
            j, x, err = load(a.runs, tag)
            if j is None:
                die(f"{tag}: {err}")
            steady[kind].append((tag, j, x))

    L = []
    w = L.append
    w(f"# Chat cluster: two nodes and Redis next to one node ({datetime.date.today().isoformat()})")
    w("")
    w(f"Command: `make bench-cluster` (scripts/bench-cluster.sh, this report by scripts/cluster_report.py); "
      f"{a.elapsed} s in all.")
    w("")
    w(f"Workload: the Chat server portfolio's: {cfg.get('clients')} clients, {cfg.get('rooms')} rooms, "
      f"{cfg.get('rps')} chat messages/s per client, payload {cfg.get('mix')}; {cfg.get('duration')} s measured after "
      f"{cfg.get('warmup')} s warmup per run (the portfolio ran 250 s); every delivery verified by strix-chat-load "
      "(per-room seq, no loss, no duplicate, in order, exact text).")
    w("")
    w(f"Where it ran: everything on this one machine ({os.cpu_count()} CPUs, {cpu_model()}), unpinned and shared: "
      "the load tool (1 thread), the node(s), redis-server "
      f"{a.redis_version} (no persistence) and PostgreSQL {a.pg_version} (fsync off, a fresh database per run). "
      f"Cluster: two `strix-chat-server --cluster` nodes of {cfg.get('node_shards')} shard(s) each, every room's "
      "members spread over both (`strix-chat-load --targets`); single: one node without `--cluster`, "
      f"{cfg.get('single_shards')} shard(s), on the same PostgreSQL. I/O backend `--io {cfg.get('io')}`. "
      "The two layouts alternate run by run. On 2 shared cores the client, the nodes, Redis and PostgreSQL "
      "compete for the same CPUs: the figures compare the layouts here, they are not what either does on "
      f"machines of its own. Load average (1, 5, 15 min) before -> after: {a.loadavg}; other people's builds "
      "share these cores, so latency varies run to run far more than throughput.")
    w("")

    w("## Steady runs")
    w("")
    w("| run | deliveries/s | p50 ms | p99 ms | same node p50 / p99 ms | other node p50 / p99 ms | Redis CPU % | "
      "node CPU % | lost | dup | out of order | verified |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in range(n):
        for kind in ("single", "cluster"):
            tag, j, x = steady[kind][r]
            lat = j["latency_us"]
            same, cross = j.get("latency_same_node_us", {}), j.get("latency_cross_node_us", {})
            nodes = fmt(x["node1_cpu_pct"], 1) + ("" if x.get("node2_cpu_pct") is None else
                                                  " + " + fmt(x["node2_cpu_pct"], 1))
            w(f"| {tag} | {fmt(j['deliveries_per_s'])} | {ms(lat['p50'])} | {ms(lat['p99'])} | "
              + (f"{ms(same.get('p50'))} / {ms(same.get('p99'))} | {ms(cross.get('p50'))} / {ms(cross.get('p99'))}"
                 if kind == "cluster" else "- | -")
              + f" | {fmt(x.get('redis_cpu_pct'), 1)} | {nodes} | {j['lost']} | {j['duplicates']} | "
              f"{j['out_of_order']} | {'yes' if j.get('verified') else '**no**'} |")
    w("")
    for kind in ("single", "cluster"):
        for tag, j, _ in steady[kind]:
            if not j.get("verified"):
                w(f"- **{tag} did not verify**: {j.get('verdict')}; errors by code: "
                  + (", ".join(f"{k} {v}" for k, v in j["errors"].get("by_code", {}).items()) or "none")
                  + f"; {j['sent']:,} chat_req sent, {j['acked']:,} acknowledged by their own chat_msg.")
                diag = diagnostics(a.runs, tag, 4)
                if diag:
                    w("")
                    w("```")
                    L.extend(diag)
                    w("```")
                w("")

    def m(kind, f):
        return med([f(j, x) for _, j, x in steady[kind]])

    s_d, c_d = m("single", lambda j, x: j["deliveries_per_s"]), m("cluster", lambda j, x: j["deliveries_per_s"])
    s50, c50 = m("single", lambda j, x: j["latency_us"]["p50"]), m("cluster", lambda j, x: j["latency_us"]["p50"])
    s99, c99 = m("single", lambda j, x: j["latency_us"]["p99"]), m("cluster", lambda j, x: j["latency_us"]["p99"])
    same50 = m("cluster", lambda j, x: j["latency_same_node_us"]["p50"])
    cross50 = m("cluster", lambda j, x: j["latency_cross_node_us"]["p50"])
    same99 = m("cluster", lambda j, x: j["latency_same_node_us"]["p99"])
    cross99 = m("cluster", lambda j, x: j["latency_cross_node_us"]["p99"])
    redis_cpu = m("cluster", lambda j, x: x["redis_cpu_pct"])
    w(f"Medians of {n} runs each: single node {fmt(s_d)} deliveries/s, p50 {ms(s50)} ms, p99 {ms(s99)} ms; "
      f"two nodes {fmt(c_d)} deliveries/s, p50 {ms(c50)} ms, p99 {ms(c99)} ms "
      f"(p50 x{c50 / s50:.2f}, p99 x{c99 / s99:.2f} the single node's); Redis {fmt(redis_cpu, 1)} % of one core.")
    w("")
    hop50 = cross50 - same50
    w("**The cross-node hop's share of the latency.** In the cluster runs half of each room's members sit on "
      "the sender's node and half on the other, and strix-chat-load sorts every delivery by that: the "
      f"difference is the hop (Redis pub/sub to the other node, and that node's fan-out). Median p50: same node "
      f"{ms(same50)} ms, other node {ms(cross50)} ms: the hop's share of an other-node delivery's p50 is "
      f"{100 * hop50 / cross50:+.0f} % ({hop50 / 1000:+.2f} ms); at p99 {ms(same99)} vs {ms(cross99)} ms "
      f"({(cross99 - same99) / 1000:+.2f} ms). "
      + ("A negative hop means deliveries on the other node arrive first: there the message goes out as "
         "soon as Redis publishes it, while the sender's node delivers it after the database commit "
         "(acknowledgement after the durable write) plus its own turn; the hop is then hidden behind the commit."
         if hop50 < 0 else
         "The rest of the latency (same-node p50) is the node's own path: sequencing in Redis, the database "
         "commit, the fan-out and the load tool's own turn on the shared cores."))
    w("")

    w("## Fault runs")
    w("")
    w("With `--reconnect` a client whose connection goes (reset on purpose, or its node killed) reconnects to "
      "the next node, logs in with the resume token of its last login_res, is put back in its room "
      "(join_room_res names the room's last seq L), sends resume_req{room, K = the last seq it had} and holds its "
      "live messages until K+1 .. L are refilled: by resume_res, or after a gap answer by history_req pages "
      "(asked again every 100 ms, up to 20 times, while history lacks part of the range). Every refilled "
      "message goes through the same check as live ones. chat_req lost with their connection before their ack "
      "owe nothing unless their sender sees them later; a message some members got but its sender never did "
      "counts as delivered to some members only. The time to have every missed message includes that patience: "
      "up to 2 s for each hole history never fills.")
    w("")
    faults = [("single-drops", f"one node without --cluster, clients reset their connection (RST) once at a random "
                               f"moment and reconnect (`--reconnect-share {cfg.get('drop_share')}`): the control, "
                               "what the check shows when the server keeps the protocol's promises"),
              ("drops", f"two nodes, clients reset their connection (RST) once at a random moment and reconnect to the other "
                        f"node (`--reconnect-share {cfg.get('drop_share')}`)"),
              ("redis-kill", "redis-server killed (-9) half-way through the measured window and restarted at once "
                             "on the same port (empty: no persistence)"),
              ("node-kill", "node 1 killed (-9) half-way through; its clients reconnect to node 2 with their "
                            "resume tokens (`--reconnect`)")]
    rows = []
    for tag, what in faults:
        j, x, err = load(a.runs, tag)
        if j is None:
            continue
        rows.append((tag, what, j, x))
    if not rows:
        w("Not run (CLUSTER_FAULTS=0).")
    for tag, what, j, x in rows:
        rc = j.get("reconnect", {})
        errs = j["errors"]
        by_code = ", ".join(f"{k} {v}" for k, v in errs.get("by_code", {}).items()) or "none"
        w(f"### {tag}: {what}")
        w("")
        missing = rc.get("refill_missing", 0)
        clean = (j["lost"] == 0 and j["duplicates"] == 0 and j["out_of_order"] == 0 and j["gaps"] == 0
                 and j["corrupt"] == 0 and missing == 0 and j.get("excess_deliveries", 0) == 0)
        w(f"- delivery check (lost, duplicated, out of order, seq gaps, corrupt, missing after refill, delivered to "
          f"some members only: all 0): **{'PASS' if clean else 'FAIL'}**; the load tool's whole verdict: "
          + ("PASS" if j.get("verified") else f"FAIL ({j.get('verdict')})"))
        w(f"- lost {j['lost']}, duplicates {j['duplicates']}, out of order {j['out_of_order']}, seq gaps "
          f"{j['gaps']}, corrupt {j['corrupt']}, deliveries beyond those owed (of chat_req refused or lost with "
          f"their connection, delivered after all) {j.get('excess_deliveries', 0)}; error replies {errs['total']} ({by_code})")
        w(f"- {fmt(j['deliveries_per_s'])} deliveries/s, p50 {ms(j['latency_us']['p50'])} ms, p99 "
          f"{ms(j['latency_us']['p99'])} ms, max {ms(j['latency_us']['max'])} ms"
          + ("" if x.get("redis_cpu_pct") is None else f"; Redis CPU {fmt(x.get('redis_cpu_pct'), 1)} %"))
        moved = rc.get("drops", 0) + rc.get("lost_connections", 0) + rc.get("reconnects", 0)
        if not moved:
            w("- no client lost its connection")
        else:
            w(f"- connections: {rc.get('drops', 0)} reset on purpose, {rc.get('lost_connections', 0)} lost; "
                f"{rc.get('reconnects', 0)} back with a resume token ({rc.get('reconnect_retries', 0)} failed attempts "
                f"retried, {rc.get('tokens_refused', 0)} tokens refused, {rc.get('reconnect_failures', 0)} gave up); "
                f"time from losing the connection to having every missed message: p50 {rc.get('resume_ms_p50', 0):.1f} ms, "
                f"max {rc.get('resume_ms_max', 0):.1f} ms")
            w(f"- refilled: {rc.get('resumes', 0)} resumes complete, {rc.get('refilled', 0)} messages by resume_res; "
                f"{rc.get('resume_gaps', 0)} gap answers ({rc.get('gap_seqs', 0)} seqs, "
                f"{rc.get('gaps_over_resume_max', 0)} over --resume-max), {rc.get('history_refilled', 0)} messages "
                f"refilled by history_req (history asked again {rc.get('history_retries', 0)} times: it lacked part of "
                f"the range), {rc.get('refill_missing', 0)} seqs neither gave back; "
                f"{rc.get('unconfirmed_deliveries', 0)} deliveries owed by chat_req lost with their connection and never "
                "seen since (not counted as owed)")
        if rc.get("rejoin_as_member_joined", 0) or rc.get("presence_notices", 0):
            w(f"- notices: {rc.get('presence_notices', 0)} member_presence, {rc.get('rejoin_as_member_joined', 0)} "
              "member_joined for members coming back (docs/protocol.md says member_presence{online} for them)")
        diag = diagnostics(a.runs, tag)
        if diag:
            w("- the load tool's first diagnostics (client numbers and seqs vary):")
            w("")
            w("```")
            L.extend(diag)
            w("```")
            w("")
        if tag == "redis-kill":
            w(f"- Redis accepting again {fmt(x.get('redis_restart_ms'), 1)} ms after the kill; the nodes' "
              f"{x.get('subscriptions_before')} pub/sub subscriptions all back after "
              f"{fmt(x.get('resubscribed_ms'), 1) if x.get('resubscribed_ms') is not None else 'more than 10 s (not seen)'}"
              " ms")
        w("")
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
