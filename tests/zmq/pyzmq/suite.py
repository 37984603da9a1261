#!/usr/bin/env python3
"""Runs pyzmq's own test suite (pytest.ini and tests/ from its sdist, unchanged) with a venv's
python, bounded in time, and writes the outcome of every test. Called by run.sh.

  suite.py --python <venv>/bin/python --tests <dir with pytest.ini, tests/> --out <dir>
           --name <strix|libzmq> --junit <file> --summary <file> [--budget 600] [--test-timeout 30]

pytest runs with outcome_log.py (this folder) recording each test as it ends, and with
pytest-timeout's thread method: a test still running after --test-timeout seconds gets its
stacks printed and ends the pytest process (pyzmq's own SIGALRM bound is 60 s; a hung test
left in the process would make the next ones fail too). A process that ends that way, or
crashes in the library, or hangs past the plugin's watchdog, is resumed after the test it was
running, which counts as failed with those stacks as its text. Tests that fail or error in a
process that goes on (and those that ended it, when there are at most --retry-ended) are then
run once more in a fresh process: some of pyzmq's tests sleep a fixed time for a connection or
subscribe and publish at once, and a loaded machine loses those races. A test that passes on that
retry counts as passed and is listed as such. Each test counts once: failed (its call failed,
or it ended its process), error (setup or teardown failed, or it was not run before the time
bound), skipped or passed; a module that fails to import counts as one error.
With --baseline (run.sh gives the strix run the libzmq run's outcomes.json), each test that
passed there is bounded by five times its duration there, 10 s at least (and --test-timeout at
most): against a library that hangs, a hang costs seconds. Five, not three: strix receives a
2 GiB message (test_large_send) in about 2.6 times libzmq's time, and on a loaded machine three
times left it no margin (17.1 s against 17.1 s in one make test run). After --group-limit tests of one class (or of one module's plain
functions) ended their process, the rest of that group is not run and counts as errors.

Writes <out>/outcomes.json (compare.py reads it), the JUnit XML, and the summary file whose first
line is `pyzmq suite against <name>: P passed, F failed, S skipped, E errors`.
Exit 0: the suite ran and some tests passed; 1: pytest could not run it.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


class Segment:
    """What one pytest process recorded in the outcome log."""

    def __init__(self, records, rc, log_path):
        self.rc = rc
        self.log_path = log_path
        self.collected = None
        self.collect_errors = {}
        self.collect_skips = {}
        self.reports = {}
        self.started = []
        self.finished = set()
        self.hung = None
        self.session_end = None
        for r in records:
            if "collected" in r:
                self.collected = r["collected"]
            elif "collect_error" in r:
                self.collect_errors[r["collect_error"]] = r["text"]
            elif "collect_skip" in r:
                self.collect_skips[r["collect_skip"]] = r["text"]
            elif "start" in r:
                self.started.append(r["start"])
                self.reports[r["start"]] = []
            elif "report" in r:
                self.reports.setdefault(r["report"], []).append(r)
            elif "finish" in r:
                self.finished.add(r["finish"])
            elif "hung" in r:
                self.hung = r
            elif "session_end" in r:
                self.session_end = r["session_end"]

    def verdicts(self):
        return {n: verdict(self.reports[n]) for n in self.started if n in self.finished}

    def in_flight(self):
        return next((n for n in reversed(self.started) if n not in self.finished), None)

    def timed_out(self):
        """The test pytest-timeout named when it ended the process. It may have finished in
        the meantime (the timer fires as its teardown ends): it still ran past its bound."""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            match = re.search(r"^(tests/\S+::\S+) \+{5,} Timeout \+{5,}$", f.read(), re.M)
        return match.group(1) if match else None


def verdict(reports):
    """One test's outcome from its setup/call/teardown reports (the last attempt's, when
    pytest-rerunfailures reran it)."""
    last_rerun = max((i for i, r in enumerate(reports) if r["outcome"] == "rerun"), default=-1)
    by_when = {r["when"]: r for r in reports[last_rerun + 1 :]}
    setup, call, teardown = (by_when.get(w) for w in ("setup", "call", "teardown"))
    duration = sum(r["duration"] for r in by_when.values())
    if call and call["outcome"] == "failed":
        return {"outcome": "failed", "text": call["text"], "duration": duration}
    for phase in (setup, teardown):
        if phase and phase["outcome"] == "failed":
            return {"outcome": "error", "text": f"{phase['when']}: {phase['text']}", "duration": duration}
    for phase in (setup, call):
        if phase and phase["outcome"] == "skipped":
            return {"outcome": "skipped", "text": phase["text"], "duration": duration}
    if call and call["outcome"] == "passed":
        return {"outcome": "passed", "text": "", "duration": duration}
    return {"outcome": "error", "text": "the test reported no call phase", "duration": duration}


def tail(path, lines=40):
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])


NOISE = re.compile(r'^\s+File "[^"]*(/_pytest/|/pluggy/|/pytest/__main__\.py|<frozen runpy>|/pytest_timeout\.py|/outcome_log\.py)')


def tracebacks(path, lines=80):
    """The stacks a dead pytest printed (faulthandler's or pytest-timeout's), from their first
    line, without pytest's own frames; else the end of its output."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read().splitlines()
    start = next((i for i, line in enumerate(text)
                  if re.match(r"(Fatal Python error|Thread 0x|Current thread 0x)", line)
                  or re.search(r"\+{5,} Timeout \+{5,}", line)), None)
    if start is None:
        return "\n".join(text[-40:])
    kept, skip_code = [], False
    for line in text[start:]:
        if skip_code and line.startswith("    "):
            skip_code = False
            continue
        skip_code = False
        if NOISE.match(line):
            skip_code = bool(re.search(r", line \d+, in ", line))  # pytest-timeout prints the code line
            continue
        kept.append(line)
    return "\n".join(kept[:lines])


class Runner:
    """Runs pytest processes one after the other, under one deadline (--budget)."""

    def __init__(self, args):
        self.args = args
        self.deadline = time.monotonic() + args.budget
        self.segments = 0
        self.log = os.path.join(args.out, "outcomes.jsonl")
        self.skip_file = os.path.join(args.out, "done.txt")
        self.pytest_cmd = [args.python, "-m", "pytest", "-p", "outcome_log", "-p", "no:cacheprovider",
                           "-v", "-rfE", "--continue-on-collection-errors", f"--timeout={args.test_timeout}",
                           "--timeout-method=thread",
                           f"--basetemp={os.path.join(args.out, 'tmp')}"]
        self.env = dict(os.environ)
        # The venv's RUNPATH alone picks the library pyzmq was built against.
        self.env.pop("LD_LIBRARY_PATH", None)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))
        # Bytecode (of the plugin here too) goes to the build tree, not the source tree.
        self.env["PYTHONPYCACHEPREFIX"] = os.path.join(args.out, "pycache")
        self.env["PYZMQ_OUTCOME_LOG"] = self.log
        self.env["PYZMQ_SKIP_FILE"] = self.skip_file
        self.env["PYZMQ_HANG_SECONDS"] = str(args.test_timeout + 30)
        self.ended = {}
        self.bounds = {}
        if args.baseline:
            self.env["PYZMQ_TIMEOUTS"] = self.timeouts_from(args.baseline)

    def timeouts_from(self, baseline):
        """Per-test bounds from the baseline run's durations: --timeout-factor times as long, at
        least --min-timeout, at most --test-timeout. Written to a file for the plugin."""
        with open(baseline, encoding="utf-8") as f:
            tests = json.load(f)["tests"]
        a = self.args
        bounds = {n: round(min(a.test_timeout, max(a.min_timeout, a.timeout_factor * t["duration"])), 1)
                  for n, t in tests.items() if t["outcome"] == "passed"}
        self.bounds = bounds
        path = os.path.join(a.out, "timeouts.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(bounds, f, indent=0, sort_keys=True)
        return path

    def segment(self, targets, done):
        """Runs pytest once on targets, leaving out the tests in done; None when out of time."""
        remaining = int(self.deadline - time.monotonic())
        if remaining < 10:
            return None
        self.segments += 1
        with open(self.skip_file, "w", encoding="utf-8") as f:
            f.write("".join(n + "\n" for n in done))
        start = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        log_path = os.path.join(self.args.out, f"pytest-{self.segments}.log")
        with open(log_path, "w", encoding="utf-8") as out:
            rc = subprocess.run(["timeout", "-k", "10", str(remaining), *self.pytest_cmd, *targets],
                                cwd=self.args.tests, env=self.env, stdout=out, stderr=subprocess.STDOUT).returncode
        with open(self.log, encoding="utf-8") as f:
            f.seek(start)
            records = [json.loads(line) for line in f if line.strip()]
        return Segment(records, rc, log_path)

    def phase(self, targets, explicit):
        """Runs targets to the end, resuming after each test that ended its process.
        Returns (verdicts, collected ids or None, modules that failed to import or were skipped)."""
        results, collected, modules = {}, None, {}
        while True:
            todo = [t for t in targets if t not in results] if explicit else targets
            if not todo:
                break
            seg = self.segment(todo, results.keys())
            if seg is None:
                break
            if collected is None:
                collected = seg.collected
            modules.update({n: {"outcome": "error", "duration": 0.0, "text": "collection: " + t}
                            for n, t in seg.collect_errors.items()})
            modules.update({n: {"outcome": "skipped", "duration": 0.0, "text": t}
                            for n, t in seg.collect_skips.items()})
            progress = seg.verdicts()
            results.update(progress)
            if seg.session_end is not None:
                break
            victim = seg.timed_out() or seg.in_flight()
            if victim is None:
                print(f"pyzmq suite: pytest ended (exit {seg.rc}) between tests:\n{tail(seg.log_path)}")
                if progress and not self.out_of_time(seg):
                    continue  # resumed after the tests it finished
                break
            results[victim] = {"outcome": "failed", "duration": 0.0, "ended_process": True,
                               "text": self.death(seg)}
            if self.out_of_time(seg):
                break
            self.break_group(victim, collected or [], results)
        return results, collected, modules

    def break_group(self, victim, collected, results):
        """After --group-limit tests of one class (or of one module's plain functions) ended their
        process, the rest of that group is not run: its tests fail the same way, a hang each."""
        group = group_of(victim)
        self.ended[group] = self.ended.get(group, 0) + 1
        if self.ended[group] < self.args.group_limit:
            return
        for nodeid in collected:
            if nodeid not in results and group_of(nodeid) == group:
                results[nodeid] = {"outcome": "error", "duration": 0.0, "not_run": True,
                                   "text": f"not run: {self.ended[group]} tests of {group} hung or crashed first"}

    def death(self, seg):
        """Why seg's pytest ended during a test, with the stacks it left."""
        if seg.hung:
            return (f"hung: still running after {seg.hung['seconds']} s; the watchdog ended pytest\n"
                    + seg.hung["tracebacks"])
        if self.out_of_time(seg):
            why = f"killed at the run's time bound ({self.args.budget} s)"
        elif seg.timed_out():
            bound = self.bounds.get(seg.timed_out(), self.args.test_timeout)
            why = f"timed out: still running after {bound} s (pytest-timeout ended pytest)"
        elif seg.rc < 0 or seg.rc > 128:
            why = f"the test process died of signal {-seg.rc if seg.rc < 0 else seg.rc - 128}"
        else:
            why = f"the test process ended (exit status {seg.rc}) during this test"
        return why + "\n" + tracebacks(seg.log_path)

    def out_of_time(self, seg):
        return seg.rc in (124, 137) and time.monotonic() >= self.deadline - 2


def group_of(nodeid):
    """A test's class (tests/test_x.py::TestY), else its module: the tests that share fixtures."""
    path, _, rest = nodeid.split("[")[0].partition("::")
    parts = rest.split("::")
    return f"{path}::{'::'.join(parts[:-1])}" if len(parts) > 1 else path


def first_error_lines(text, n=3):
    """The lines pytest marks with `E` (the assertion or exception), else the text's first line."""
    lines = [line for line in text.splitlines() if line.startswith("E ")]
    if not lines:
        lines = [line for line in text.splitlines() if line.strip()][:1]
    return [line.strip() for line in lines[:n]]


def run(args):
    runner = Runner(args)
    if os.path.exists(runner.log):
        os.remove(runner.log)
    started = time.monotonic()
    results, collected, modules = runner.phase(["tests"], explicit=False)
    if collected is None:
        print(f"pyzmq suite: pytest collected nothing; the end of its output:\n{tail(os.path.join(args.out, 'pytest-1.log'))}")
        return None
    tests = {}
    for nodeid in collected:
        tests[nodeid] = results.get(nodeid) or {
            "outcome": "error", "duration": 0.0, "not_run": True,
            "text": f"not run: the run's time bound ({args.budget} s) came first"}
    # Tests that ended their process (a hang, a crash) cost a bound each: retried only when they
    # are few (a race lost now and then), not when a library hangs in dozens.
    failed = [n for n, t in tests.items() if t["outcome"] in ("failed", "error") and not t.get("not_run")]
    ended = [n for n in failed if tests[n].get("ended_process")]
    retry = failed if len(ended) <= args.retry_ended else [n for n in failed if n not in ended]
    tests.update(modules)
    if retry:
        again, _, _ = runner.phase(retry, explicit=True)
        for nodeid, second in again.items():
            first = tests[nodeid]
            first["retry"] = second["outcome"]
            if second["outcome"] == "passed":
                second["retry"] = "passed"
                second["first"] = first["outcome"] + ": " + " | ".join(first_error_lines(first["text"]))
                tests[nodeid] = second
    return {"name": args.name, "seconds": round(time.monotonic() - started, 1),
            "pytest_processes": runner.segments, "tests": tests}


def summarize(report):
    counts = {k: 0 for k in ("passed", "failed", "skipped", "error")}
    for t in report["tests"].values():
        counts[t["outcome"]] += 1
    report["counts"] = counts
    report["summary"] = (f"pyzmq suite against {report['name']}: {counts['passed']} passed, "
                         f"{counts['failed']} failed, {counts['skipped']} skipped, {counts['error']} errors")
    lines = [report["summary"]]
    retried = sorted(n for n, t in report["tests"].items() if t.get("retry") == "passed")
    lines.append(f"{len(report['tests'])} tests in {report['seconds']} s, {report['pytest_processes']} "
                 f"pytest processes; {len(retried)} passed only on their retry")
    lines += [f"  retried, passed: {n} (first {report['tests'][n]['first']})" for n in retried]
    bad = sorted(n for n, t in report["tests"].items() if t["outcome"] in ("failed", "error"))
    not_run = {}
    for n in bad:
        t = report["tests"][n]
        if t.get("not_run"):
            not_run.setdefault(t["text"], []).append(n)
            continue
        lines.append(f"  {t['outcome'].upper()}: {n}")
        lines += [f"      {line}" for line in first_error_lines(t["text"])]
    for why, names in not_run.items():
        lines.append(f"  ERROR, {why}: {len(names)} tests")
        lines += [f"      {n}" for n in names]
    return lines


def junit(report, path, library):
    counts = report["counts"]
    suite = ET.Element("testsuite", name=f"pyzmq against {report['name']}", tests=str(len(report["tests"])),
                       failures=str(counts["failed"]), errors=str(counts["error"]),
                       skipped=str(counts["skipped"]), time=str(report["seconds"]))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="libzmq", value=library)
    for nodeid, t in sorted(report["tests"].items()):
        path_part, _, rest = nodeid.partition("::")
        cls, _, name = rest.rpartition("::")
        classname = re.sub(r"\.py$", "", path_part).replace("/", ".") + (f".{cls}" if cls else "")
        case = ET.SubElement(suite, "testcase", classname=classname, name=name or nodeid,
                             time=f"{t['duration']:.3f}")
        tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(t["outcome"])
        if tag:
            message = " | ".join(first_error_lines(t["text"], 1))
            ET.SubElement(case, tag, message=message).text = t["text"]
        if t.get("retry") == "passed":
            ET.SubElement(case, "system-out").text = f"passed on its retry; first run: {t['first']}"
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--tests", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--junit", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--library", default="", help="the libzmq the venv loads (for the reports)")
    ap.add_argument("--budget", type=int, default=600, help="seconds for the whole run, retries included")
    ap.add_argument("--test-timeout", type=int, default=30, help="pytest-timeout's bound per test")
    ap.add_argument("--baseline", help="another run's outcomes.json: bound each test it passed by "
                    "its duration there (see --timeout-factor, --min-timeout)")
    ap.add_argument("--timeout-factor", type=float, default=5.0)
    ap.add_argument("--min-timeout", type=float, default=10.0)
    ap.add_argument("--retry-ended", type=int, default=3,
                    help="retry the tests that ended their process when there are at most this many")
    ap.add_argument("--group-limit", type=int, default=2,
                    help="tests of one class or module that may end their process before the rest is not run")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    report = run(args)
    if report is None:
        return 1
    lines = summarize(report)
    report["library"] = args.library
    with open(os.path.join(args.out, "outcomes.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    junit(report, args.junit, args.library)
    with open(args.summary, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if report["counts"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
