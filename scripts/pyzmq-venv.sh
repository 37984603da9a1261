#!/usr/bin/env bash
# Builds pyzmq from its PyPI sdist against the libzmq of one prefix, into a venv of its own, with
# the packages pyzmq's test suite needs. Used by tests/zmq/pyzmq/run.sh (the pyzmq suite, label
# zmq-suite) and by make bench-zmq (the pyzmq benchmark).
#
#   scripts/pyzmq-venv.sh <zmq_prefix> <venv_dir>
#
# <zmq_prefix> holds include/zmq.h and lib/libzmq.so (or lib/<multiarch>/libzmq.so, as Debian's
# /usr does): /usr for Debian's libzmq, <build>/zmq for strix's. pyzmq is built with
# ZMQ_PREFIX=<zmq_prefix> PYZMQ_NO_BUNDLE=1 and that lib dir in its RUNPATH, so the venv's python
# loads <zmq_prefix>'s libzmq without LD_LIBRARY_PATH. Versions and sha256 hashes:
# tests/zmq/pyzmq/build-requirements.txt (the build backend, installed first: pyzmq builds without
# isolation) and tests/zmq/pyzmq/requirements.txt (pyzmq's sdist, the test packages). The sdist
# stays in <venv_dir>/dist/ (the pyzmq suite runs the tests it ships).
# Built once per (requirements, prefix, this script): a stamp in the venv says so; concurrent
# callers wait on <venv_dir>.lock. The build log is <venv_dir>.log.
# Exit 0: ready, and the venv's zmq loads <zmq_prefix>'s libzmq (printed); 1: the build failed, or
# the module bundled libzmq or loaded another one; 77 (skip): no Python 3 with venv, or PyPI out of
# reach.
set -euo pipefail

usage="usage: scripts/pyzmq-venv.sh <zmq_prefix> <venv_dir>"
prefix=$(cd "${1:?$usage}" && pwd)
venv_arg=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
reqs=$here/../tests/zmq/pyzmq
mkdir -p "$(dirname "$venv_arg")"
venv=$(cd "$(dirname "$venv_arg")" && pwd)/$(basename "$venv_arg")
log=$venv.log

# Debian's python3 has the venv module (python3-venv) and Python.h (python3-dev); a pyenv shim
# earlier in PATH may have neither.
py=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
    py=$cand
    break
  fi
done
[ -n "$py" ] || { echo "pyzmq-venv: SKIP: no Python 3.9+ with venv (install python3-venv)"; exit 77; }

# Debian installs libzmq.so under lib/<multiarch>; pyzmq's CMake looks in <prefix>/lib only, so
# the library and header are handed to it directly.
multiarch=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH") or "")')
libdir=""
for d in "$prefix/lib" "$prefix/lib/$multiarch" "$prefix/lib64"; do
  if [ -e "$d/libzmq.so" ]; then
    libdir=$d
    break
  fi
done
[ -n "$libdir" ] || { echo "pyzmq-venv: no libzmq.so under $prefix/lib (nor lib/$multiarch, lib64)" >&2; exit 1; }
[ -f "$prefix/include/zmq.h" ] || { echo "pyzmq-venv: no $prefix/include/zmq.h" >&2; exit 1; }

# The import check: the venv's zmq (Cython backend) must map exactly one libzmq, <libdir>'s. A
# bundled build links libzmq statically (no libzmq mapped); a build that found the system's maps
# /usr's. LD_LIBRARY_PATH is cleared: the RUNPATH alone must pick the library.
check_loaded() {
  env -u LD_LIBRARY_PATH -u LD_PRELOAD "$venv/bin/python" - "$libdir/libzmq.so" <<'PY'
import os, sys
import zmq
expected = sys.argv[1]
mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libzmq"):
            mapped.add(fields[5].strip())
backend = "cython" if "zmq.backend.cython" in sys.modules else "other"
if backend != "cython" or hasattr(zmq, "_libzmq"):
    sys.exit(f"pyzmq-venv: {zmq.__file__}: not the Cython backend against a shared libzmq (bundled?)")
if len(mapped) != 1 or not os.path.samefile(next(iter(mapped)), expected):
    sys.exit(f"pyzmq-venv: pyzmq loads {sorted(mapped) or 'no shared libzmq (bundled?)'}, "
             f"not {os.path.realpath(expected)}")
print(f"pyzmq-venv: pyzmq {zmq.pyzmq_version()} in {os.path.dirname(zmq.__file__)} loads "
      f"{next(iter(mapped))} (zmq_version {zmq.zmq_version()})")
PY
}

stamp_of() {
  {
    echo "prefix=$prefix libdir=$libdir"
    cat "$reqs/build-requirements.txt" "$reqs/requirements.txt" "$0"
  } | sha256sum | cut -d' ' -f1
}

exec 9>"$venv.lock"
flock -w 1200 9 || { echo "pyzmq-venv: waited 20 min for $venv.lock" >&2; exit 1; }

stamp=$(stamp_of)
if [ -f "$venv/.pyzmq-venv-stamp" ] && [ "$(cat "$venv/.pyzmq-venv-stamp")" = "$stamp" ]; then
  check_loaded
  exit
fi

index=${PIP_INDEX_URL:-https://pypi.org/simple}
if ! "$py" - "${index%/}/pyzmq/" <<'PY'; then
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=20).close()
except urllib.error.HTTPError:
    pass  # the index answered
except Exception as e:
    sys.exit(f"{sys.argv[1]}: {e}")
PY
  echo "pyzmq-venv: SKIP: the package index ($index) is out of reach"
  exit 77
fi

echo "pyzmq-venv: building pyzmq against $libdir/libzmq.so into $venv (log: $log)"
rm -rf "$venv"
: >"$log"
fail() {
  echo "pyzmq-venv: $1 failed; the end of $log:" >&2
  tail -40 "$log" >&2
  rm -rf "$venv"
  exit 1
}
pip=("$venv/bin/pip" --disable-pip-version-check)
"$py" -m venv "$venv" >>"$log" 2>&1 || fail "python3 -m venv"
timeout 600 "${pip[@]}" install --require-hashes -r "$reqs/build-requirements.txt" >>"$log" 2>&1 ||
  fail "installing the build backend"
# Fetched first (hash-checked), then installed from that folder: the sdist is kept for the suite.
timeout 600 "${pip[@]}" download --require-hashes --no-build-isolation --no-binary pyzmq \
  -d "$venv/dist" -r "$reqs/requirements.txt" >>"$log" 2>&1 || fail "downloading the requirements"
# No wheel cache: pip would reuse a pyzmq wheel built against another prefix.
ZMQ_PREFIX=$prefix PYZMQ_NO_BUNDLE=1 \
  CMAKE_ARGS="-DLIBZMQ_LIBRARY=$libdir/libzmq.so -DLIBZMQ_INCLUDE_DIR=$prefix/include -DCMAKE_INSTALL_RPATH=$libdir" \
  timeout 900 "${pip[@]}" install -v --no-cache-dir --no-index --find-links "$venv/dist" \
  --no-build-isolation --no-binary pyzmq --require-hashes -r "$reqs/requirements.txt" >>"$log" 2>&1 ||
  fail "building pyzmq"
check_loaded || fail "the import check"
echo "$stamp" >"$venv/.pyzmq-venv-stamp"
