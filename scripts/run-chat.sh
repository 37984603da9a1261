#!/usr/bin/env bash
# make run: starts strix-chat-server on 127.0.0.1 with an embedded SQLite database and prints how
# to connect, the web chat page's address included. CHAT_PORT (7000), WS_PORT (8080: the page and
# its WebSocket), METRICS_PORT (9100) and CHAT_DB (sqlite:var/strix.db) override.
set -euo pipefail
build=${1:-build}
port=${CHAT_PORT:-7000}
metrics=${METRICS_PORT:-9100}
ws=${WS_PORT:-8080}
db=${CHAT_DB:-sqlite:var/strix.db}
bin="$build/bin"

cat <<MSG
strix-chat-server on 127.0.0.1:$port, database $db, metrics http://127.0.0.1:$metrics/metrics
  web chat page:               http://127.0.0.1:$ws/   (open it in a browser; WebSocket ws://127.0.0.1:$ws/ws)
  chat from another terminal:  $bin/strix-chat-client --port $port --name alice
  portfolio's load test:       $bin/strix-chat-load --port $port --clients 500 --rooms 10 --rps 10 --duration 60
  the same over WebSocket:     $bin/strix-chat-load --ws --port $ws --clients 500 --rooms 10 --rps 10 --duration 60
  (the load test logs in 500 accounts; the first run creates them with argon2id, which takes a while
   at the interactive cost: start the server with --password-cost fast for load runs)
TLS (for other machines): $bin/strix-chat-server --host 0.0.0.0 --tls-cert CERT --tls-key KEY, clients --tls --ca CERT (README, "Chat over TLS")
Ctrl-C stops the server gracefully (queued chat logs are written first).
MSG
exec "$bin/strix-chat-server" --host 127.0.0.1 --port "$port" --metrics-port "$metrics" --ws-port "$ws" --db "$db" \
  --auto-register
