#!/bin/sh
# The private CA of the Temporal cluster and the certificates it signs, for mutual TLS on the
# frontend and between the Temporal services. Run by `npm run stack:prod` (CERT_DIR = <state
# dir>/tls) and by the one-shot `temporal-certs` job of docker-compose.yml (CERT_DIR = /certs).
# Each file is made once: a second run keeps what exists, so every start can run it.
#
#   ca/ca.pem, ca/ca.key               the CA (the key never leaves this folder)
#   temporal/frontend.pem|key          frontend server certificate (DNS temporal-frontend, localhost, IP 127.0.0.1)
#   temporal/internode.pem|key         server and client certificate between the Temporal services (DNS internode)
#   api/client.pem|key                 client certificate of the API processes (CN temporal-client-api)
#   worker/client.pem|key              client certificate of the workers (CN temporal-client-worker)
#   ui/client.pem|key                  client certificate of the Web UI server (CN temporal-client-ui)
#   <each holder>/ca.pem               the CA certificate, to verify the other side
#
# Keys are 0600 and every folder 0700. Compose: TEMPORAL_UID, UI_UID, APP_UID (numeric) make each
# holder's folder owned by the user its container runs as, and each container mounts only its own.
# Environment: CERT_DIR (required), CERT_DAYS (leaf validity, default 825), OPENSSL (default openssl).
set -eu
DIR=${CERT_DIR:?set CERT_DIR}
DAYS=${CERT_DAYS:-825}
OPENSSL=${OPENSSL:-openssl}
umask 077
# The compose job runs in a plain alpine image: openssl is added there on first use.
if ! command -v "$OPENSSL" >/dev/null 2>&1 && command -v apk >/dev/null 2>&1; then
  apk add --no-cache openssl >/dev/null
fi
mkdir -p "$DIR/ca" "$DIR/temporal" "$DIR/api" "$DIR/worker" "$DIR/ui"

if [ ! -s "$DIR/ca/ca.pem" ] || [ ! -s "$DIR/ca/ca.key" ]; then
  "$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 3650 \
    -subj "/CN=temporal-cluster-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$DIR/ca/ca.key" -out "$DIR/ca/ca.pem" 2>/dev/null
  echo "made the cluster CA: $DIR/ca/ca.pem"
fi

# issue <folder> <name> <common name> <extendedKeyUsage> [subjectAltName]
issue() {
  out="$DIR/$1"
  if [ -s "$out/$2.pem" ] && [ -s "$out/$2.key" ]; then return 0; fi
  ext="$out/$2.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$4"
    if [ -n "${5:-}" ]; then echo "subjectAltName=$5"; fi
  } >"$ext"
  "$OPENSSL" req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
    -keyout "$out/$2.key" -out "$out/$2.csr" 2>/dev/null
  "$OPENSSL" x509 -req -sha256 -days "$DAYS" -in "$out/$2.csr" -CA "$DIR/ca/ca.pem" -CAkey "$DIR/ca/ca.key" \
    -set_serial "0x$("$OPENSSL" rand -hex 16)" -extfile "$ext" -out "$out/$2.pem" 2>/dev/null
  rm -f "$out/$2.csr" "$ext"
  echo "made $1/$2.pem ($3)"
}

issue temporal frontend temporal-frontend serverAuth "DNS:temporal-frontend,DNS:localhost,IP:127.0.0.1"
issue temporal internode internode serverAuth,clientAuth "DNS:internode"
issue api client temporal-client-api clientAuth
issue worker client temporal-client-worker clientAuth
issue ui client temporal-client-ui clientAuth

for holder in temporal api worker ui; do
  cp "$DIR/ca/ca.pem" "$DIR/$holder/ca.pem"
done
chmod 600 "$DIR"/*/*.key
chmod 644 "$DIR"/*/*.pem
chmod 700 "$DIR"/*

# Compose: each holder's folder belongs to the user its container runs as.
own() {
  if [ -n "${2:-}" ]; then chown -R "$2" "$DIR/$1"; fi
}
own temporal "${TEMPORAL_UID:-}"
own ui "${UI_UID:-}"
own api "${APP_UID:-}"
own worker "${APP_UID:-}"
