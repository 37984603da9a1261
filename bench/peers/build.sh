#!/usr/bin/env bash
# Builds the echo shoot-out's peers under the CMake build dir: the plain echo servers (tokio,
# gnet), the TLS ones (tokio-rustls, Go crypto/tls) and the WebSocket ones (fastwebsockets,
# tokio-tungstenite, gobwas/ws; the ws section of scripts/bench-echo.sh).
#
#   bench/peers/build.sh <build_dir>     build all seven; binaries land in <build_dir>/peers/bin/
#   bench/peers/build.sh --fetch         only download their crates / modules (an install step)
#
# Crates come from crates.io (versions pinned by each crate's Cargo.lock, cargo --locked), Go
# modules through the Go module proxy (pinned by go.mod + go.sum, -mod=readonly; go-tls-echo uses
# the standard library only). A peer whose toolchain is missing or whose build fails is skipped
# with a clear message: this script always exits 0 once its arguments are right, and writes one
# line per peer to <build_dir>/peers/status.txt:
#   name|built|<binary>            or            name|not built|<one-sentence reason>
# with name tokio, gnet, tokio-tls, go-tls, fastwebsockets, tungstenite or gobwas.
# scripts/bench-echo.sh reads that file (every section); the reports mark a skipped peer
# "not built".
set -uo pipefail

src=$(cd "$(dirname "$0")" && pwd)
limit=${PEERS_BUILD_TIMEOUT:-900}  # seconds per peer: a stuck registry must not hang the bench
crates=(tokio-echo tokio-tls-echo fastwebsockets-echo tungstenite-echo)
go_modules=(gnet-echo go-tls-echo gobwas-echo)

if [ "${1:-}" = --fetch ]; then
  for c in "${crates[@]}"; do
    if command -v cargo >/dev/null; then
      cargo fetch --locked --manifest-path "$src/$c/Cargo.toml" ||
        echo "peers: warning: cargo fetch failed; $c will be skipped offline" >&2
    else
      echo "peers: cargo not found; $c will be skipped (install Rust from rustup.rs)" >&2
    fi
  done
  for m in "${go_modules[@]}"; do
    if command -v go >/dev/null; then
      (cd "$src/$m" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go mod download) ||
        echo "peers: warning: go mod download failed; $m will be skipped offline" >&2
    else
      echo "peers: go not found; $m will be skipped (install Go from go.dev/dl)" >&2
    fi
  done
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
# version 4 needs cargo 1.78 anyway; rustls 0.23 needs less) and gnet v2.9.7's go directive
# (go-tls-echo's go.mod asks for the same). Debian bookworm's own rustc (1.63) and golang-go (1.19)
# are older; rustup.rs and go.dev/dl (or bookworm-backports' golang) are newer.
min_rust=1.85
min_go=1.20
older() {  # <version> <minimum>: true when version < minimum
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]
}

# --- cargo ----------------------------------------------------------------------------------------
rust_version=$(rustc --version 2>/dev/null | awk '{print $2}')
build_crate() {  # <status name> <crate dir and binary name> <what it pins>
  local name=$1 crate=$2 what=$3
  if ! command -v cargo >/dev/null; then
    skip "$name" "cargo is not installed (Rust from rustup.rs)"
  elif [ -z "$rust_version" ] || older "$rust_version" "$min_rust"; then
    skip "$name" "rustc ${rust_version:-(missing)} is older than $min_rust, which $what needs (rustup.rs)"
  else
    echo "peers: building $crate with $(cargo --version) (log: $out/$crate.build.log)"
    if timeout "$limit" cargo build --release --locked \
        --manifest-path "$src/$crate/Cargo.toml" --target-dir "$out/$crate" \
        >"$out/$crate.build.log" 2>&1; then
      cp -f "$out/$crate/release/$crate" "$out/bin/$crate"
      echo "$name|built|$out/bin/$crate" >>"$status"
    else
      tail -5 "$out/$crate.build.log" >&2
      skip "$name" "cargo build failed or timed out (no access to crates.io?); see $out/$crate.build.log"
    fi
  fi
}

# --- go -------------------------------------------------------------------------------------------
go_version=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
build_module() {  # <status name> <module dir and binary name> <what it pins> [<its minimum go>]
  local name=$1 module=$2 what=$3 need=${4:-$min_go}
  if ! command -v go >/dev/null; then
    skip "$name" "go is not installed (go.dev/dl)"
  elif [ -z "$go_version" ] || older "$go_version" "$need"; then
    skip "$name" "go ${go_version:-(unknown)} is older than $need, which $what needs (go.dev/dl)"
  else
    echo "peers: building $module with $(go version) (log: $out/$module.build.log)"
    # GOTOOLCHAIN=local: never download another Go; -mod=readonly: go.sum is the pin.
    if (cd "$src/$module" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
          timeout "$limit" go build -trimpath -o "$out/bin/$module" .) \
        >"$out/$module.build.log" 2>&1; then
      echo "$name|built|$out/bin/$module" >>"$status"
    else
      tail -5 "$out/$module.build.log" >&2
      skip "$name" "go build failed or timed out (no access to the Go module proxy?); see $out/$module.build.log"
    fi
  fi
}

build_crate tokio tokio-echo "tokio 1.54"
build_module gnet gnet-echo "gnet v2.9.7"
build_crate tokio-tls tokio-tls-echo "tokio 1.54 with tokio-rustls 0.26"
build_module go-tls go-tls-echo "go-tls-echo (its go.mod)"
# The WebSocket peers. gobwas/ws v1.5.0's go.mod asks for go 1.26.
build_crate fastwebsockets fastwebsockets-echo "tokio 1.54 with fastwebsockets 0.10 and hyper 1"
build_crate tungstenite tungstenite-echo "tokio 1.54 with tokio-tungstenite 0.30"
build_module gobwas gobwas-echo "gobwas/ws v1.5.0" 1.26
exit 0
