#!/usr/bin/env bash
# Installs the Debian packages strix builds, tests and benchmarks with.
# Called by every Makefile target; does nothing when everything is present.
# This list is the single place a dependency is declared (see docs/dependencies.md).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  libboost1.81-dev            # unordered_flat_map; lockfree + asio for baselines only
  libgtest-dev libbenchmark-dev
  libflatbuffers-dev flatbuffers-compiler
  libsqlite3-dev libpq-dev postgresql
  libsodium-dev
  liburing-dev                # the io_uring backend (engine_config::io, --io uring)
  libcli11-dev nlohmann-json3-dev
  libhttp-parser-dev          # strix::http (the HTTP/1.1 server module: request parsing, nodejs http_parser 2.9)
  libssl-dev openssl          # TLS in strix::net and strix-echo-bench --tls (OpenSSL 3); openssl writes the bench certificates
  libcurl4-openssl-dev        # the chat server's webhooks and publish hook (apps/chat/server/hooks/): HTTP POSTs over libcurl
  libzmq3-dev                 # strix::link interop tests and the libzmq baseline only
  catch2                      # cppzmq's unit tests (Catch2 v2, as cppzmq 4.10 wants), built against strix's libzmq.so.5 and libzmq
  redis-server libhiredis-dev # chat cluster mode: the backplane (tests start their own on a free port); hiredis's RESP reader
  chromium-headless-shell     # the web chat page's browser test (driven through Playwright, fetched by its build step)
  nodejs                      # (with npm) the chat client SDK's and the web chat page's builds: flatc --ts output bundled by esbuild (scripts/build-sdk.sh, build-web.sh, build-chat-app.sh; npm packages pinned in sdk/ts/, apps/chat/web/ and examples/chat_app/package-lock.json)
  python3-websockets python3-venv  # WebSocket protocol tests; venvs for PyPI tools (Autobahn case runner, Playwright)
  python3-dev                 # pyzmq built from its sdist (Python.h) against libzmq and strix's libzmq.so.5 (scripts/pyzmq-venv.sh)
  python3-zmq                 # Debian's pyzmq, built against the system's libzmq.so.5: the unchanged binary run on strix's
  gnuplot-nox                 # echo.png and other plots written by make bench
  wrk                         # make bench-api: 50 keep-alive connections POSTing to the server API while the chat load runs
  curl iproute2               # make bench-zmq: fetches libzmq's source package (its perf programs); ss sees a receiver listen
  clang-16 libclang-rt-16-dev llvm-16   # make fuzz and SANITIZE=1 builds: libFuzzer, the sanitizers, llvm-symbolizer
  clang-format-16             # make format only: .clang-format
)

missing=()
for p in "${packages[@]}"; do
  [[ "$p" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "strix: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "strix: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
