#!/usr/bin/env bash
# ctest driver: strix-echo-bench --ws against the WebSocket echo servers that are built.
#   echo_ws_test.sh <strix-echo-bench> <build dir> <work dir> [<strix-echo-server> [<strix-ws-broadcast-server>]]
# The servers: fastwebsockets-echo, tungstenite-echo and gobwas-echo when bench/peers/build.sh
# built them (listed in <build dir>/peers/status.txt), and strix-echo-server when it takes --ws.
# With none of them built the test is skipped (exit 77), not passed.
#   per server   10 connections, depth 16, 1 KB messages, 1 s: exit 0, ok, every echo verified
#   gobwas       the client must catch what a wrong server does: echo mode against the broadcast
#                server (other connections' messages arrive) fails with a content mismatch;
#                --broadcast against it passes with deliveries = sends x connections; --broadcast
#                against the echo server fails with deliveries missing.
#   strix-ws-broadcast-server (when given and built): --broadcast passes against it.
#   ws_fragment_echo.py (with $ECHO_WS_PYTHON, a python3 that has `websockets`): echoes come back
#                in three fragments while the server pings every 20 ms; every echo must verify
#                (several connections, so pieces of different connections' messages interleave).
# shellcheck source=../test_lib.sh
. "$(dirname "$0")/../test_lib.sh"
client=$1 build=$2 work=$3 strix=${4:-} strix_bc=${5:-}
mkdir -p "$work"
client_opts=(--ws)

# The servers to try: name|binary|options.
servers=()
gobwas=
for peer in fastwebsockets tungstenite gobwas; do
  b=$(peer_binary "$build" "$peer")
  if [ -n "$b" ]; then
    servers+=("$peer|$b|--threads 1")
    [ "$peer" = gobwas ] && gobwas=$b
  else
    echo "note: $peer is not built (bench/peers/build.sh $build); not tried"
  fi
done
if [ -n "$strix" ] && [ -x "$strix" ] && "$strix" --help 2>&1 | grep -q -- --ws; then
  servers+=("strix-ws|$strix|--shards 1 --ws")
else
  echo "note: strix-echo-server has no --ws in this build; not tried"
fi
if [ "${#servers[@]}" -eq 0 ]; then
  echo "SKIP: no WebSocket echo server built (cmake --build $build --target echo-peers builds the peers)"
  exit 77
fi

for s in "${servers[@]}"; do
  IFS='|' read -r name bin targs <<<"$s"
  # shellcheck disable=SC2086  # targs is a list of options
  start_server "$work/$name.server.log" "$bin" $targs
  w=$work/$name
  run_client "$name" "$w" --connections 10 --size 1024 --depth 16
  [ "$rc" -eq 0 ] || fail "$name: client exited $rc"
  [ "$(json_field "$w.json" ok)" = True ] || fail "$name: ok != true"
  [ "$(json_field "$w.json" ws)" = True ] || fail "$name: the run was not over WebSocket"
  [ "$(json_field "$w.json" errors)" = 0 ] || fail "$name: errors != 0"
  [ "$(json_field "$w.json" outstanding)" = 0 ] || fail "$name: outstanding != 0"
  verified=$(json_field "$w.json" verified)
  [ "$verified" -ge 1600 ] || fail "$name: only $verified echoes verified"
  grep -q '^result: PASS' "$w.log" || fail "$name: no 'result: PASS'"
  stop_server any
done

if [ -n "$gobwas" ]; then
  start_server "$work/gobwas-bc.server.log" "$gobwas" --threads 1 --broadcast
  run_client gobwas-bc "$work/echo-vs-bc" --connections 3 --size 64 --depth 4
  [ "$rc" -ne 0 ] || fail "echo mode passed against a broadcast server (other connections' messages went unnoticed)"
  grep -q 'content mismatch' "$work/echo-vs-bc.log" || fail "echo mode against a broadcast server: no 'content mismatch'"
  run_client gobwas-bc "$work/bc" --broadcast --connections 8 --size 64 --depth 4
  [ "$rc" -eq 0 ] || fail "--broadcast against gobwas-echo --broadcast exited $rc"
  [ "$(json_field "$work/bc.json" broadcast)" = True ] || fail "the broadcast run did not say broadcast"
  delivered=$(json_field "$work/bc.json" verified)
  [ "$delivered" -ge 800 ] || fail "--broadcast: only $delivered deliveries verified"
  [ $((delivered % 8)) -eq 0 ] || fail "--broadcast: $delivered deliveries is not a multiple of the 8 connections"
  stop_server any
  start_server "$work/gobwas-echo.server.log" "$gobwas" --threads 1
  run_client gobwas "$work/bc-vs-echo" --broadcast --connections 3 --size 64 --depth 4 --drain-timeout 1
  [ "$rc" -ne 0 ] || fail "--broadcast passed against an echo server (missing deliveries went unnoticed)"
  grep -q 'deliveries still missing' "$work/bc-vs-echo.log" || fail "--broadcast against an echo server: no 'deliveries still missing'"
  stop_server any
fi
py=${ECHO_WS_PYTHON:-python3}
if "$py" -c 'import websockets' 2>/dev/null; then
  port=$(free_port)
  "$py" "$(dirname "$0")/ws_fragment_echo.py" "$port" >"$work/fragments.server.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  run_client fragments "$work/fragments" --connections 4 --size 1000 --depth 4
  [ "$rc" -eq 0 ] || fail "fragmented echoes with pings: client exited $rc"
  [ "$(json_field "$work/fragments.json" verified)" -ge 100 ] || fail "fragmented echoes: too few verified"
  stop_server any
  servers+=("fragments+pings|$py|")
else
  echo "note: $py has no websockets module; the fragment and ping check is not run"
fi

if [ -n "$strix_bc" ] && [ -x "$strix_bc" ]; then
  start_server "$work/strix-bc.server.log" "$strix_bc" --shards 2
  run_client strix-bc "$work/strix-bc" --broadcast --connections 8 --size 64 --depth 4
  [ "$rc" -eq 0 ] || fail "--broadcast against strix-ws-broadcast-server exited $rc"
  delivered=$(json_field "$work/strix-bc.json" verified)
  [ "$delivered" -ge 800 ] || fail "--broadcast against strix: only $delivered deliveries verified"
  [ $((delivered % 8)) -eq 0 ] || fail "--broadcast against strix: $delivered deliveries is not a multiple of 8"
  stop_server any
  servers+=("strix-ws-bc|$strix_bc|")
fi
echo "PASS: strix-echo-bench --ws against $(printf '%s\n' "${servers[@]}" | cut -d'|' -f1 | tr '\n' ' ')${gobwas:+and the broadcast checks}"
