#!/usr/bin/env bash
# ctest driver: strix-echo-bench --tls against the TLS echo servers that are built.
#   echo_tls_test.sh echo|handshakes <strix-echo-bench> <build dir> <work dir> [<strix-echo-server>]
# The servers: go-tls-echo and tokio-tls-echo when bench/peers/build.sh built them (listed in
# <build dir>/peers/status.txt), and strix-echo-server when it takes --tls-cert. With none of
# them built the test is skipped (exit 77), not passed. Certificates: echo_tls_cert.sh into the
# work dir, plus a second, unrelated CA for the negative check.
#   echo        per server: 10 connections, depth 16, 1 s, TLS 1.3 and again with --tls-max 1.2,
#               verified against the CA: exit 0, ok, every echo verified, the version negotiated;
#               then verified against the unrelated CA: the handshake must fail and say why.
#   handshakes  per server: 4 slots, 1 s of --handshakes --resume: exit 0, resumed > 0 and over
#               90 % of the handshakes; then 1 s of full handshakes: resumed = 0, full > 0.
# shellcheck source=../test_lib.sh
. "$(dirname "$0")/../test_lib.sh"
kind=$1 client=$2 build=$3 work=$4 strix=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
client_opts=(--tls)

# The servers to try: name|binary|TLS options (CERT and KEY are filled in below).
servers=()
for peer in go-tls tokio-tls; do
  b=$(peer_binary "$build" "$peer")
  if [ -n "$b" ]; then
    servers+=("$peer|$b|--threads 1 --cert CERT --key KEY")
  else
    echo "note: $peer is not built (bench/peers/build.sh $build); not tried"
  fi
done
if [ -n "$strix" ] && [ -x "$strix" ] && "$strix" --help 2>&1 | grep -q -- --tls-cert; then
  servers+=("strix-tls|$strix|--shards 1 --tls-cert CERT --tls-key KEY")
else
  echo "note: strix-echo-server has no --tls-cert in this build; not tried"
fi
if [ "${#servers[@]}" -eq 0 ]; then
  echo "SKIP: no TLS echo server built (cmake --build $build --target echo-peers builds the peers)"
  exit 77
fi

"$here/echo_tls_cert.sh" "$work/cert" >/dev/null
"$here/echo_tls_cert.sh" "$work/other-ca" >/dev/null
cert=$work/cert/server.crt key=$work/cert/server.key ca=$work/cert/ca.crt

for s in "${servers[@]}"; do
  IFS='|' read -r name bin targs <<<"$s"
  targs=${targs/CERT/$cert}
  targs=${targs/KEY/$key}
  # shellcheck disable=SC2086  # targs is a list of options
  start_server "$work/$name.server.log" "$bin" $targs
  w=$work/$name
  if [ "$kind" = echo ]; then
    for v in 1.3 1.2; do
      run_client "$name" "$w-tls$v" --ca "$ca" --tls-max "$v" --connections 10 --size 8 --depth 16
      [ "$rc" -eq 0 ] || fail "$name: client exited $rc over TLS $v"
      [ "$(json_field "$w-tls$v.json" ok)" = True ] || fail "$name: ok != true over TLS $v"
      [ "$(json_field "$w-tls$v.json" errors)" = 0 ] || fail "$name: errors != 0 over TLS $v"
      [ "$(json_field "$w-tls$v.json" outstanding)" = 0 ] || fail "$name: outstanding != 0 over TLS $v"
      [ "$(json_field "$w-tls$v.json" tls_verified)" = True ] || fail "$name: certificate not verified"
      verified=$(json_field "$w-tls$v.json" verified)
      [ "$verified" -ge 1600 ] || fail "$name: only $verified echoes verified over TLS $v"
      session=$(json_field "$w-tls$v.json" tls_session)
      [[ "$session" == "TLSv$v "* ]] || fail "$name: negotiated '$session', not TLS $v"
      grep -q '^result: PASS' "$w-tls$v.log" || fail "$name: no 'result: PASS' over TLS $v"
    done
    run_client "$name" "$w-wrong-ca" --ca "$work/other-ca/ca.crt" --connections 2 --depth 1
    [ "$rc" -ne 0 ] || fail "$name: client exited 0 although the certificate is not from --ca"
    grep -q 'certificate verify failed' "$w-wrong-ca.log" || fail "$name: no 'certificate verify failed' with the wrong CA"
    [ "$(json_field "$w-wrong-ca.json" verified)" = 0 ] || fail "$name: echoes verified through an unverified server"
  else
    run_client "$name" "$w-resume" --ca "$ca" --handshakes --resume --connections 4 --threads 1
    [ "$rc" -eq 0 ] || fail "$name: --handshakes --resume exited $rc"
    resumed=$(json_field "$w-resume.json" resumed)
    full=$(json_field "$w-resume.json" full)
    [ "$resumed" -gt 0 ] || fail "$name: no handshake resumed"
    [ $((resumed * 10)) -ge $(((resumed + full) * 9)) ] || fail "$name: only $resumed of $((resumed + full)) resumed"
    run_client "$name" "$w-full" --ca "$ca" --handshakes --connections 4 --threads 1
    [ "$rc" -eq 0 ] || fail "$name: --handshakes exited $rc"
    [ "$(json_field "$w-full.json" resumed)" = 0 ] || fail "$name: a handshake resumed without --resume"
    [ "$(json_field "$w-full.json" full)" -gt 0 ] || fail "$name: no full handshake completed"
  fi
  stop_server any
done
echo "PASS: strix-echo-bench --tls ($kind) against $(printf '%s\n' "${servers[@]}" | cut -d'|' -f1 | tr '\n' ' ')"
