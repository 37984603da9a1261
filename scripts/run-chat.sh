#!/usr/bin/env bash
# make run: starts strix-chat-server on 127.0.0.1 with an embedded SQLite database and prints how
# to connect. CHAT_PORT (7000), METRICS_PORT (9100) and CHAT_DB (sqlite:var/strix.db) override.
set -euo pipefail
build=${1:-build}
port=${CHAT_PORT:-7000}
metrics=${METRICS_PORT:-9100}
db=${CHAT_DB:-sqlite:var/strix.db}
bin="$build/bin"

cat <<MSG
strix-chat-server on 127.0.0.1:$port, database $db, metrics http://127.0.0.1:$metrics/metrics
  chat from another terminal:  $bin/strix-chat-client --port $port --name alice
  load test (seed 004):        $bin/strix-chat-load --port $port --clients 500 --rooms 10 --rps 10 --duration 60
  (the load test logs in 500 accounts; the first run creates them with argon2id, which takes a while
   at the interactive cost: start the server with --password-cost fast for load runs)
TLS (for other machines): $bin/strix-chat-server --host 0.0.0.0 --tls-cert CERT --tls-key KEY, clients --tls --ca CERT (README, "Chat over TLS")
Ctrl-C stops the server gracefully (queued chat logs are written first).
MSG
exec "$bin/strix-chat-server" --host 127.0.0.1 --port "$port" --metrics-port "$metrics" --db "$db" --auto-register
