#!/usr/bin/env python3
"""Sets the pyzmq suite's run against strix's libzmq beside its run against Debian's (make test,
label zmq-suite, after both run.sh runs).

  compare.py <build_dir> <docs/zmq-abi.md> [--min-share 0.95]

Reads <build_dir>/zmq-suite/pyzmq-{libzmq,strix}/outcomes.json (suite.py's). Prints both
summaries and the share of the tests passing against libzmq that also pass against strix, and
lists every test that passes against libzmq and not against strix with its error lines. The
same goes to <build_dir>/zmq-suite/pyzmq-compare.md.
Fails (exit 1) when that share is under --min-share, or when such a test is not listed in the
docs page's section "pyzmq tests that do not pass": one bullet per test, "- `<node id>`: reason",
where a node id may also name a class or a module (tests/test_x.py::TestY, tests/test_x.py)
to cover all of its tests. Exit 77 (skip): a run left no outcomes (it was skipped).
"""

import argparse
import json
import os
import re
import sys

SECTION = "pyzmq tests that do not pass"
BULLET = re.compile(r"^\s*[-*]\s+`([^`]+)`\s*[:\u2014-]\s*(\S.*)$")


def load(build, name):
    path = os.path.join(build, "zmq-suite", f"pyzmq-{name}", "outcomes.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def documented(docs_path):
    """{node id or prefix: reason} from the docs page's section (empty when there is none)."""
    if not os.path.exists(docs_path):
        return {}
    entries, inside, fenced = {}, False, False
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            if line.startswith("#"):
                inside = line.lstrip("#").strip().lower() == SECTION.lower()
                continue
            match = BULLET.match(line) if inside else None
            if match:
                entries[match.group(1).strip()] = match.group(2).strip()
    return entries


def reason_for(nodeid, entries):
    for key, reason in entries.items():
        if nodeid == key or nodeid.startswith(key + "::") or nodeid.startswith(key + "["):
            return reason
    return None


def error_lines(test, n=4):
    """pytest's `E` lines; for a test that ended its process (a timeout, a crash), why, and the
    innermost frames of its main thread."""
    lines = test.get("text", "").splitlines()
    marked = [line.strip() for line in lines if line.startswith("E ")]
    if marked:
        return marked[:n]
    head = [line.strip() for line in lines if line.strip()][:1]
    main = next((i for i, line in enumerate(lines)
                 if "Stack of MainThread" in line or line.startswith("Current thread")), None)
    if main is None:
        return head
    frames = []
    for line in lines[main + 1 :]:
        if not line.strip() or line.startswith(("~", "+", "Thread 0x")):
            break
        frames.append(line.strip())
    return head + frames[-n:]


def compare(base, strix, entries, min_share):
    """Returns (report lines, ok)."""
    passed = lambda run: {n for n, t in run["tests"].items() if t["outcome"] == "passed"}
    base_pass, strix_pass = passed(base), passed(strix)
    lost = sorted(base_pass - strix_pass)
    share = len(base_pass & strix_pass) / len(base_pass) if base_pass else 0.0
    lines = [f"- {base['summary']} ({base.get('library', '')})",
             f"- {strix['summary']} ({strix.get('library', '')})", "",
             f"Of the {len(base_pass)} tests that pass against libzmq, {len(base_pass & strix_pass)} also pass "
             f"against strix: {100 * share:.1f} % (the bar: {100 * min_share:.0f} %).", ""]
    undocumented = []
    if lost:
        lines += [f"Pass against libzmq, not against strix ({len(lost)}):", ""]
    for nodeid in lost:
        test = strix["tests"].get(nodeid, {"outcome": "missing", "text": "not collected against strix"})
        reason = reason_for(nodeid, entries)
        if reason is None:
            undocumented.append(nodeid)
        lines.append(f"- `{nodeid}`: {test['outcome']}; "
                     + (f"documented: {reason}" if reason else "NOT in docs/zmq-abi.md"))
        lines += [f"    {line}" for line in error_lines(test)]
    gained = sorted(strix_pass - base_pass)
    if gained:
        lines += ["", f"Pass against strix, not against libzmq ({len(gained)}): " + ", ".join(gained)]
    stale = sorted(k for k in entries if not any(n == k or n.startswith(k + "::") or n.startswith(k + "[")
                                                 for n in lost))
    if stale:
        lines += ["", "Listed in docs/zmq-abi.md but passing now (or not run): " + ", ".join(stale)]
    ok = share >= min_share and not undocumented and bool(base_pass)
    if undocumented:
        lines += ["", f"FAIL: {len(undocumented)} of these are not listed under \"{SECTION}\" in docs/zmq-abi.md"]
    if share < min_share:
        lines += ["", f"FAIL: the share {100 * share:.1f} % is under {100 * min_share:.0f} %"]
    return lines, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("docs")
    ap.add_argument("--min-share", type=float, default=0.95)
    args = ap.parse_args()
    base, strix = load(args.build_dir, "libzmq"), load(args.build_dir, "strix")
    if base is None or strix is None:
        missing = [n for n, r in (("libzmq", base), ("strix", strix)) if r is None]
        print(f"pyzmq compare: SKIP: no outcomes from the run against {' and '.join(missing)}")
        return 77
    lines, ok = compare(base, strix, documented(args.docs), args.min_share)
    text = "\n".join(["# pyzmq's suite: strix's libzmq.so.5 beside Debian's libzmq", ""] + lines) + "\n"
    with open(os.path.join(args.build_dir, "zmq-suite", "pyzmq-compare.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
