#!/usr/bin/env bash
# The example application's build (examples/chat_app; a step of `make build`, run by CMake's
# strix_example_chat_app target):
#   build-chat-app.sh <examples/chat_app> <built SDK package> <out dir>
# Fetches the pinned npm packages (package-lock.json: jose for the backend, esbuild and
# typescript for the page) into <out>/node_modules when the lock file changed, links the chat
# client SDK (@strix/chat-client, built by scripts/build-sdk.sh) into them, copies the backend
# (*.mjs) into <out>, type-checks the page with tsc and bundles it with esbuild into
# <out>/dist/{index.html,app.js}. Then `node <out>/server.mjs ...` runs the backend (run.sh).
set -euo pipefail
src=$(realpath "$1") sdk=$(realpath "$2") out=$3
mkdir -p "$out"
out=$(realpath "$out")

if ! cmp -s "$src/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules" ]; then
  command -v npm >/dev/null || { echo "build-chat-app.sh: npm not found: install nodejs (scripts/install-deps.sh)" >&2; exit 1; }
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  # esbuild's install script only checks its platform binary, which npm ci fetches anyway.
  (cd "$out" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

mkdir -p "$out/node_modules/@strix"
ln -sfn "$sdk" "$out/node_modules/@strix/chat-client"
cp "$src/package.json" "$src/tsconfig.json" "$src"/*.mjs "$out/"
rm -rf "$out/page"
cp -r "$src/page" "$out/page"
(cd "$out" && node_modules/.bin/tsc -p tsconfig.json)
mkdir -p "$out/dist"
"$out/node_modules/.bin/esbuild" "$out/page/app.ts" --bundle --target=es2020 --log-level=warning \
  --outfile="$out/dist/app.js"
cp "$src/page/index.html" "$out/dist/index.html"
