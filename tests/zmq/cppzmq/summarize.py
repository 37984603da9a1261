#!/usr/bin/env python3
"""Sums up one run of cppzmq's unit tests, one Catch2 process per test case (tests/zmq/cppzmq/run.sh).

  summarize.py --name <strix|libzmq> --library <path> --cases <dir> --timeout <s>
               --text <report.txt> --junit <report.xml> [--exceptions docs/zmq-abi.md]

<dir> holds names (the test cases listed) and, for each case NNN: NNN.name (its name), NNN.rc (the
process's exit status), NNN.seconds (its start and end, epoch seconds), NNN.xml (Catch2's XML
report, absent or cut short when the process crashed or hung) and NNN.log (its stdout and stderr).
A case passed only when its process exited 0 and its report shows exactly that test case run and
passed: Catch2 also exits 0 when a test spec matched nothing.

With --exceptions, failures of the test cases listed in that file's section "cppzmq tests that do
not pass" (lines "- `test case name`: reason", at most 5) are allowed. Exit 0 when every failure is
allowed, 1 otherwise.
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

MAX_EXCEPTIONS = 5
SECTION = "cppzmq tests that do not pass"


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def listed_exceptions(path):
    """Test case names listed under the SECTION heading of the markdown file at path."""
    names, level = [], None
    for line in read(path).splitlines():
        heading = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if heading:
            if level is not None and len(heading.group(1)) <= level:
                break
            if heading.group(2).lower() == SECTION.lower():
                level = len(heading.group(1))
            continue
        item = re.match(r"^\s*[-*]\s+`([^`]+)`", line)
        if level is not None and item:
            names.append(item.group(1))
    return names


def failures_in(case):
    """The failed assertions, exceptions and fatal conditions of a Catch2 <TestCase>, as text."""
    out = []
    for el in case.iter():
        where = f"{os.path.basename(el.get('filename', '?'))}:{el.get('line', '?')}"
        if el.tag == "Expression" and el.get("success") == "false":
            original = (el.findtext("Original") or "").strip()
            expanded = (el.findtext("Expanded") or "").strip()
            text = f"{where}: {el.get('type')}( {original} )"
            if expanded and expanded != original:
                text += f" with expansion: {expanded}"
            exception = el.findtext("Exception")
            if exception:
                text += f" threw: {exception.strip()}"
            out.append(text)
        elif el.tag == "Info":  # an INFO() in scope when the next failure was reported
            out.append(f"info: {(el.text or '').strip()}")
        elif el.tag in ("Exception", "FatalErrorCondition", "Failure"):
            out.append(f"{where}: {el.tag}: {(el.text or '').strip()}")
    return out


def judge(cases_dir, case_id, timeout_s):
    """(name, passed, assertions passed, assertions failed, seconds, failure text) of one case."""
    base = os.path.join(cases_dir, case_id)
    name = read(base + ".name").rstrip("\n")
    rc = int(read(base + ".rc").strip() or -1)
    log_tail = "\n".join(read(base + ".log").splitlines()[-30:])
    try:
        root = ET.parse(base + ".xml").getroot()
    except (ET.ParseError, FileNotFoundError):
        root = None
    start_end = [float(t) for t in read(base + ".seconds").split()]
    wall = start_end[1] - start_end[0] if len(start_end) == 2 else 0.0
    totals = root.find("./OverallResults") if root is not None else None
    good = int(totals.get("successes", 0)) if totals is not None else 0
    bad = int(totals.get("failures", 0)) if totals is not None else 0
    # timeout(1) exits 124 when it stopped the case with SIGTERM, 137 when it had to SIGKILL it.
    if rc == 124 or (rc == 137 and wall >= timeout_s):
        text = f"timed out after {timeout_s:g} s"
        ran = root.findall("./Group/TestCase") if root is not None else []
        if ran:
            # Catch2 handles timeout's SIGTERM by writing its report: what failed before the hang,
            # and the last line it passed.
            text += "; what Catch2 reported on SIGTERM:\n" + "\n".join(failures_in(ran[0]))
        return name, False, good, bad, wall, f"{text}\n{log_tail}".strip()
    if root is None:
        why = f"killed by signal {rc - 128}" if rc > 128 else f"exit status {rc}"
        return name, False, 0, 0, wall, f"no complete report ({why})\n{log_tail}"
    ran = root.findall("./Group/TestCase")
    cases = root.find("./OverallResultsCases")
    if len(ran) != 1 or ran[0].get("name") != name:
        return name, False, good, bad, wall, f"the test spec ran {[c.get('name') for c in ran]}, not this case"
    result = ran[0].find("OverallResult")
    passed = (rc == 0 and result is not None and result.get("success") == "true" and cases is not None and
              cases.get("successes") == "1" and cases.get("failures") == "0")
    if passed:
        return name, True, good, bad, wall, ""
    text = "\n".join(failures_in(ran[0])) or f"exit status {rc}\n{log_tail}"
    return name, False, good, bad, wall, text


def write_junit(path, suite, results):
    root = ET.Element("testsuites")
    failed = sum(1 for r in results if not r[1])
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)), failures=str(failed),
                       errors="0", time=f"{sum(r[4] for r in results):.3f}")
    for name, passed, _, _, seconds, text in results:
        tc = ET.SubElement(ts, "testcase", classname=suite, name=name, time=f"{seconds:.3f}")
        if not passed:
            ET.SubElement(tc, "failure", message=text.splitlines()[0] if text else "failed").text = text
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main():
    p = argparse.ArgumentParser()
    for arg in ("--name", "--library", "--cases", "--text", "--junit"):
        p.add_argument(arg, required=True)
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--exceptions")
    a = p.parse_args()

    ids = sorted(f[:-5] for f in os.listdir(a.cases) if f.endswith(".name"))
    results = [judge(a.cases, i, a.timeout) for i in ids]
    expected = [n for n in read(os.path.join(a.cases, "names")).splitlines() if n]
    failed = [r for r in results if not r[1]]
    good = sum(r[2] for r in results)
    bad = sum(r[3] for r in results)
    allowed = listed_exceptions(a.exceptions) if a.exceptions else []

    lines = [f"cppzmq tests against {a.name}: {len(results) - len(failed)} passed, {len(failed)} failed "
             f"(of {len(results)} test cases / {good + bad} assertions: {good} passed, {bad} failed)",
             f"library: {a.library}"]
    problems = []
    if not results or len(results) != len(expected):
        problems.append(f"{len(expected)} test cases listed, {len(results)} run")
    if len(allowed) > MAX_EXCEPTIONS:
        problems.append(f"{a.exceptions} lists {len(allowed)} cppzmq tests that do not pass; at most "
                        f"{MAX_EXCEPTIONS} are allowed")
    for name, _, _, _, _, text in failed:
        tag = "listed in docs/zmq-abi.md" if name in allowed else "NOT LISTED"
        if name not in allowed:
            problems.append(f"unlisted failure: {name}")
        lines += ["", f"FAILED ({tag}): {name}"] + ["    " + t for t in text.splitlines()]
    passing_listed = [n for n in allowed if n in {r[0] for r in results if r[1]}]
    unknown_listed = [n for n in allowed if n not in {r[0] for r in results}]
    if passing_listed:
        lines += ["", "listed as not passing but passed (remove from docs/zmq-abi.md): " + ", ".join(passing_listed)]
    if unknown_listed:
        problems.append("docs/zmq-abi.md lists test cases cppzmq does not have: " + ", ".join(unknown_listed))
    lines += [""] + [f"PROBLEM: {p}" for p in problems] + [f"result: {'FAIL' if problems else 'OK'}"]

    with open(a.text, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    write_junit(a.junit, f"cppzmq.{a.name}", results)
    print("\n".join(lines))
    print(f"reports: {a.text} {a.junit}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
