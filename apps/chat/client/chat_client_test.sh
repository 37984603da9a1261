#!/usr/bin/env bash
# ctest driver (chat.client_pipe): strix-chat-client driven through pipes against a fresh server.
#   chat_client_test.sh <strix-chat-client> <strix-chat-server> <work dir>
# alice gives her name and password as input lines, creates a room and talks; bob (name and
# password as options) lists the rooms, joins, answers, provokes an error, leaves and quits; both
# must see the same messages with the same room seqs, in order, and the notices; bob's /history
# shows him the line alice said before he came. bob messages alice by name (/dm: a direct room),
# blocks her (her next line is refused) and unblocks her; alice, lobby's owner, kicks him. A wrong password
# must end a client with status 1 and the server's reason. Device tokens: alice's client keeps
# hers in a 0600 file under $XDG_STATE_HOME (a fresh one after each login), bob's, run with
# --no-device-token, keeps none.
set -euo pipefail

client=$1 server=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.out; do echo "--- $f" >&2; cat "$f" >&2; done
  exit 1
}

# A port below the ephemeral range (scripts/free_port.py says why).
free_port_py=$(cd "$(dirname "$0")/../../.." && pwd)/scripts/free_port.py
free_port() {
  python3 "$free_port_py"
}

# wait_for <file> <extended regex>: up to 10 s for a line matching it.
wait_for() {
  for _ in $(seq 200); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "no line matching '$2' in $1 within 10 s"
}

# Device tokens go under the work directory, never into the real home.
export XDG_STATE_HOME="$work/state"
tokens="$work/state/strix-chat/device-tokens"

port=$(free_port)
mport=$(free_port)
"$server" --db "sqlite:$work/chat.db" --password-cost fast --port "$port" --metrics-port "$mport" >"$work/server.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "server exited at start"; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done

# alice: everything, login included, through her input pipe.
mkfifo "$work/alice.in" "$work/bob.in"
"$client" --port "$port" <"$work/alice.in" >"$work/alice.out" 2>&1 &
alice=$!
pids+=("$alice")
exec 3>"$work/alice.in"
printf 'alice\nalice-pw\n/create lobby\n' >&3
wait_for "$work/alice.out" "^logged in as alice \(player [0-9]+\)"
wait_for "$work/alice.out" "^created room [0-9]+ 'lobby'"
room=$(sed -nE "s/^created room ([0-9]+) 'lobby'.*/\1/p" "$work/alice.out")
printf 'hello from alice\n' >&3
wait_for "$work/alice.out" "^\[$room#1\] alice: hello from alice$"

# bob: name and password as options.
"$client" --port "$port" --name bob --password bob-pw --no-device-token <"$work/bob.in" >"$work/bob.out" 2>&1 &
bob=$!
pids+=("$bob")
exec 4>"$work/bob.in"
printf '/rooms\n' >&4
wait_for "$work/bob.out" "^  $room  lobby  \(1 member\)$"
printf '/join %s\n' "$room" >&4
wait_for "$work/bob.out" "^joined room $room 'lobby' .*members: .*alice"
grep -Eq "^joined room $room 'lobby' .*members: .*bob" "$work/bob.out" || fail "bob is not among the members"
wait_for "$work/alice.out" "^\* bob joined room $room$"
# bob joined after alice's first line: /history shows it to him from the database.
printf '/history\n' >&4
wait_for "$work/bob.out" "^history of room $room:$"
wait_for "$work/bob.out" "^\[$room#1\] alice: hello from alice$"
wait_for "$work/bob.out" "^\(the oldest stored message\)$"
printf 'hi alice\n' >&4
wait_for "$work/bob.out" "^\[$room#2\] bob: hi alice$"
wait_for "$work/alice.out" "^\[$room#2\] bob: hi alice$"
printf 'three\n' >&3
wait_for "$work/bob.out" "^\[$room#3\] alice: three$"
# A second room: bob stays in lobby too (protocol version 2), talks in the current one.
printf '/create second\n' >&4
wait_for "$work/bob.out" "^created room [0-9]+ 'second'"
second=$(sed -nE "s/^created room ([0-9]+) 'second'.*/\1/p" "$work/bob.out")
printf 'in second\n' >&4
wait_for "$work/bob.out" "^\[$second#1\] bob: in second$"
printf '/mine\n' >&4
wait_for "$work/bob.out" "^  $second  second  0 unread  \(current\)$"
grep -Eq "^  $room  lobby  1 unread$" "$work/bob.out" || fail "bob's /mine does not list lobby with alice's 'three' unread"
printf '/switch %s\nback in lobby\n' "$room" >&4
wait_for "$work/alice.out" "^\[$room#4\] bob: back in lobby$"
# A direct message by name: bob's client enters the direct room (named after alice) and makes it
# current; alice's client is told of it, and its /history shows the line whether or not it came
# live (her session may join the room after the line).
printf '/dm alice psst, alice\n' >&4
wait_for "$work/bob.out" "^direct messages with alice in room [0-9]+ \(now the current room\)$"
dm=$(sed -nE 's/^direct messages with alice in room ([0-9]+) .*/\1/p' "$work/bob.out")
wait_for "$work/bob.out" "^\[$dm#1\] bob: psst, alice$"
wait_for "$work/alice.out" "^\* bob opened a direct conversation with you: room $dm "
printf '/switch %s\n/history\n' "$dm" >&3
wait_for "$work/alice.out" "^\[$dm#1\] bob: psst, alice$"
# Her /dm to bob goes to the room she is in now; bob blocks her, and her next line is refused.
printf '/dm bob hi bob\n' >&3
wait_for "$work/bob.out" "^\[$dm#2\] alice: hi bob$"
printf '/block alice\n' >&4
wait_for "$work/bob.out" "^blocked alice: no direct messages from them$"
printf '/dm bob still there?\n' >&3
wait_for "$work/alice.out" "^error: (chat|direct)_req: blocked: "
printf '/unblock alice\n' >&4
wait_for "$work/bob.out" "^unblocked alice$"
# Listed by the peer's name; alice's 'hi bob' is unread (the current room's lines count until /read).
printf '/mine\n' >&4
wait_for "$work/bob.out" "^  $dm  @alice  1 unread  \(current\)$"
# alice, lobby's owner, kicks bob: both read the notice, and bob is out of lobby.
printf '/switch %s\n/kick bob\n' "$room" >&3
wait_for "$work/alice.out" "^\[$room#5\] \* bob was kicked by you$"
wait_for "$work/bob.out" "^\[$room#5\] \* you were kicked by alice$"
wait_for "$work/bob.out" "^left room $room 'lobby'$"
# A name the room has not seen is refused before anything is sent.
printf '/kick nobody\n' >&3
wait_for "$work/alice.out" "^no account called nobody seen in room $room "
printf '/switch %s\n/exit\n' "$second" >&4
wait_for "$work/bob.out" "^left room $second 'second'$"
wait_for "$work/bob.out" "^now in room $dm '@alice'$"
printf '/exit\n' >&4
wait_for "$work/bob.out" "^left room $dm '@alice'$"
printf 'not in a room any more\n/quit\n' >&4
exec 4>&-
rc=0
wait "$bob" || rc=$?
[ "$rc" -eq 0 ] || fail "bob's client exited $rc after /quit"
grep -q "^not in a room" "$work/bob.out" || fail "bob was not told he is not in a room"
grep -q "^bye$" "$work/bob.out" || fail "bob's client did not say bye"

# alice's view of lobby: its lines in seq order, the kick last, nothing from bob after it.
grep -E "^\[$room#" "$work/alice.out" >"$work/alice.chat"
printf '[%s#1] alice: hello from alice\n[%s#2] bob: hi alice\n[%s#3] alice: three\n[%s#4] bob: back in lobby\n' \
  "$room" "$room" "$room" "$room" >"$work/alice.want"
printf '[%s#5] * bob was kicked by you\n' "$room" >>"$work/alice.want"
diff "$work/alice.want" "$work/alice.chat" || fail "alice's chat lines differ from the expected ones"
# End of input ends the client like /quit.
exec 3>&-
rc=0
wait "$alice" || rc=$?
[ "$rc" -eq 0 ] || fail "alice's client exited $rc at the end of its input"

# alice's device token: 64 hex digits, readable by her alone; bob asked for none.
alice_token="$tokens/127.0.0.1_${port}_alice"
[ -f "$alice_token" ] || fail "alice's device token was not stored in $alice_token"
[ "$(stat -c %a "$alice_token")" = 600 ] || fail "alice's device token file has mode $(stat -c %a "$alice_token")"
[ "$(stat -c %a "$tokens")" = 700 ] || fail "the device token directory has mode $(stat -c %a "$tokens")"
grep -Eqx '[0-9a-f]{64}' "$alice_token" || fail "alice's device token file does not hold 64 hex digits"
[ ! -e "$tokens/127.0.0.1_${port}_bob" ] || fail "bob's client stored a device token despite --no-device-token"
first_token=$(cat "$alice_token")

# A wrong password: status 1 and the server's reason (alice's token does not stand in for it).
rc=0
printf 'alice\nnot-her-password\n' | timeout 20 "$client" --port "$port" >"$work/wrong.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "a wrong password gave status $rc, expected 1"
grep -q "^error: login_req: wrong_password" "$work/wrong.out" || fail "the wrong password was not reported"
[ "$(cat "$alice_token")" = "$first_token" ] || fail "a failed login replaced alice's device token"

# The next login presents the token and stores the fresh one the server hands out.
rc=0
printf 'alice\nalice-pw\n/quit\n' | timeout 20 "$client" --port "$port" >"$work/again.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "alice's second login gave status $rc"
grep -q "^logged in as alice" "$work/again.out" || fail "alice's second login failed"
grep -Eqx '[0-9a-f]{64}' "$alice_token" || fail "alice's new device token file does not hold 64 hex digits"
[ "$(cat "$alice_token")" != "$first_token" ] || fail "alice's device token was not replaced after her login"
token_logins=$(python3 -c 'import sys, urllib.request
for line in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode().splitlines():
    if line.startswith("strix_device_token_logins_total "): print(line.split()[1])' "$mport")
[ "$token_logins" = 1 ] || fail "the server saw $token_logins logins with a valid device token, expected 1 (alice's second)"

kill -TERM "$server_pid"
for _ in $(seq 100); do
  kill -0 "$server_pid" 2>/dev/null || { echo "PASS: strix-chat-client through pipes"; exit 0; }
  sleep 0.1
done
fail "server ignored SIGTERM for 10 s"
