#!/usr/bin/env python3
"""The conversations workload's section of the chat report, from bench-chat.sh's conv-*.json runs.

  chat_conv_report.py --runs <chat-runs dir> --out <file.md>

Reads conv-single-rN.json (one node) and conv-cluster-rN.json (two cluster nodes), as strix-chat-load
--rooms-per-client wrote them, and writes one table row per run (sent, delivered, lost, duplicates,
out of order, p50/p99 for all, group and direct messages) and per setup the medians [min-max] over
its runs. chat_report.py puts the same section into chat.md. A run that did not verify is shown
with its verdict and makes this script exit 1 after writing the file.
"""
import argparse
import json
import os
import re
import statistics


def load_runs(runs_dir):
    """{"single": [(run number, json)...], "cluster": [...]} in run order."""
    found = {}
    for name in sorted(os.listdir(runs_dir)):
        m = re.match(r"conv-(single|cluster)-r(\d+)\.json$", name)
        if m:
            with open(os.path.join(runs_dir, name)) as f:
                found.setdefault(m.group(1), []).append((int(m.group(2)), json.load(f)))
    for runs in found.values():
        runs.sort(key=lambda x: x[0])
    return found


def ms(us):
    return us / 1000.0


def spread(values, fmt="{:.2f}"):
    """median [min-max] of values, or n/a."""
    if not values:
        return "n/a"
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def verified(j):
    return bool(j.get("ok")) and all(j.get(k, 1) == 0 for k in ("lost", "duplicates", "out_of_order", "corrupt"))


LABEL = {"single": "one node", "cluster": "two cluster nodes"}


def section(runs_dir):
    """The markdown lines of the section ([] when no conversations run is in runs_dir), and
    whether every run verified."""
    found = load_runs(runs_dir)
    if not found:
        return [], True
    # The description comes from a run that got as far as measuring (a failed run's JSON may lack
    # the workload's fields); with none, from whatever there is.
    runs = [j for rs in found.values() for _, j in rs]
    first = next((j for j in runs if "latency_us" in j and "conversations" in j), runs[0])
    c = first.get("conversations") or {}
    if "latency_us" not in first:
        L = ["## Conversations: many rooms per account, direct messages", "",
             "No run got as far as measuring:", ""]
        for kind in ("single", "cluster"):
            for r, j in found.get(kind, []):
                L.append(f"- {LABEL[kind]} run {r}: FAILED: {j.get('failure', '?')}")
        L.append("")
        return L, False
    L = ["## Conversations: many rooms per account, direct messages", ""]
    L.append(f"`strix-chat-load --rooms-per-client {c.get('rooms_per_client')} --room-size {c.get('room_size')} "
             f"--dm-share {c.get('dm_share')} --dm-partners {c.get('dm_partners')}`: {first['clients']:,} accounts "
             f"logged in with protocol version 2, each in {c.get('rooms_per_client')} group rooms of "
             f"{c.get('room_size')} members ({c.get('group_rooms'):,} rooms, every one exactly that full) and "
             f"{c.get('dm_partners')} direct partners ({c.get('direct_pairs'):,} direct rooms, opened by a first "
             f"direct_req before the run); each sends {first['rps']:g} messages/s, "
             f"{100 * c.get('dm_share', 0):.0f} % of them direct, the rest round-robin over its rooms "
             f"(fan-out x{first['fan_out']:.1f} on average), payload {first['payload_mix']}, "
             f"{first['duration_s']:.0f} s measured after {first['warmup_s']:.0f} s warmup. Every delivery is "
             "verified per conversation: each member gets each message once, the room's seq +1 each time, every "
             "sender's messages in order, the exact text. **One node**: strix-chat-server on SQLite as above; "
             "**two cluster nodes**: two strix-chat-server --cluster on one PostgreSQL and one Redis, each "
             "room's members and each direct pair spread over both (client i on node i % 2). Each run on fresh "
             "databases. Latency: send to receipt, milliseconds.")
    L.append("")
    L.append("| setup | run | setup (s) | sent (direct) | delivered / expected | lost | dup | out of order | "
             "p50 | p99 | group p50 / p99 | direct p50 / p99 | result |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    all_ok = True
    for kind in ("single", "cluster"):
        for r, j in found.get(kind, []):
            ok = verified(j)
            all_ok = all_ok and ok
            if "latency_us" not in j:
                L.append(f"| {LABEL[kind]} | {r} | | | | | | | | | | | FAILED: {j.get('failure', '?')} |")
                continue
            cv = j["conversations"]
            g, d = cv["room"]["latency_us"], cv["direct"]["latency_us"]
            L.append(f"| {LABEL[kind]} | {r} | {j['setup_s']:.1f} | {j['sent']:,} ({cv['direct']['sent']:,}) | "
                     f"{j['delivered']:,} / {j['expected_deliveries']:,} | {j['lost']} | {j['duplicates']} | "
                     f"{j['out_of_order']} | {ms(j['latency_us']['p50']):.2f} | {ms(j['latency_us']['p99']):.2f} | "
                     f"{ms(g['p50']):.2f} / {ms(g['p99']):.2f} | {ms(d['p50']):.2f} / {ms(d['p99']):.2f} | "
                     + ("verified" if ok else f"FAILED: {j.get('failure') or j.get('verdict')}") + " |")
    L.append("")
    L.append("Medians over the runs [min-max]:")
    L.append("")
    L.append("| setup | runs | deliveries/s | lost / dup / out of order (sum) | p50 (ms) | p99 (ms) | group p99 (ms) | "
             "direct p99 (ms) |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in ("single", "cluster"):
        rs = [j for _, j in found.get(kind, []) if "latency_us" in j]
        if not rs:
            continue
        lat = lambda key, p: [ms(j[key]["p" + p]) for j in rs]  # noqa: E731
        sub = lambda part, p: [ms(j["conversations"][part]["latency_us"]["p" + p]) for j in rs]  # noqa: E731
        L.append(f"| {LABEL[kind]} | {len(rs)} | {spread([j['deliveries_per_s'] for j in rs], '{:,.0f}')} | "
                 f"{sum(j['lost'] for j in rs)} / {sum(j['duplicates'] for j in rs)} / "
                 f"{sum(j['out_of_order'] for j in rs)} | {spread(lat('latency_us', '50'))} | "
                 f"**{spread(lat('latency_us', '99'))}** | {spread(sub('room', '99'))} | {spread(sub('direct', '99'))} |")
    L.append("")
    return L, all_ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    lines, ok = section(args.runs)
    if not lines:
        raise SystemExit(f"chat_conv_report: no conv-*.json in {args.runs}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("# Chat load test: the conversations workload\n\nWritten by `scripts/bench-chat.sh` "
                "(`CHAT_CONV_ONLY=1` runs this section alone).\n\n" + "\n".join(lines))
    print(f"chat_conv_report: wrote {args.out}")
    if not ok:
        raise SystemExit("chat_conv_report: a conversations run did not verify (see the table)")


if __name__ == "__main__":
    main()
