#!/usr/bin/env bash
# The web chat page's build (a step of `make build`, run by CMake's strix_chat_web target):
#   build-web.sh <apps/chat/web> <chat.fbs> <out dir>
# Fetches the pinned npm packages (package-lock.json) into <out>/node_modules when the lock file
# changed, generates the schema's TypeScript with flatc (Debian's flatbuffers-compiler 2.0.8; the
# npm runtime is flatbuffers 2.0.7, the last 2.0.x published), type-checks with tsc and bundles with
# esbuild into <out>/dist/{index.html,app.js}, which the server embeds (apps/chat/server/web/).
set -euo pipefail
src=$(realpath "$1") schema=$(realpath "$2") out=$3
mkdir -p "$out"
out=$(realpath "$out")

if ! cmp -s "$src/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules" ]; then
  command -v npm >/dev/null || { echo "build-web.sh: npm not found: install nodejs (scripts/install-deps.sh)" >&2; exit 1; }
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  # esbuild's install script only checks its platform binary, which npm ci fetches anyway.
  (cd "$out" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

rm -rf "$out/src"
cp -r "$src/src" "$out/src"
cp "$src/tsconfig.json" "$out/"
flatc --ts -o "$out/src/gen" "$schema"
(cd "$out" && node_modules/.bin/tsc -p tsconfig.json)
mkdir -p "$out/dist"
"$out/node_modules/.bin/esbuild" "$out/src/main.ts" --bundle --target=es2020 --log-level=warning \
  --outfile="$out/dist/app.js"
cp "$src/index.html" "$out/dist/index.html"
