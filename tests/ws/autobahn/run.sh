#!/usr/bin/env bash
# Autobahn|Testsuite fuzzingclient cases 1-10 against strix-echo-server --ws (make test, label
# ws-conf). Cases 12-13 (permessage-deflate) are left out: strix declines compression.
#
#   tests/ws/autobahn/run.sh <build_dir> <backend: epoll|uring>
#
# The case runner (kosoku, pinned in requirements.txt) is installed into <build_dir>/ws-conf/venv
# from PyPI on first use. Reports (one JSON + HTML per case) land in
# <build_dir>/ws-conf/<backend>/, the summary in <build_dir>/ws-conf/summary-<backend>.md.
# Exit 0: every case OK, NON-STRICT or INFORMATIONAL (and its close OK or INFORMATIONAL);
# 1: a case FAILED (listed); 77 (skip): no Python 3.10+ venv or PyPI out of reach.
set -uo pipefail

build=$(cd "${1:?usage: run.sh <build_dir> <epoll|uring>}" && pwd)
backend=${2:?usage: run.sh <build_dir> <epoll|uring>}
here=$(cd "$(dirname "$0")" && pwd)
root=$build/ws-conf
venv=$root/venv
out=$root/$backend
mkdir -p "$root"

# A venv needs a Python 3.10+ with the venv module; Debian's /usr/bin/python3 has it
# (python3-venv), a pyenv shim in PATH may not.
py=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    py=$cand
    break
  fi
done
[ -n "$py" ] || { echo "ws-conf: SKIP: no Python 3.10+ with venv (install python3-venv)"; exit 77; }

# One install per build dir, redone when requirements.txt changes; two backends' runs may start
# at once, so the install holds a lock.
(
  flock 9
  if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
    rm -rf "$venv"
    "$py" -m venv "$venv" >/dev/null &&
      timeout 300 "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt" &&
      cp "$here/requirements.txt" "$venv/requirements.txt" || { rm -rf "$venv"; exit 77; }
  fi
) 9>"$root/install.lock"
[ -x "$venv/bin/kosoku" ] || { echo "ws-conf: SKIP: could not install kosoku from PyPI into $venv"; exit 77; }

port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Limits that fit case 9's largest messages (16 MiB in one frame, 4 MiB in 64-byte fragments).
"$build/bin/strix-echo-server" --ws --io "$backend" --port "$port" --shards 2 --max-message 16777216 \
  --max-fragments 100000 >"$root/server-$backend.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
# Up to 30 s: at the start of a parallel ctest on 2 cores the server once took more than 5 s
# to say so. A server that exited stops the wait.
for _ in $(seq 600); do
  grep -q listening "$root/server-$backend.log" && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.05
done
grep -q listening "$root/server-$backend.log" || { echo "ws-conf: the echo server did not start:"; cat "$root/server-$backend.log"; exit 1; }

rm -rf "$out"
includes=()
# (Autobahn has no section 8.)
for s in 1 2 3 4 5 6 7 9 10; do includes+=(-i "$s.*"); done
"$venv/bin/kosoku" "127.0.0.1:$port" "${includes[@]}" -p 4 -o "$out" >"$root/kosoku-$backend.log" 2>&1
runner=$?
# The server must stop cleanly: a sanitizer report (ASan/UBSan build) makes its exit status non-zero.
kill -TERM "$server"
wait "$server"
server_status=$?
trap - EXIT
if [ "$server_status" -ne 0 ]; then
  echo "ws-conf: strix-echo-server exited with status $server_status:"
  tail -40 "$root/server-$backend.log"
  exit 1
fi

"$py" - "$out" "$root/summary-$backend.md" "$backend" "$runner" <<'PY'
import collections, glob, json, sys
out, summary, backend, runner = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ok_behavior = {"OK", "NON-STRICT", "INFORMATIONAL"}
ok_close = {"OK", "INFORMATIONAL"}
cases = [json.load(open(f)) for f in glob.glob(f"{out}/*case_*.json")]
by = collections.Counter(c["behavior"] for c in cases)
bad = sorted((c for c in cases if c["behavior"] not in ok_behavior or c["behaviorClose"] not in ok_close),
             key=lambda c: [int(x) for x in c["id"].split(".")])
sections = collections.Counter(c["id"].split(".")[0] for c in cases)
lines = [f"# Autobahn|Testsuite cases 1-10 against strix-echo-server --ws ({backend})", "",
         f"{len(cases)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())), "",
         "| section | cases |", "|---|---|"]
lines += [f"| {s} | {n} |" for s, n in sorted(sections.items(), key=lambda kv: int(kv[0]))]
others = sorted((c for c in cases if c["behavior"] != "OK"), key=lambda c: [int(x) for x in c["id"].split(".")])
if others:
    lines += ["", "Not OK (allowed unless FAILED):"]
    lines += [f"- {c['id']}: {c['behavior']} / {c['behaviorClose']}: {c['description'][:100].replace(chr(10), ' ')}" for c in others]
if bad:
    lines += ["", "FAILED:"] + [f"- {c['id']}: {c['behavior']} / {c['behaviorClose']}: {c.get('result', '')}" for c in bad]
open(summary, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
# Sections 1-10 hold 301 cases in this runner; fewer means cases did not run.
if len(cases) < 300:
    print(f"ws-conf: only {len(cases)} case reports (runner exit {runner})")
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
