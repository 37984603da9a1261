#!/usr/bin/env bash
# Writes a throwaway test CA and a server certificate for 127.0.0.1 / localhost, for the TLS echo
# benchmark and its tests (openssl CLI, Debian package `openssl`). Never commit what it writes:
# the private keys are in the clear.
#
#   bench/echo/echo_tls_cert.sh <dir> [ec|rsa]
#
#   <dir>/ca.crt       self-signed CA (what strix-echo-bench --ca verifies against)
#   <dir>/server.crt   server certificate signed by the CA: subjectAltName IP:127.0.0.1,
#                      DNS:localhost; serverAuth; valid 30 days
#   <dir>/server.key   its private key, PKCS#8 PEM
#   <dir>/ca.key       the CA's key (kept only so the CA can sign again)
# Key type: ec (default) = ECDSA P-256 with ecdsa-with-SHA256, what most TLS benchmarks and
# Let's Encrypt default to; rsa = RSA 2048 with sha256WithRSAEncryption. A set already in <dir>
# of the same type and valid for at least another day is kept, so repeated runs measure the
# same certificate.
set -euo pipefail

dir=${1:?usage: echo_tls_cert.sh <dir> [ec|rsa]}
kind=${2:-ec}
case $kind in
  ec) keyopt=(-algorithm EC -pkeyopt ec_paramgen_curve:P-256) ;;
  rsa) keyopt=(-algorithm RSA -pkeyopt rsa_keygen_bits:2048) ;;
  *) echo "echo_tls_cert.sh: key type must be ec or rsa, got '$kind'" >&2; exit 2 ;;
esac
command -v openssl >/dev/null || {
  echo "echo_tls_cert.sh: the openssl command is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
}
mkdir -p "$dir"

if [ -f "$dir/server.crt" ] && [ -f "$dir/server.key" ] && [ -f "$dir/ca.crt" ] &&
   [ "$(cat "$dir/kind" 2>/dev/null)" = "$kind" ] &&
   openssl x509 -checkend 86400 -noout -in "$dir/server.crt" >/dev/null 2>&1 &&
   openssl verify -CAfile "$dir/ca.crt" "$dir/server.crt" >/dev/null 2>&1; then
  exit 0
fi

tmp=$(mktemp -d "$dir/.cert.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
umask 077
openssl genpkey "${keyopt[@]}" -out "$tmp/ca.key" 2>/dev/null
openssl req -x509 -new -key "$tmp/ca.key" -sha256 -days 30 -subj "/CN=strix echo test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$tmp/ca.crt" 2>/dev/null
openssl genpkey "${keyopt[@]}" -out "$tmp/server.key" 2>/dev/null
openssl req -new -key "$tmp/server.key" -subj "/CN=localhost" -out "$tmp/server.csr" 2>/dev/null
cat >"$tmp/ext.cnf" <<'EXT'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
EXT
openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -sha256 -days 30 -extfile "$tmp/ext.cnf" -out "$tmp/server.crt" 2>/dev/null
openssl verify -CAfile "$tmp/ca.crt" "$tmp/server.crt" >/dev/null
echo "$kind" >"$tmp/kind"
chmod 644 "$tmp/ca.crt" "$tmp/server.crt"
for f in ca.key ca.crt server.key server.crt kind; do mv -f "$tmp/$f" "$dir/$f"; done
echo "echo_tls_cert.sh: wrote a test CA ($kind) and server certificate for 127.0.0.1/localhost into $dir"
