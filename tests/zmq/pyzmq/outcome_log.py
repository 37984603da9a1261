"""pytest plugin for the pyzmq suite runs (tests/zmq/pyzmq/suite.py loads it with -p outcome_log).

Appends one JSON object per line to $PYZMQ_OUTCOME_LOG as the run goes, flushed at once, so
that a run that dies (a crash inside libzmq, a hang no signal ends) still tells which tests ended
how and which one was running:
  {"collected": [nodeid, ...]}           the session's tests, once collected
  {"collect_error": nodeid, "text": ...} a module that failed to import
  {"collect_skip": nodeid, "text": ...}  a module skipped whole (pytest.importorskip)
  {"start": nodeid}                      before its setup
  {"report": nodeid, "when": ..., "outcome": ..., "text": ..., "duration": s}
  {"finish": nodeid}                     after its teardown
  {"hung": nodeid, "seconds": s, "tracebacks": ...}  the watchdog's last word before it ends
                                         the process (every thread's stack)
  {"session_end": exit_status}
The watchdog: a test still running after $PYZMQ_HANG_SECONDS (pytest-timeout and pyzmq's own
SIGALRM bound tests first; this catches a call that never returns to Python to see a signal)
gets its threads' tracebacks recorded and the process ended, so suite.py can resume the
run after that test. When resuming, suite.py names the tests already done in $PYZMQ_SKIP_FILE
(one node id a line) and they are deselected (by exact id: --deselect matches prefixes).
$PYZMQ_TIMEOUTS names a JSON file of per-test bounds ({node id: seconds}) given to pytest-timeout
as markers. The plugin never changes what a test does.
"""

import faulthandler
import json
import os
import tempfile
import threading
import time

import pytest

_log = None
_lock = threading.Lock()
_running = {"nodeid": None, "since": 0.0}


def _write(record):
    with _lock:
        _log.write(json.dumps(record) + "\n")
        _log.flush()


def _text(report):
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])  # (file, line, reason)
    return report.longreprtext if report.longrepr else ""


def _watchdog(limit):
    while True:
        time.sleep(1.0)
        nodeid, since = _running["nodeid"], _running["since"]
        if nodeid and time.monotonic() - since > limit:
            # pytest captures fd 2 during a test: the dump goes through a file into the record.
            with tempfile.TemporaryFile("w+") as dump:
                faulthandler.dump_traceback(file=dump, all_threads=True)
                dump.seek(0)
                text = dump.read()
            _write({"hung": nodeid, "seconds": round(time.monotonic() - since, 1), "tracebacks": text})
            os._exit(70)


def pytest_configure(config):
    global _log
    path = os.environ.get("PYZMQ_OUTCOME_LOG")
    if not path or _log is not None:
        return
    _log = open(path, "a", encoding="utf-8")
    limit = float(os.environ.get("PYZMQ_HANG_SECONDS", "150"))
    threading.Thread(target=_watchdog, args=(limit,), daemon=True, name="outcome_log-watchdog").start()


def pytest_collectreport(report):
    if _log and report.failed:
        _write({"collect_error": report.nodeid, "text": report.longreprtext})
    elif _log and report.skipped and isinstance(report.longrepr, tuple):
        _write({"collect_skip": report.nodeid, "text": str(report.longrepr[2])})


def pytest_collection_modifyitems(config, items):
    bounds_path = os.environ.get("PYZMQ_TIMEOUTS")
    if bounds_path:
        with open(bounds_path, encoding="utf-8") as f:
            bounds = json.load(f)
        for item in items:
            if item.nodeid in bounds:
                item.add_marker(pytest.mark.timeout(bounds[item.nodeid]))
    path = os.environ.get("PYZMQ_SKIP_FILE")
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        done = {line.rstrip("\n") for line in f if line.strip()}
    keep = [item for item in items if item.nodeid not in done]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
        items[:] = keep


def pytest_collection_finish(session):
    if _log:
        _write({"collected": [item.nodeid for item in session.items]})


def pytest_runtest_logstart(nodeid, location):
    if _log:
        _running["nodeid"], _running["since"] = nodeid, time.monotonic()
        _write({"start": nodeid})


def pytest_runtest_logreport(report):
    if _log:
        record = {"report": report.nodeid, "when": report.when, "outcome": report.outcome,
                  "text": _text(report)[-20000:], "duration": round(report.duration, 3)}
        if hasattr(report, "wasxfail"):
            record["xfail"] = True
        _write(record)


def pytest_runtest_logfinish(nodeid, location):
    if _log:
        _running["nodeid"] = None
        _write({"finish": nodeid})


def pytest_sessionfinish(session, exitstatus):
    if _log:
        _write({"session_end": int(exitstatus)})
