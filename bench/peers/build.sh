#!/usr/bin/env bash
# Builds the echo shoot-out's peers (tokio and gnet echo servers) under the CMake build dir.
#
#   bench/peers/build.sh <build_dir>     build both; binaries land in <build_dir>/peers/bin/
#   bench/peers/build.sh --fetch         only download their crates / modules (an install step)
#
# Crates come from crates.io (versions pinned by tokio-echo/Cargo.lock, cargo --locked), Go
# modules through the Go module proxy (pinned by gnet-echo/go.mod + go.sum, -mod=readonly).
# A peer whose toolchain is missing or whose build fails is skipped with a clear message: this
# script always exits 0 once its arguments are right, and writes one line per peer to
# <build_dir>/peers/status.txt:
#   name|built|<binary>            or            name|not built|<one-sentence reason>
# scripts/bench-echo.sh reads that file; its report marks a skipped peer "not built".
set -uo pipefail

src=$(cd "$(dirname "$0")" && pwd)
limit=${PEERS_BUILD_TIMEOUT:-900}  # seconds per peer: a stuck registry must not hang the bench

if [ "${1:-}" = --fetch ]; then
  if command -v cargo >/dev/null; then
    cargo fetch --locked --manifest-path "$src/tokio-echo/Cargo.toml" ||
      echo "peers: warning: cargo fetch failed; tokio-echo will be skipped offline" >&2
  else
    echo "peers: cargo not found; tokio-echo will be skipped (install Rust from rustup.rs)" >&2
  fi
  if command -v go >/dev/null; then
    (cd "$src/gnet-echo" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go mod download) ||
      echo "peers: warning: go mod download failed; gnet-echo will be skipped offline" >&2
  else
    echo "peers: go not found; gnet-echo will be skipped (install Go from go.dev/dl)" >&2
  fi
  exit 0
fi

build=${1:?usage: bench/peers/build.sh <build_dir> | --fetch}
out=$(mkdir -p "$build/peers/bin" && cd "$build/peers" && pwd)
status=$out/status.txt
: >"$status"

skip() {  # <name> <reason>
  echo "peers: $1 not built: $2" >&2
  echo "$1|not built|$2" >>"$status"
}

# The oldest toolchains the pinned versions build with: tokio 1.54's rust-version (Cargo.lock
# version 4 needs cargo 1.78 anyway) and gnet v2.9.7's go directive. Debian bookworm's own rustc
# (1.63) and golang-go (1.19) are older; rustup.rs and go.dev/dl (or bookworm-backports' golang)
# are newer.
min_rust=1.85
min_go=1.20
older() {  # <version> <minimum>: true when version < minimum
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]
}

# --- tokio ----------------------------------------------------------------------------------------
rust_version=$(rustc --version 2>/dev/null | awk '{print $2}')
if ! command -v cargo >/dev/null; then
  skip tokio "cargo is not installed (Rust from rustup.rs)"
elif [ -z "$rust_version" ] || older "$rust_version" "$min_rust"; then
  skip tokio "rustc ${rust_version:-(missing)} is older than $min_rust, which tokio 1.54 needs (rustup.rs)"
else
  echo "peers: building tokio-echo with $(cargo --version) (log: $out/tokio-echo.build.log)"
  if timeout "$limit" cargo build --release --locked \
      --manifest-path "$src/tokio-echo/Cargo.toml" --target-dir "$out/tokio-echo" \
      >"$out/tokio-echo.build.log" 2>&1; then
    cp -f "$out/tokio-echo/release/tokio-echo" "$out/bin/tokio-echo"
    echo "tokio|built|$out/bin/tokio-echo" >>"$status"
  else
    tail -5 "$out/tokio-echo.build.log" >&2
    skip tokio "cargo build failed or timed out (no access to crates.io?); see $out/tokio-echo.build.log"
  fi
fi

# --- gnet -----------------------------------------------------------------------------------------
go_version=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
if ! command -v go >/dev/null; then
  skip gnet "go is not installed (go.dev/dl)"
elif [ -z "$go_version" ] || older "$go_version" "$min_go"; then
  skip gnet "go ${go_version:-(unknown)} is older than $min_go, which gnet v2.9.7 needs (go.dev/dl)"
else
  echo "peers: building gnet-echo with $(go version) (log: $out/gnet-echo.build.log)"
  # GOTOOLCHAIN=local: never download another Go; -mod=readonly: go.sum is the pin.
  if (cd "$src/gnet-echo" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
        timeout "$limit" go build -trimpath -o "$out/bin/gnet-echo" .) \
      >"$out/gnet-echo.build.log" 2>&1; then
    echo "gnet|built|$out/bin/gnet-echo" >>"$status"
  else
    tail -5 "$out/gnet-echo.build.log" >&2
    skip gnet "go build failed or timed out (no access to the Go module proxy?); see $out/gnet-echo.build.log"
  fi
fi
exit 0
