#!/usr/bin/env bash
# The chat client SDK's build (sdk/ts, the npm package @strix/chat-client; a step of `make build`,
# run by CMake's strix_chat_sdk target, or by `npm run build` in sdk/ts):
#   build-sdk.sh <sdk/ts> <chat.fbs> <out dir>
# Fetches the pinned npm packages (package-lock.json) into <out>/node_modules when the lock file
# changed, generates the schema's TypeScript with flatc, type-checks with tsc (which writes the
# .d.ts files into <out>/dist) and bundles with esbuild into <out>/dist/index.js (ES module, the
# flatbuffers runtime inside, the `ws` package loaded only where no global WebSocket exists).
# <out> is then the installable package: package.json, README.md, dist/.
set -euo pipefail
src=$(realpath "$1") schema=$(realpath "$2") out=$3
mkdir -p "$out"
out=$(realpath "$out")

if ! cmp -s "$src/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules" ]; then
  command -v npm >/dev/null || { echo "build-sdk.sh: npm not found: install nodejs (scripts/install-deps.sh)" >&2; exit 1; }
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  # esbuild's install script only checks its platform binary, which npm ci fetches anyway.
  (cd "$out" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

rm -rf "$out/src" "$out/dist"
cp -r "$src/src" "$out/src"
cp "$src/tsconfig.json" "$src/package.json" "$src/README.md" "$out/"
flatc --ts -o "$out/src/gen" "$schema"
(cd "$out" && node_modules/.bin/tsc -p tsconfig.json)
"$out/node_modules/.bin/esbuild" "$out/src/index.ts" --bundle --format=esm --target=es2020 --log-level=warning \
  --outfile="$out/dist/index.js"
