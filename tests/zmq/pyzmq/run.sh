#!/usr/bin/env bash
# pyzmq's own pytest suite, from its PyPI sdist and unchanged, against one libzmq (make test,
# label zmq-suite; compare.py then sets the strix run beside the Debian one).
#
#   tests/zmq/pyzmq/run.sh <build_dir> <strix|libzmq>
#
# libzmq: Debian's (prefix /usr); strix: strix's libzmq.so.5 (prefix <build_dir>/zmq).
# PYZMQ_SUITE_PREFIX=<prefix> overrides the prefix (to try these scripts against another libzmq).
# pyzmq is built against the prefix by scripts/pyzmq-venv.sh into <build_dir>/zmq-suite/venv-<name>;
# the suite's tests/ and pytest.ini come from the sdist that venv was built from, extracted afresh
# into <build_dir>/zmq-suite/pyzmq-<name>/, and run by suite.py: pytest-timeout bounds each test
# (PYZMQ_TEST_TIMEOUT, 30 s; the slowest passing test takes 16 s on a loaded 2-core machine),
# PYZMQ_SUITE_BUDGET the whole run (600 s).
# Writes <build_dir>/zmq-suite/pyzmq-<name>.xml (JUnit), pyzmq-<name>-summary.txt (first line:
# `pyzmq suite against <name>: P passed, F failed, S skipped, E errors`) and
# pyzmq-<name>/outcomes.json.
# Exit 0: the suite ran (its failures are compare.py's to judge); 1: it could not run;
# 77 (skip): no venv (no Python 3 with venv, or PyPI out of reach).
set -euo pipefail

usage="usage: tests/zmq/pyzmq/run.sh <build_dir> <strix|libzmq>"
build=$(cd "${1:?$usage}" && pwd)
name=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
case $name in
  libzmq) prefix=/usr ;;
  strix) prefix=$build/zmq ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
prefix=${PYZMQ_SUITE_PREFIX:-$prefix}
root=$build/zmq-suite
venv=$root/venv-$name
out=$root/pyzmq-$name
mkdir -p "$root"

started=$SECONDS
status=0
"$here/../../../scripts/pyzmq-venv.sh" "$prefix" "$venv" | tee "$root/pyzmq-$name-venv.txt" || status=$?
[ "$status" -eq 0 ] || exit "$status"
library=$(sed -n 's/.* loads \(.*\) (zmq_version.*/\1/p' "$root/pyzmq-$name-venv.txt")
echo "pyzmq suite: venv ready in $((SECONDS - started)) s"

sdist=$(ls "$venv"/dist/pyzmq-*.tar.gz)
rm -rf "$out"
mkdir -p "$out/src"
tar -xzf "$sdist" -C "$out/src" --strip-components=1 --wildcards '*/pytest.ini' '*/tests/*'

# The strix run bounds each test by its time against libzmq when that run is there (suite.py
# --baseline: five times as long, 10 s at least, 30 s at most): a hang then costs seconds, not
# half a minute.
baseline=()
if [ "$name" != libzmq ] && [ -f "$root/pyzmq-libzmq/outcomes.json" ]; then
  baseline=(--baseline "$root/pyzmq-libzmq/outcomes.json")
fi
"$venv/bin/python" "$here/suite.py" "${baseline[@]}" --python "$venv/bin/python" --tests "$out/src" --out "$out" \
  --name "$name" --library "$library" --junit "$root/pyzmq-$name.xml" \
  --summary "$root/pyzmq-$name-summary.txt" \
  --budget "${PYZMQ_SUITE_BUDGET:-600}" --test-timeout "${PYZMQ_TEST_TIMEOUT:-30}"
