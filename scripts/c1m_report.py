#!/usr/bin/env python3
"""make bench-c1m's report: build/bench/c1m.md, c1m.json and c1m.png from scripts/bench-c1m.sh's run
directory (hold.json from strix-chat-hold, alone.json and held.json from strix-chat-load, idle.json,
platform.json from strix-platform-probe (the connect ceiling and the bare send's cost),
kernel.* snapshots of Slab and /proc/net/sockstat, env.txt, limits.txt, sysctl.txt, samples.txt).

    c1m_report.py --runs build/bench/c1m-run --out build/bench
"""
import argparse
import json
import os

from report_common import die, run_gnuplot


def pairs(path):
    """A file of 'key value...' lines as a dict of strings."""
    out = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            if key:
                out[key] = value
    return out


def load(runs, name):
    path = os.path.join(runs, name)
    if not os.path.exists(path):
        die(f"{path} is missing: the run did not finish")
    with open(path) as f:
        return json.load(f)


def kernel_delta(runs, n):
    """Kernel bytes per connection (both of its sockets) from the snapshots before and after the ramp."""
    before = {k: int(float(v)) for k, v in pairs(os.path.join(runs, "kernel.before")).items()}
    held = {k: int(float(v)) for k, v in pairs(os.path.join(runs, "kernel.held")).items()}
    slab = held["slab_bytes"] - before["slab_bytes"]
    tcp_mem = (held.get("tcp_mem", 0) - before.get("tcp_mem", 0)) * 4096
    return {
        "kernel_slab_bytes_per_conn": slab / n,
        "kernel_tcp_mem_bytes_per_conn": tcp_mem / n,
        "kernel_bytes_per_conn": (slab + tcp_mem) / n,
        "tcp_inuse_delta": held.get("tcp_inuse", 0) - before.get("tcp_inuse", 0),
        "sockets_used_delta": held.get("sockets_used", 0) - before.get("sockets_used", 0),
    }


def figures(runs):
    hold, alone, held_chat = load(runs, "hold.json"), load(runs, "alone.json"), load(runs, "held.json")
    idle = load(runs, "idle.json")
    env = pairs(os.path.join(runs, "env.txt"))
    n = hold["connections"]
    if n <= 0:
        die("strix-chat-hold held no connections")
    rss_before, rss_held = int(env["server_rss_before"]), int(env["server_rss_held"])
    first = hold["broadcast"][0] if hold["broadcast"] else {}
    after = hold["broadcast"][1] if len(hold["broadcast"]) > 1 else {}
    f = {
        "transport": hold["transport"],
        "requested": int(env["requested"]),
        "connections": n,
        "room_members": hold["room_members"],
        "connect_per_s": round(hold["connect_per_s"]),
        "server_rss_bytes": rss_held,
        "server_rss_per_conn": (rss_held - rss_before) / n,
        "server_rss_after_reconnect_bytes": int(env["server_rss_reconnected"]),
        "client_rss_per_conn": hold["client_rss_per_conn"],
        "broadcast_all_s": first.get("spread_s", 0),
        "broadcast_last_s": first.get("last_s", 0),
        "broadcast_after_reconnect_s": after.get("spread_s", 0),
        "chat_p50_us": held_chat["latency_us"]["p50"],
        "chat_p99_us": held_chat["latency_us"]["p99"],
        "chat_p50_alone_us": alone["latency_us"]["p50"],
        "chat_p99_alone_us": alone["latency_us"]["p99"],
        "chat_verified": bool(alone["verified"] and held_chat["verified"]),
        "idle_cpu_pct": idle["idle_cpu_pct"],
        "idle_sweep_sessions_per_s": idle["sweep_sessions_per_s"],
        "idle_sweep_listed": idle["sweep_listed_end"],
        "reconnect_all_s": hold.get("reconnect_all_s", -1),
        "reconnects": hold["reconnects"],
        "lost": hold["lost"], "duplicated": hold["duplicated"], "out_of_order": hold["out_of_order"],
        "corrupt": hold["corrupt"], "seq_gaps": hold["seq_gaps"], "pings": hold["pings"], "pongs": hold["pongs"],
        "ok": hold["ok"],
        "held_s": int(env.get("held_s", 0)),
        "pings_per_s": n / float(env["ping_interval"]) if float(env["ping_interval"]) > 0 else 0.0,
    }
    f.update(kernel_delta(runs, n))
    platform = load(runs, "platform.json")
    f.update(connect_floor(platform))
    f.update(broadcast_floor(platform, f["room_members"]))
    return f, env


def broadcast_floor(p, members):
    """The sends of one message to every member at strix-platform-probe's cost of a bare TCP send."""
    tcp = next((s for s in p.get("segments", []) if s["transport"] == "tcp"), None)
    if tcp is None or not tcp["ok"] or tcp["sends"] == 0:
        die("platform.json has no good TCP segment row")
    per_send_s = tcp["sender_cpu_s"] / tcp["sends"]
    return {
        "broadcast_floor_s": members * per_send_s,
        "send_floor_us": 1e6 * per_send_s,
        "send_floor_connections": p["connections"],
        "send_floor_bytes": p["size"],
    }


def connect_floor(p):
    """strix-platform-probe's connect ceiling: a bare accepter and connector, 0 and 2 round trips."""
    rows = {c["rounds"]: c for c in p.get("connects", [])}
    if 0 not in rows or 2 not in rows or not (rows[0]["ok"] and rows[2]["ok"]):
        die("platform.json has no good connect ceiling rows (0 and 2 round trips)")
    return {
        "connect_floor_per_s": round(rows[2]["connections_per_s"]),
        "connect_floor_handshake_per_s": round(rows[0]["connections_per_s"]),
        "connect_floor_connections": rows[2]["connections"],
        "connect_floor_connector_us": 1e6 * rows[2]["connector_cpu_s"] / rows[2]["connections"],
        "connect_floor_accepter_us": 1e6 * rows[2]["accepter_cpu_s"] / rows[2]["connections"],
    }


def plot(runs, out):
    samples = os.path.join(runs, "samples.txt")
    script = f"""
set title 'strix-chat-server: sessions and RSS, one sample a second'
set xlabel 'seconds'
set ylabel 'sessions'
set y2label 'RSS (MiB)'
set ytics nomirror
set y2tics
set key top left
plot '{samples}' using 1:2 every ::1 with lines lw 2 title 'server sessions', \\
     '' using 1:($3/1048576) every ::1 axes x1y2 with lines lw 2 title 'server RSS', \\
     '' using 1:($4/1048576) every ::1 axes x1y2 with lines lw 2 title 'strix-chat-hold RSS'
"""
    return run_gnuplot(script, os.path.join(out, "c1m.png"), 900, 450)


def markdown(f, env, runs, plot_error):
    limits = open(os.path.join(runs, "limits.txt")).read().strip().splitlines()
    sysctl = open(os.path.join(runs, "sysctl.txt")).read().strip().splitlines()
    kib = lambda b: f"{b / 1024:.2f} KiB"
    clients, rooms, rps, alone_s, held_for = (env.get("chat_workload", "0 0 0 0 0").split() + ["0"] * 5)[:5]
    rows = [
        ("connections", f"{f['connections']:,} ({f['transport']}; {f['requested']:,} asked)"),
        ("held_s", f"{f['held_s']} s (all held to the restart, the chat workload running for {held_for} s of it)"),
        ("connect_per_s", f"{f['connect_per_s']:,}"),
        ("connect_floor_per_s (strix-platform-probe)",
         f"{f['connect_floor_per_s']:,} with two 200/64-byte round trips, {f['connect_floor_handshake_per_s']:,} "
         f"with the handshake alone: a bare accept loop on CPU 0 and connector on CPU 1, "
         f"{f['connect_floor_connections']:,} held, before the server started; per connection "
         f"{f['connect_floor_connector_us']:.1f} us of the connector's CPU and {f['connect_floor_accepter_us']:.1f} us "
         f"of the accepter's (loopback runs the receiver's TCP work on the sender's CPU)"),
        ("server_rss_bytes", f"{f['server_rss_bytes'] / 1048576:.1f} MiB"),
        ("server_rss_per_conn", kib(f["server_rss_per_conn"])),
        ("kernel_bytes_per_conn", f"{kib(f['kernel_bytes_per_conn'])} (Slab {kib(f['kernel_slab_bytes_per_conn'])}"
                                  f" + TCP buffers {kib(f['kernel_tcp_mem_bytes_per_conn'])}; both sockets)"),
        ("client_rss_per_conn", f"{f['client_rss_per_conn']:.0f} B"),
        ("broadcast_all_s", f"{f['broadcast_all_s'] * 1000:.1f} ms first to last, to {f['room_members']:,} members "
                            f"(last delivery {f['broadcast_last_s'] * 1000:.1f} ms after the post)"),
        ("broadcast_floor_s (strix-platform-probe)",
         f"{f['broadcast_floor_s']:.2f} s: {f['room_members']:,} sends at {f['send_floor_us']:.2f} us of CPU 0 each, "
         f"a bare blocking send() loop of {f['send_floor_bytes']} bytes over {f['send_floor_connections']:,} "
         f"connections before the server started (the receiver's TCP work included, as loopback runs it on the "
         f"sender's CPU); the sends alone, on one CPU"),
        ("chat workload", f"{clients} clients in {rooms} rooms, {rps} messages/s each (seed 004's: 500, 10, 10)"),
        ("chat_p50_us / chat_p99_us (N idle)", f"{f['chat_p50_us']} / {f['chat_p99_us']} ({held_for} s)"),
        ("chat_p50 / chat_p99_alone_us (without them)", f"{f['chat_p50_alone_us']} / {f['chat_p99_alone_us']} ({alone_s} s)"),
        ("idle_cpu_pct (server)", f"{f['idle_cpu_pct']:.1f} %"),
        ("idle sweep: sessions looked at per s", f"{f['idle_sweep_sessions_per_s']:.1f} (list length "
                                                 f"{f['idle_sweep_listed']}; the N ping {f['pings_per_s']:.0f} times a "
                                                 f"second, each pinged session looked at about twice)"),
        ("reconnect_all_s", f"{f['reconnect_all_s']:.2f} s (first drop to all back, the server's stop and start "
                            f"included; then one message to all in {f['broadcast_after_reconnect_s'] * 1000:.1f} ms)"),
        ("lost / duplicated / out of order / corrupt / seq gaps",
         f"{f['lost']} / {f['duplicated']} / {f['out_of_order']} / {f['corrupt']} / {f['seq_gaps']}"),
        ("pings / pongs", f"{f['pings']:,} / {f['pongs']:,}"),
    ]
    lines = [f"# Connections per node ({f['transport']})", "",
             "| figure | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    lines += ["", f"Machine: {env['cpus']} CPUs ({env['cpu_model']}), {int(env['mem_total_kib']) // 1048576 + 1} GiB, "
              f"Linux {env['kernel']}; server and clients on it over loopback: the server's "
              f"{env.get('server_shards', '?')} shard(s) on CPU {env['server_cpus']}"
              + (f" (a descriptor table each: {env['fd_tables']} tables)" if int(env.get('fd_tables', 1)) > 1 else "")
              + f", strix-chat-hold and strix-chat-load on CPU {env['client_cpus']}.", "",
              "Limits met and kernel settings used:", ""]
    lines += [f"- {x}" for x in limits] + ["", "```"] + sysctl + ["```", ""]
    lines += ["Commands:", "", "```", open(os.path.join(runs, "server.cmd")).read().strip(),
              open(os.path.join(runs, "hold.cmd")).read().strip(),
              open(os.path.join(runs, "held.cmd")).read().strip(), "```", ""]
    lines.append("Plot: c1m.png (sessions and RSS every second)." if plot_error is None else f"No plot: {plot_error}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    f, env = figures(a.runs)
    plot_error = plot(a.runs, a.out)
    with open(os.path.join(a.out, "c1m.json"), "w") as out:
        json.dump(f, out, indent=2)
        out.write("\n")
    with open(os.path.join(a.out, "c1m.md"), "w") as out:
        out.write(markdown(f, env, a.runs, plot_error))


if __name__ == "__main__":
    main()
