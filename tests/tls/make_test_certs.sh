#!/usr/bin/env bash
# Test certificates, made with openssl: make_test_certs.sh DIR writes into DIR
#   ca.pem ca.key             a self-signed CA (its CN is unique per run)
#   server.pem server.key     signed by it, for localhost and 127.0.0.1
#   client.pem client.key     signed by it, for client authentication (CN linalgd-test-client)
# Valid for 2 days; P-256 keys. Used by the C++, Python and CLI TLS tests.
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# sign NAME SUBJECT EXTENSIONS: NAME.key, NAME.pem signed by ca.
sign() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf '%b' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
key ca.key
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=linalgd test CA $$-$RANDOM" -out ca.pem
sign server /CN=localhost \
  'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature'
sign client /CN=linalgd-test-client \
  'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature'
