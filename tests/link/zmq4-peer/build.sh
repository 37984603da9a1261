#!/usr/bin/env bash
# Builds tests/link/zmq4-peer (go-zeromq/zmq4, pinned by go.mod + go.sum, fetched through the Go
# module proxy) into <out>/zmq4-peer for zmq4_interop_test.cpp.
#
#   tests/link/zmq4-peer/build.sh <out dir>
#
# Exit 0: built. Exit 77 with one line on stderr saying why: no Go toolchain, one older than the
# go directive, or a failed download/build (offline, no proxy); the test then skips with that line.
set -uo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh <out dir>}
min_go=1.22
command -v go >/dev/null || { echo "go not found (install Go $min_go+ from go.dev/dl)" >&2; exit 77; }
have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$have" "$min_go" | sort -V | head -1)" != "$min_go" ]; then
  echo "go $have is older than $min_go (go-zeromq/zmq4's go directive)" >&2
  exit 77
fi
mkdir -p "$out" || exit 77
tmp=$(mktemp "$out/.zmq4-peer.XXXXXX") || exit 77
log=$(mktemp) || exit 77
# A private output name, then a rename: two test processes may build at once.
if ! (cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly timeout "${ZMQ4_BUILD_TIMEOUT:-600}" \
      go build -trimpath -o "$tmp" .) >"$log" 2>&1; then
  echo "go build of zmq4-peer failed (offline or no module proxy?): $(tail -n 3 "$log" | tr '\n' ' ')" >&2
  rm -f "$tmp" "$log"
  exit 77
fi
rm -f "$log"
mv -f "$tmp" "$out/zmq4-peer"
