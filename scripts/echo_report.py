#!/usr/bin/env python3
"""Writes one section's report (plain: <out>/echo.md and echo.png; tls: echo-tls.md; ws: echo-ws.md) from the
raw files of one scripts/bench-echo.sh run (docs/benchmarks.md). Failed runs are left out of the medians and
flagged; a cell with no passing run shows "failed". scripts/readme_tables.py copies sections into the README.
"""
import argparse
import datetime
import json
import os
import platform
import statistics

from report_common import cpu_model, die, run_gnuplot

FIELDS = ["msgs_in_per_s", "msgs_out_per_s", "mb_in_per_s", "mb_out_per_s",
          "server_cpu_pct", "server_rss_mib", "client_cpu_pct"]
ROLE_ORDER = {"strix": 0, "strix-base": 1, "reference": 2, "peer": 3, "baseline": 4}
SHORT = {"pinned": "pinned apart", "free": "client free"}
CPU_NOTE = ("Server CPU % is utime+stime over the measured window (100 % = one CPU); RSS is VmRSS at its end; "
            "client CPU % is the load tool's own.")


class Server:
    """A line of servers.txt: name|binary|arguments|role|status ('built', or 'not built|why')."""

    def __init__(self, line):
        self.name, self.binary, self.args, self.role, status = line.rstrip("\n").split("|", 4)
        self.built, self.why = status == "built", status.split("|", 1)[-1]


class Cell:
    """The runs of one server in one cell (layout, column and depth, or handshake kind)."""

    def __init__(self, runs, reps, stem):
        """Reads the runs <stem>_r1 ... <stem>_r<reps>."""
        self.rows = []      # passing JSON summaries
        self.failed = []    # reasons
        self.where = None   # server threads' CPUs, from the first run that recorded them
        for r in range(1, reps + 1):
            base = os.path.join(runs, f"{stem}_r{r}")
            if self.where is None and os.path.exists(base + ".where"):
                self.where = open(base + ".where").read().strip() or None
            if os.path.exists(base + ".failed"):
                self.failed.append(open(base + ".failed").read().strip())
            elif not os.path.exists(base + ".json"):
                self.failed.append(f"{os.path.basename(base)}.json is missing")
            elif (js := json.load(open(base + ".json"))).get("ok") and js.get("errors") == 0:
                self.rows.append(js)
            else:
                self.failed.append(f"ok={js.get('ok')}, errors={js.get('errors')}")

    def vals(self, field):
        return [r[field] for r in self.rows if r.get(field) is not None]

    def med(self, field="msgs_in_per_s"):
        return statistics.median(self.vals(field)) if self.vals(field) else None

    def spread(self, field="msgs_in_per_s", num=None, failed=True):
        """'median (slowest–fastest)', then how many runs failed; 'failed' when none passed."""
        vals, num = self.vals(field), num or (lambda v: fmt(v, sep=True))
        if not vals:
            return "failed"
        txt = f"{num(statistics.median(vals))} ({num(min(vals))}–{num(max(vals))})"
        return txt + (f", {len(self.failed)} failed" if failed and self.failed else "")

    def millions(self):
        return self.spread(num=lambda v: f"{v / 1e6:.3f}")

    def each_run(self):
        """Every passing run's msgs/s, then how many failed and why (each distinct reason once)."""
        each = ", ".join(f"{r['msgs_in_per_s']:,.0f}" for r in self.rows)
        if self.failed:
            each += ("; " if each else "") + f"{len(self.failed)} failed: " + "; ".join(dict.fromkeys(self.failed))
        return each

    def cpu_us_per_msg(self):
        """Server CPU microseconds per echoed message: the median run's CPU % over its msgs/s."""
        vals = sorted(r["server_cpu_pct"] / 100 / r["msgs_in_per_s"] * 1e6 for r in self.rows
                      if r.get("server_cpu_pct") is not None and r.get("msgs_in_per_s"))
        return vals[len(vals) // 2] if vals else None


def read_servers(runs, name):
    path = os.path.join(runs, name)
    return [Server(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


def fmt(v, digits=1, sep=False):
    return "n/a" if v is None else f"{v:,.0f}" if sep else f"{v:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


class Report:
    """One section's report: the run's servers and cells, and the Markdown lines written from them (L)."""
    name = title = runs_dir = default = ""
    parts = ()                  # the methods that write the report's sections after head(), in order
    targets = (1.0, 1.1)        # the default configuration against the best peer: depth 1, depths 16 and 128
    peers = ("peer",)           # the roles the best peer is chosen from
    console = ("## Summary",)   # the sections main() prints
    console_lines = ("|", "## ")
    shared_note = True          # the machine's load average line says the client and servers share the CPUs

    def __init__(self, a):
        self.a, self.L = a, []
        self.listed = read_servers(a.runs, "servers.txt")  # in the run's order; the report's tables sort them
        self.servers = sorted(self.listed, key=lambda s: ROLE_ORDER.get(s.role, 9))
        self.depths, self.layouts = [int(d) for d in a.depths.split()], a.layouts.split()
        self.has_strix = any(s.name == self.default and s.built for s in self.listed)

    def load(self, servers, layouts, columns, depths):
        return {(lay, col, s.name, d): Cell(self.a.runs, self.a.reps, f"{lay}_{col}_{s.name}_d{d}")
                for lay in layouts for col in columns for s in servers if s.built for d in depths}

    def best(self, roles, lay, col, d):
        """(name, median) of the fastest built server with one of these roles in a cell (the first of equals)."""
        meds = [(s.name, self.cells[(lay, col, s.name, d)].med()) for s in self.listed if s.built and s.role in roles]
        return max((m for m in meds if m[1] is not None), key=lambda m: m[1], default=(None, None))

    def default_med(self, lay, col, d):
        c = self.cells.get((lay, col, self.default, d))
        return c.med() if c else None

    def vs_best(self, lay, col, d, always=False):
        bn, bm = self.best(self.peers, lay, col, d)
        return f"{ratio(self.default_med(lay, col, d), bm)} ({bn})" if bn or always else "n/a"

    def target_row(self, lay, col, d, label):
        """A summary row: the default configuration's median against the best peer's, and the target."""
        dm = self.default_med(lay, col, d)
        bn, bm = self.best(self.peers, lay, col, d)
        want = self.targets[0 if d == 1 else 1]
        verdict = f"≥ {want}x: {'met' if dm / bm >= want else 'NOT met'}" if dm and bm else "n/a"
        return (f"| {SHORT[lay]} | {label} | {fmt(dm, sep=True)} | {fmt(bm, sep=True)} ({bn or 'n/a'}) "
                f"| {ratio(dm, bm)} | {verdict} |"), bm

    def head(self):
        """The title, where the figures come from and the machine."""
        a, now = self.a, datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        script = "scripts/bench-echo.sh" + ("" if a.section == "plain" else f" <build_dir> {a.section}")
        self.L += [f"# {self.title}", "",
                   f"Written by `{script}` on {now}. Every figure is the median of {a.reps} interleaved runs, with "
                   "the slowest and fastest run in brackets, read from this run's JSON files in "
                   f"`{self.runs_dir}/`. msgs/s means messages echoed back and verified per second.",
                   "", "## Machine", "", f"- CPUs (nproc): {len(os.sched_getaffinity(0))}",
                   f"- CPU model: {cpu_model()}", f"- Kernel: {platform.release()}",
                   f"- Load average when the run started: {a.loadavg}; when it ended: {a.loadavg_end}"
                   + (" (the client and the servers share these CPUs with anything else running)"
                      if self.shared_note else "")]

    def layouts_line(self):
        return "Layouts: " + "; ".join(
            (f"**pinned apart**: server on CPU {self.a.server_cpus}, client on CPU {self.a.client_cpus} (taskset)"
             if lay == "pinned" else "**client free**: no taskset") for lay in self.layouts) + "."

    def write(self):
        """Writes <out>/<name>.md from its parts, then prints its summary sections."""
        self.head()
        for part in self.parts:
            getattr(self, part)()
        out_md = os.path.join(self.a.out, self.name + ".md")
        with open(out_md, "w") as f:
            f.write("\n".join(self.L))
        if hasattr(self, "plot"):
            self.plot()  # after the report: the plot's .dat files are written there too
        print(f"echo_report: wrote {out_md}" + (" and echo.png" if self.name == "echo" else ""))
        on = False
        for line in self.L:
            on = line.startswith(self.console) if line.startswith("## ") else on
            if on and line.startswith(self.console_lines):
                print(line)


class PlainReport(Report):
    name, title, runs_dir, default = "echo", "Echo shoot-out (the Echo server shoot-out's method)", "echo-runs", "strix"
    peers, console = ("peer", "reference"), ("## Summary", "## Depth")
    parts = ("method", "where", "summary", "ab", "depth_tables", "cell_tables")

    def __init__(self, a):
        super().__init__(a)
        self.modes = a.modes.split()
        self.combos = [(lay, mode) for lay in self.layouts for mode in self.modes]
        self.cells = self.load(self.servers, self.layouts, self.modes, self.depths)
        # Any strix backend: its best one is in the summary even when the default was not measured.
        self.has_strix = any(s.role == "strix" and s.built for s in self.listed)
        targs = sorted({s.args.split()[1] for s in self.listed if s.built and s.role in ("reference", "peer")
                        and len(s.args.split()) > 1})
        self.threads_note = (f"strix its default (one shard per CPU), {targs[0]} for raw epoll, tokio and gnet, "
                             "20 for asio" if len(targs) == 1 else "see Method")

    def mode_title(self, mode):
        return {"multi": f"multi-threaded client ({self.a.client_threads} threads)",
                "loop": "independent single-threaded client (strix-echo-loop)"}.get(mode, "single-threaded client")

    def method(self):
        a, L = self.a, self.L
        L += ["", "## Method", "", "The Echo server shoot-out's test: 100 connections, 8-byte bodies behind a "
              "4-byte little-endian length, each message echoed with its own send() (the servers coalesce). Client "
              "command, per server, layout, client mode, depth and repetition:", "", "```",
              f"{a.command} --mode multi --threads {a.client_threads}   # multi-threaded client",
              f"{a.command} --mode single   # single-threaded client"]
        if "loop" in self.modes:
            L.append(a.command.replace("strix-echo-bench", "strix-echo-loop", 1) +
                     "   # independent single-threaded client")
        L += ["```", "", "Layouts:", ""]
        if "pinned" in self.layouts:
            L.append(f"- **pinned apart**: `taskset -c {a.server_cpus} <server> ...` and "
                     f"`taskset -c {a.client_cpus} strix-echo-bench ...`, the same CPU set for every server.")
        if "free" in self.layouts:
            L.append("- **client free**: no taskset; every server runs as it does by default (raw epoll pins thread i "
                     "to the i-th CPU it may use; strix (unless `--pin`), tokio, gnet and asio leave their threads to "
                     "the scheduler) and the client runs wherever the scheduler puts it.")
        L += ["", "Client modes: **multi**: `--mode multi`, worker threads each with their own epoll loop and a "
              "slice of the connections, plus a thread that samples once a second; **single**: `--mode single`, "
              "one thread and one epoll loop driving every connection and sampling between loop turns (an "
              "independent single-threaded pipelined client). In both, every connection keeps `depth` messages in "
              "flight, sends one more per echo, and checks every echoed byte, the count and the order." +
              (" **loop**: `strix-echo-loop` (bench/echo/echo_loop_client.cpp), an independent single-threaded "
               "client written the way a user writes one: one level-triggered epoll loop, and per readable event "
               "one read, the check of every whole echo it completes (length, connection and sequence number, "
               "body), and one write of as many new messages as came back; no batch-then-flush pass, no read "
               "until a short read." if "loop" in self.modes else ""),
              "", "Servers (each restarted for every run; within a repetition, layout, client mode and depth they "
              "run one after the other):", ""]
        for s in self.servers:
            what = {"strix": "the engine under test", "strix-base": "the engine at the A/B's baseline build",
                    "reference": "reference: a raw epoll loop with the same batching",
                    "peer": "peer",
                    "baseline": "naive baseline: the Echo server shoot-out's asio server"}.get(s.role, s.role)
            L.append(f"- **{s.name}** ({what}): "
                     + (f"`{os.path.basename(s.binary)} --port P {s.args}`" if s.built else f"**not built**: {s.why}"))
        L += ["", "tokio-echo (bench/peers/tokio-echo): tokio's multi-thread runtime, one task per connection, "
              "every complete frame of a read appended to one buffer and written with one `write_all`. gnet-echo "
              "(bench/peers/gnet-echo): gnet/v2 multicore engine, OnTraffic peeks the complete frames and writes "
              "them back with one `Write`. The **best peer** in a cell is the fastest of raw epoll, tokio and gnet "
              "by median; the naive asio server is shown but is not a peer. Targets: the default "
              "configuration (strix) at least {}x the best peer at depth 1 and {}x at depths 16 and 128."
              .format(*self.targets), ""]

    def where(self):
        L = self.L
        L += ["## Where each process ran", "", "The CPUs each server thread was allowed to run on (its "
              "`Cpus_allowed_list`, read at the end of the first run of the cell), and the client's.", "",
              "| layout | server | server threads | " + " | ".join(f"client ({m})" for m in self.modes) + " |",
              "|---|---|---|" + "---|" * len(self.modes)]
        for lay in self.layouts:
            for s in (s for s in self.listed if s.built):
                cells = {m: [self.cells[(lay, m, s.name, d)] for d in self.depths] for m in self.modes}
                where = next((c.where for m in self.modes for c in cells[m] if c.where), "unknown")
                client = (self.client_where([r for c in cells[m] for r in c.rows]) for m in self.modes)
                L.append(f"| {SHORT[lay]} | {s.name} | {where} | " + " | ".join(client) + " |")
        L.append("")

    @staticmethod
    def client_where(rows):
        """'N thread(s) on CPUS' of the client, from the runs' JSON summaries."""
        thr = sorted({r.get("client_threads", "?") for r in rows})
        cpus = sorted({r.get("client_cpus", "?") for r in rows})
        return f"{thr[0]} thread{'s' if thr[0] != 1 else ''} on {', '.join(cpus)}" if rows else "n/a"

    def summary(self):
        if not self.has_strix:
            return
        self.L += ["## Summary: the default configuration against the best peer", "",
                   "strix is strix-echo-server as a user starts it (no option but --port: io_uring where the kernel "
                   "allows it, one shard per CPU). Targets: at least {}x the best peer (tokio, gnet, raw epoll) at "
                   "depth 1 and {}x at depths 16 and 128. strix's best backend is shown beside it."
                   .format(*self.targets), "",
                   "| layout | client | depth | strix (default) msgs/s | best peer msgs/s | default / best peer | "
                   "target | strix best backend | best / best peer |", "|---|---|---:|---:|---:|---:|---|---|---:|"]
        for lay, mode in self.combos:
            for d in self.depths:
                row, bm = self.target_row(lay, mode, d, f"{mode} | {d}")
                sn, st = self.best(("strix",), lay, mode, d)
                self.L.append(f"{row} {fmt(st, sep=True)} ({sn or 'n/a'}) | {ratio(st, bm)} |")
        self.L.append("")

    def ab(self):
        built = {s.name for s in self.servers if s.built}
        pairs = [(a, a + "-base") for a in ("strix", "strix-epoll") if a in built and a + "-base" in built]
        if not pairs:
            return
        self.L += ["## A/B: this build against the baseline build", "",
                   "Each server of this build beside the same server from ECHO_BASELINE_BIN, in the same "
                   "interleaved run: median (min–max), million msgs/s, and the ratio of the medians.", "",
                   "| layout | client | depth | " + " | ".join(f"{a} | {b} | ratio" for a, b in pairs) + " |",
                   "|---|---|---:|" + "---:|---:|---:|" * len(pairs)]
        for lay, mode in self.combos:
            for d in self.depths:
                row = []
                for a, b in pairs:
                    ca, cb = self.cells[(lay, mode, a, d)], self.cells[(lay, mode, b, d)]
                    row += [ca.millions(), cb.millions(), ratio(ca.med(), cb.med())]
                self.L.append(f"| {SHORT[lay]} | {mode} | {d} | " + " | ".join(row) + " |")
        self.L.append("")

    def depth_tables(self):
        a, L, short = self.a, self.L, {"multi": "multi client", "loop": "loop client"}
        for d in self.depths:
            L += [f"## Depth {d}", "", f"Million msgs/s echoed at depth {d}, median of {a.reps} runs (min–max); "
                  f"server threads: {self.threads_note}; pinned apart = server on CPU {a.server_cpus}, client on CPU "
                  f"{a.client_cpus}; multi client = {a.client_threads} client threads.", "",
                  "| server | " + " | ".join(f"{SHORT[l]}, {short.get(m, 'single client')}" for l, m in self.combos)
                  + " |", "|---|" + "---:|" * len(self.combos)]
            L += [f"| {s.name} | " + " | ".join(self.cells[(l, m, s.name, d)].millions() if s.built else "not built"
                                                for l, m in self.combos) + " |" for s in self.servers]
            if self.has_strix:
                raw = [self.cells.get((l, m, "raw-epoll", d)) for l, m in self.combos]
                L += ["| **strix (default) / best peer** | " + " | ".join(self.vs_best(l, m, d) for l, m in self.combos)
                      + " |", "| **strix (default) / raw epoll** | " + " | ".join(
                          ratio(self.default_med(l, m, d), rc.med() if rc else None)
                          for (l, m), rc in zip(self.combos, raw)) + " |"]
            L.append("")

    def cell_tables(self):
        a, L = self.a, self.L
        for lay, mode in self.combos:
            where = (f"Client pinned apart (server on CPU {a.server_cpus}, client on CPU {a.client_cpus})"
                     if lay == "pinned" else "Client free (no taskset; servers as they run by default)")
            L += [f"## {where}, {self.mode_title(mode)}", "",
                  "| server | depth | msgs/s median (min–max) | msgs/s out | MB/s in | server CPU % | RSS MiB "
                  "| client CPU % | vs best peer | vs raw epoll | msgs/s, each run |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
            for s in self.servers:
                if not s.built:
                    L.append(f"| {s.name} | all | not built | | | | | | | | |")
                    continue
                for d in self.depths:
                    c = self.cells[(lay, mode, s.name, d)]
                    m = {f: c.med(f) for f in FIELDS}
                    bm = self.best(self.peers, lay, mode, d)[1]
                    rc = self.cells.get((lay, mode, "raw-epoll", d))
                    L.append(f"| {s.name} | {d} | {c.spread(failed=False)} | {fmt(m['msgs_out_per_s'], sep=True)} | "
                             f"{fmt(m['mb_in_per_s'], 2)} | {fmt(m['server_cpu_pct'])} | {fmt(m['server_rss_mib'])} | "
                             f"{fmt(m['client_cpu_pct'])} | {ratio(m['msgs_in_per_s'], bm)} | "
                             f"{ratio(m['msgs_in_per_s'], rc.med() if rc else None)} | {c.each_run()} |")
            L.append("")
        self.L += ["MB/s counts wire bytes (4-byte header + body), 1 MB = 10^6 bytes. msgs/s out counts messages "
                   "whose last byte the client wrote. Server CPU % is utime+stime over the measured window "
                   "(100 % = one CPU); RSS is VmRSS at the end of the window; client CPU % is the load tool's own.",
                   "", "## Plot", "",
                   "![msgs/s echoed by depth, one panel per layout and client mode, one line per server](echo.png)",
                   ""]

    def plot(self):
        """echo.png: one panel per layout and client mode, median msgs/s by depth, one line per server."""
        built, plots = [s for s in self.servers if s.built], []
        for lay, mode in self.combos:
            dat = os.path.join(self.a.out, f"echo-plot-{lay}-{mode}.dat")
            with open(dat, "w") as f:
                f.write("depth " + " ".join(s.name for s in built) + "\n")
                for d in self.depths:
                    vals = [self.cells[(lay, mode, s.name, d)].med() for s in built]
                    f.write(f"{d} " + " ".join("NaN" if v is None else f"{v:.0f}" for v in vals) + "\n")
            plots.append(f"\nset title '{SHORT[lay]}, {self.mode_title(mode)}'\nplot for [i=2:{len(built) + 1}] "
                         f"'{dat}' using 1:i with linespoints lw 2 pt 7 title columnheader(i)\n")
        cols = 2 if len(self.combos) > 1 else 1
        rows = (len(self.combos) + cols - 1) // cols
        why = run_gnuplot(f"""
set multiplot layout {rows},{cols} title 'Echo shoot-out: 100 connections, 8-byte bodies (median msgs/s echoed)'
set xlabel 'messages in flight per connection (depth)'
set ylabel 'messages/s'
set logscale xy
set xrange [0.7:{max(self.depths) * 1.4}]
set xtics ({", ".join(f'"{d}" {d}' for d in self.depths)})
set format y '%.0s%c'
set grid
set key left top
{''.join(plots)}
unset multiplot
""", os.path.join(self.a.out, "echo.png"), 560 * cols, 420 * rows)
        if why:
            die(why)


class TlsReport(Report):
    name, title, runs_dir, default = "echo-tls", "Echo shoot-out over TLS", "echo-tls-runs", "strix-tls"
    console = ("## Summary", "## Echo over TLS", "## Handshakes")
    parts = ("method", "echo", "handshakes", "every_run")

    def __init__(self, a):
        super().__init__(a)
        hs_file = os.path.join(a.runs, "handshake-args.txt")
        self.hs_args = (dict(line.rstrip("\n").split("|", 1) for line in open(hs_file) if "|" in line)
                        if os.path.exists(hs_file) else {})
        self.kinds = a.kinds.split()
        self.cells = self.load(self.servers, self.layouts, ["multi"], self.depths)
        self.hs = {(s.name, kind): Cell(a.runs, a.reps, f"hs_{kind}_{s.name}")
                   for s in self.listed if s.built for kind in self.kinds}

    def method(self):
        a, L = self.a, self.L
        key = {"ec": "ECDSA P-256", "rsa": "RSA 2048"}.get(a.key, a.key)
        L += ["", "## Method", "", "The plain shoot-out's test (100 connections, 8-byte bodies behind a 4-byte "
              f"little-endian length, each message echoed on its own) over TLS: a throwaway CA and a server "
              f"certificate ({key}) for 127.0.0.1 (CERT, KEY) from `bench/echo/echo_tls_cert.sh`, verified by the "
              "client (chain and IP address) on every connection. Echo runs (multi-threaded client, OpenSSL 3 over "
              "the same epoll loop, one `SSL_write` of a connection's pending messages per loop turn):",
              "", "```", a.command, "```", "",
              "Handshake runs: every connection does a full or resumed handshake (`--resume` offers the session "
              "from the slot's previous connection, a TLS 1.3 ticket), one verified echo, then close_notify and "
              "close. The server runs one thread (`--threads 1`, strix `--shards 1`)"
              + (f" on CPU {a.server_cpus} (taskset), the client on CPU {a.client_cpus}"
                 if a.hs_pinned == "1" else ", unpinned (no taskset or one CPU)") + ":",
              "", "```", a.hs_command, "```", ""]
        if a.hs_pinned == "1":
            L += ["**Per core:** handshakes/s is what one server core did while the client (one core, OpenSSL 3.0, "
                  "which spends more CPU per handshake than the servers) kept it busy; handshakes per server "
                  "CPU-second (handshakes over the server's utime+stime in the window) is what a saturated core "
                  "would do.", ""]
        L += [self.layouts_line(), "", "Servers:", ""]
        for s in self.servers:
            what = "the engine under test" if s.role == "strix" else "peer"
            L.append(f"- **{s.name}** ({what}): " + (f"echo `{os.path.basename(s.binary)} --port P {s.args}`; "
                                                     f"handshakes `... {self.hs_args.get(s.name, '')}`"
                                                     if s.built else f"**not built**: {s.why}"))
        L += ["", "tokio-tls-echo (bench/peers/tokio-tls-echo): tokio-echo behind tokio-rustls (rustls 0.23, "
              "aws-lc-rs), one task per connection, one `write_all` + `flush` per read. go-tls-echo "
              "(bench/peers/go-tls-echo): Go crypto/tls on net, one goroutine per connection, one `Write` per read, "
              "GOMAXPROCS = --threads. Both: TLS 1.2 and 1.3, session tickets. Every server picks the TLS 1.3 "
              "cipher suite by its own preference, as its users get it; negotiated (as the client reported it):", ""]
        for s in (s for s in self.servers if s.built):
            rows = [r for k, c in self.cells.items() if k[2] == s.name for r in c.rows]
            rows += [r for k, c in self.hs.items() if k[0] == s.name for r in c.rows]
            L.append(f"- {s.name}: " + (", ".join(sorted({r.get("tls_session") or "?" for r in rows})) or "n/a"))
        L.append("")

    def echo(self):
        L = self.L
        if self.has_strix:
            L += ["## Summary: strix over TLS against the best TLS peer", "",
                  "Targets: at least {}x the best TLS peer (tokio-tls, go-tls) at depth 1 and {}x at "
                  "depths 16 and 128.".format(*self.targets), "",
                  "| layout | depth | strix-tls msgs/s | best TLS peer msgs/s | strix-tls / best | target |",
                  "|---|---:|---:|---:|---:|---|"]
            L += [self.target_row(lay, "multi", d, d)[0] for lay in self.layouts for d in self.depths]
            L.append("")
        L += ["## Echo over TLS", "", f"Million msgs/s echoed, median of {self.a.reps} runs (min–max); multi "
              f"client = {self.a.client_threads} client threads.", "",
              "| server | depth | " + " | ".join(SHORT[l] for l in self.layouts) + " |",
              "|---|---:|" + "---:|" * len(self.layouts)]
        for d in self.depths:
            for s in self.servers:
                row = (self.cells[(y, "multi", s.name, d)].millions() if s.built else "not built" for y in self.layouts)
                L.append(f"| {s.name} | {d} | " + " | ".join(row) + " |")
            if self.has_strix:
                L.append(f"| **strix-tls / best TLS peer** | {d} | "
                         + " | ".join(self.vs_best(lay, "multi", d) for lay in self.layouts) + " |")
        L.append("")

    def handshakes(self):
        if not self.kinds:
            return
        self.L += ["## Handshakes", "", "Per server: handshakes/s (each with one verified echo) and handshakes per "
                   f"second of server CPU time, median (min–max) of {self.a.reps} runs; the share resumed "
                   "(SSL_session_reused) and the server's and client's CPU %, medians.", "",
                   "| server | kind | handshakes/s | per server CPU-second | resumed | server CPU % | client CPU % |",
                   "|---|---|---:|---:|---:|---:|---:|"]
        for s in self.servers:
            for kind in self.kinds:
                c = self.hs.get((s.name, kind))
                rp = c.med("resumed_pct") if c else None
                self.L.append(f"| {s.name} | {kind} | not built | | | | |" if not c else
                              f"| {s.name} | {kind} | {c.spread('handshakes_per_s')} "
                              f"| {c.spread('handshakes_per_server_cpu_s')} | {'n/a' if rp is None else f'{rp:.1f} %'} "
                              f"| {fmt(c.med('server_cpu_pct'))} | {fmt(c.med('client_cpu_pct'))} |")
        self.L.append("")

    def every_run(self):
        L = self.L
        L += ["## Every run", "", "| layout | server | depth | msgs/s median (min–max) | server CPU % | RSS MiB "
              "| client CPU % | server threads | msgs/s, each run |", "|---|---|---:|---|---:|---:|---:|---|---|"]
        for lay in self.layouts:
            for s in (s for s in self.servers if s.built):
                for d in self.depths:
                    c = self.cells[(lay, "multi", s.name, d)]
                    L.append(f"| {SHORT[lay]} | {s.name} | {d} | {c.spread(failed=False)} "
                             f"| {fmt(c.med('server_cpu_pct'))} | {fmt(c.med('server_rss_mib'))} "
                             f"| {fmt(c.med('client_cpu_pct'))} | {c.where or 'n/a'} | {c.each_run()} |")
        for (name, kind), c in self.hs.items():
            if c.failed:
                L += ["", f"Handshakes, {name}, {kind}: {len(c.failed)} failed: " + "; ".join(dict.fromkeys(c.failed))]
        L += ["", CPU_NOTE, ""]


class WsReport(Report):
    name, title, runs_dir, default = "echo-ws", "WebSocket echo shoot-out", "echo-ws-runs", "strix-ws"
    targets, console, console_lines = (1.0, 1.2), ("## Summary", "## Echo", "## Broadcast"), ("|", "#", "**")
    parts, shared_note = ("method", "summary", "echo", "broadcast", "every_run"), False

    def __init__(self, a):
        super().__init__(a)
        self.bc_servers = read_servers(a.runs, "bc-servers.txt")
        self.bc_depths, self.sizes = [int(d) for d in a.bc_depths.split()], [int(s) for s in a.sizes.split()]
        self.cells = self.load(self.servers, self.layouts, [f"s{s}" for s in self.sizes], self.depths)
        self.bc = self.load(self.bc_servers, ["bc"], ["s64"], self.bc_depths) if a.broadcast != "0" else {}

    @staticmethod
    def server_line(s):
        if not s.built:
            return f"- **{s.name}**: " + ("**pending**: " + s.why[9:] if s.why.startswith("pending: ")
                                          else f"**not built**: {s.why}")
        return (f"- **{s.name}** ({'the engine under test' if s.role == 'strix' else 'peer'}): "
                f"`{' '.join([os.path.basename(s.binary), '--port P', s.args]).strip()}`")

    def ms_and_us(self, s, key, digits, cpu=False):
        """The cells after a row's name: million msgs/s, (server CPU %,) server CPU µs per message."""
        if not s.built:
            return ("pending" if "pending" in s.why else "not built") + (" | | |" if cpu else " | |")
        c = (self.bc if key[0] == "bc" else self.cells)[key]
        us = c.cpu_us_per_msg()
        return (f"{c.millions()} | " + (f"{fmt(c.med('server_cpu_pct'))} | " if cpu else "")
                + ("n/a" if us is None else f"{us:.{digits}f}") + " |")

    def method(self):
        self.L += [
            "- **The client and the server share these CPUs** (and with anything else running): every figure is "
            "what the server did while the load tool took the rest, not a server's ceiling.", "", "## Method", "",
            "One load tool for every server, so none gets a friendlier client: `strix-echo-bench --ws` "
            "(bench/echo/echo_ws.cpp). Each connection does the HTTP/1.1 upgrade (its Sec-WebSocket-Accept checked), "
            "then keeps D binary messages in flight: each message is one FIN frame, masked with a new key per frame "
            "as RFC 6455 requires, whose payload (S bytes) is a pattern made once per run and stamped with the "
            "connection and the message's number at its head and tail (so an echo sent to the wrong connection, out "
            "of order or spliced fails); every echo must come back as a binary message with exactly those bytes, in "
            "order, or the run fails. Each received echo sends the next message; a connection's pending frames go "
            "out with one write per loop turn, or at once when they reach 32 KiB.",
            "", "```", self.a.command, "```", "", self.layouts_line(), "", "Servers:", ""]
        self.L += [self.server_line(s) for s in self.servers]
        self.L += [
            "", "How each peer is written (bench/peers/): **fastwebsockets** 0.10 as its README sets it up: hyper 1 "
            "serves the request, `upgrade::upgrade` answers 101, a `FragmentCollector` reads whole messages and "
            "`write_frame` writes each echo; its frames go through a small buffer of ours that is sent when a read "
            "would wait (fastwebsockets has no batching API; without it, `--per-frame-writes`, it does one write per "
            "message and runs about 10x slower at depth 128 in our trials). **tungstenite**: tokio-tungstenite 0.30, "
            "`accept_async`, every message already readable is fed to the sink and the sink flushed once when the "
            "stream would wait (what `StreamExt::forward` does). **gobwas**: gobwas/ws v1.5.0's low-level API "
            "(`ws.Upgrade` on the net.Conn, `ReadHeader`, `Cipher`, `WriteHeader`), a goroutine per connection, "
            "bufio writer flushed before a read that would block. All three on all the CPUs the process may use "
            "(tokio worker threads, GOMAXPROCS); 64 KiB message limit.", ""]

    def summary(self):
        L = self.L
        L += ["## Summary: strix against the best WebSocket peer", ""]
        if not self.has_strix:
            why = next((s.why.removeprefix("pending: ") for s in self.listed if s.name == self.default),
                       "strix-ws was not asked for (ECHO_WS_SERVERS)")
            L += [f"**strix: pending.** {why}. The peers' figures below are the bar strix has to meet (targets: "
                  "1.0x the best peer at depth 1, 1.2x at depths 16 and 128).", ""]
            return
        L += ["Targets: at least {}x the best peer (fastwebsockets, tungstenite, gobwas) at depth 1 and "
              "{}x at depths 16 and 128.".format(*self.targets), "",
              "| layout | payload | depth | strix-ws msgs/s | best peer msgs/s | strix / best | target |",
              "|---|---:|---:|---:|---:|---:|---|"]
        L += [self.target_row(lay, f"s{size}", d, f"{size} B | {d}")[0]
              for lay in self.layouts for size in self.sizes for d in self.depths]
        L.append("")

    def echo(self):
        L = self.L
        L += ["## Echo", "", f"Million msgs/s echoed, median of {self.a.reps} runs (min–max); server CPU µs per "
              "message (server CPU time over messages, median run) in the last column; client = "
              f"{self.a.client_threads} threads."]
        for lay in self.layouts:
            L += ["", f"### {SHORT[lay]}", "", "| server | payload | depth | M msgs/s | server CPU µs/msg |",
                  "|---|---:|---:|---|---:|"]
            for size in self.sizes:
                for d in self.depths:
                    for s in self.servers:
                        L.append(f"| {s.name} | {size} B | {d} | " + self.ms_and_us(s, (lay, f"s{size}", s.name, d), 2))
                    if self.has_strix:
                        L.append(f"| **strix-ws / best peer** | {size} B | {d} | "
                                 f"{self.vs_best(lay, f's{size}', d, always=True)} | |")
        L.append("")

    def broadcast(self):
        if self.a.broadcast == "0":
            return
        L = self.L
        L += ["## Broadcast", "",
              "Every client sends, every client receives every message: each of the connections keeps D of its own "
              "64-byte messages in flight (a message counts as back when the broadcast brings it to its sender), and "
              "every connection must receive every connection's messages, each sender's in order, none lost or twice "
              "(checked at the end against each sender's count). msgs/s counts deliveries (messages received by a "
              "client); sends are deliveries / connections.",
              "", "```", self.a.bc_command, "```", "", "Servers (client free, no taskset):", ""]
        L += [self.server_line(s) for s in self.bc_servers]
        L += ["", "strix-ws-broadcast-server (bench/echo/ws_broadcast_server.cpp): each shard keeps its WebSocket "
              "sessions in a hub (sharded<hub>); a message is encoded once (ws_encode: header + payload in one shared "
              "buffer) and handed to every shard's hub through the mesh (invoke_on_all), whose members each queue the "
              "same buffer for the turn's gather write; a member whose queue passes 16 MiB is dropped as a slow "
              "consumer (none was in our trials).", "",
              "Decision: the broadcast test measures strix and one peer, gobwas (gobwas-echo --broadcast: each "
              "message's frame built once, handed to a writer goroutine per client that flushes when its queue is "
              "empty; a full queue blocks the sender, so nothing is dropped). A broadcast server is an application, "
              "not a library feature: each peer needs a hub we write, and what is measured is the fan-out (one "
              "encode, N writes), which one good peer shows. gobwas is the best peer in most echo cells of our "
              "trials, and its low-level API leaves the least of our code in the path.", "",
              "| server | depth | M deliveries/s | server CPU % | server CPU µs/delivery |", "|---|---:|---|---:|---:|"]
        L += [f"| {s.name} | {d} | " + self.ms_and_us(s, ("bc", "s64", s.name, d), 3, cpu=True)
              for d in self.bc_depths for s in self.bc_servers]
        L.append("")

    def every_run(self):
        self.L += ["## Every run", "", "| layout | server | payload | depth | msgs/s, each run | server CPU % "
                   "| RSS MiB | client CPU % | server threads |", "|---|---|---:|---:|---|---:|---:|---:|---|"]
        rows = [(SHORT[lay], s, size, self.cells[(lay, f"s{size}", s.name, d)], d) for lay in self.layouts
                for s in self.servers if s.built for size in self.sizes for d in self.depths]
        rows += [("broadcast", s, 64, self.bc[("bc", "s64", s.name, d)], d)
                 for s in self.bc_servers if s.built and self.a.broadcast != "0" for d in self.bc_depths]
        for lay, s, size, c, d in rows:
            self.L.append(f"| {lay} | {s.name} | {size} B | {d} | {c.each_run()} | {fmt(c.med('server_cpu_pct'))} "
                          f"| {fmt(c.med('server_rss_mib'))} | {fmt(c.med('client_cpu_pct'))} | {c.where or 'n/a'} |")
        self.L += ["", CPU_NOTE, ""]


def main():
    sections = {"plain": PlainReport, "tls": TlsReport, "ws": WsReport}
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--section", choices=sorted(sections), default="plain")
    ap.add_argument("--reps", type=int, required=True)
    for a in ("--runs", "--out", "--depths", "--command"):
        ap.add_argument(a, required=True)
    # Where the run ran, then each section's own: plain --modes (client modes); tls --kinds (handshake
    # kinds), --hs-command, --hs-pinned, --key; ws --sizes, --broadcast, --bc-depths, --bc-command.
    for a in ("--layouts=pinned free", "--client-threads=?", "--server-cpus=?", "--client-cpus=?",
              "--loadavg=unknown", "--loadavg-end=unknown", "--modes=multi single loop", "--kinds=full resumed",
              "--hs-command=", "--hs-pinned=0", "--key=ec", "--sizes=64 1024", "--broadcast=1", "--bc-depths=1 16",
              "--bc-command="):
        ap.add_argument(a.split("=")[0], default=a.split("=", 1)[1])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sections[args.section](args).write()


if __name__ == "__main__":
    main()
