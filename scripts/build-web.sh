#!/usr/bin/env bash
# The web chat page's build (a step of `make build`, run by CMake's strix_chat_web target):
#   build-web.sh <apps/chat/web> <built SDK package> <out dir>
# Fetches the pinned npm packages (package-lock.json) into <out>/node_modules when the lock file
# changed, links the chat client SDK (@strix/chat-client, built by scripts/build-sdk.sh into the
# given folder) into them as npm links a local package, type-checks with tsc and bundles with
# esbuild into <out>/dist/{index.html,app.js}, which the server embeds (apps/chat/server/web/).
set -euo pipefail
src=$(realpath "$1") sdk=$(realpath "$2") out=$3
mkdir -p "$out"
out=$(realpath "$out")

if ! cmp -s "$src/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules" ]; then
  command -v npm >/dev/null || { echo "build-web.sh: npm not found: install nodejs (scripts/install-deps.sh)" >&2; exit 1; }
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  # esbuild's install script only checks its platform binary, which npm ci fetches anyway.
  (cd "$out" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

mkdir -p "$out/node_modules/@strix"
ln -sfn "$sdk" "$out/node_modules/@strix/chat-client"
rm -rf "$out/src"
cp -r "$src/src" "$out/src"
cp "$src/tsconfig.json" "$out/"
(cd "$out" && node_modules/.bin/tsc -p tsconfig.json)
mkdir -p "$out/dist"
"$out/node_modules/.bin/esbuild" "$out/src/main.ts" --bundle --target=es2020 --log-level=warning \
  --outfile="$out/dist/app.js"
cp "$src/index.html" "$out/dist/index.html"
