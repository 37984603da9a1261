#!/usr/bin/env bash
# Starts the example application: strix-chat-server (JWT logins, webhooks to the backend, and the
# server API when the server has one) and the backend, with secrets made on the first run in
# var/chat_app/ (the chat database too). Ctrl-C stops both.
#   examples/chat_app/run.sh [build dir]      (from the repository root, after `make build`)
# Then open http://127.0.0.1:8080/ and log in as alice, bob or carol with the password "demo".
# Ports: APP_PORT (8080, the backend), CHAT_PORT (8081, WebSocket), API_PORT (8082), TCP_PORT (7000).
set -euo pipefail
build=$(realpath "${1:-build}")
server=$build/bin/strix-chat-server
backend=$build/examples/chat_app/server.mjs
[ -x "$server" ] && [ -f "$backend" ] || { echo "run.sh: build first (make build): no $server or $backend" >&2; exit 1; }
app_port=${APP_PORT:-8080} chat_port=${CHAT_PORT:-8081} api_port=${API_PORT:-8082} tcp_port=${TCP_PORT:-7000}

var=var/chat_app
mkdir -p "$var"
umask 077
# The JWT key is shared by the backend (signs) and the server (verifies); the webhook secret by
# the server (signs) and the backend (verifies); the API key lets the backend call the server.
[ -f "$var/jwt.key" ] || openssl rand -hex 32 > "$var/jwt.key"
[ -f "$var/webhook.secret" ] || openssl rand -hex 32 > "$var/webhook.secret"
[ -f "$var/api-keys" ] || echo "$(openssl rand -hex 32) chat-app-backend" > "$var/api-keys"

args=(--port "$tcp_port" --ws-port "$chat_port" --db "sqlite:$var/chat.db" --metrics-port 0
      --ws-origins "http://127.0.0.1:$app_port,http://localhost:$app_port"
      --jwt-key "$var/jwt.key"
      --webhook-url "http://127.0.0.1:$app_port/webhooks" --webhook-secret "$var/webhook.secret"
      --webhook-messages lobby)
backend_args=(--port "$app_port" --chat-url "ws://127.0.0.1:$chat_port/ws"
              --jwt-key "$var/jwt.key" --webhook-secret "$var/webhook.secret")
if "$server" --help | grep -q -- --api-port; then
  args+=(--api-port "$api_port" --api-keys "$var/api-keys")
  backend_args+=(--api-url "http://127.0.0.1:$api_port" --api-key "$var/api-keys")
fi

"$server" "${args[@]}" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null' EXIT
node "$backend" "${backend_args[@]}"
