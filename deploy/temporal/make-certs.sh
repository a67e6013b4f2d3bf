#!/bin/sh
# The two private CAs of the Temporal cluster and the certificates they sign: the cluster CA for
# mutual TLS on the frontend (its clients: the API, the workers, the Web UI and the Temporal system
# worker), the internode CA for mutual TLS between the Temporal services. A certificate of one CA
# is refused where the other is required, so no frontend client can speak to history or matching
# directly. Run by `npm run stack:prod` (CERT_DIR = <state
# dir>/tls) and by the one-shot `temporal-certs` job of docker-compose.yml (CERT_DIR = /certs).
# Each file is made once: a second run keeps what exists, so every start can run it.
#
#   ca/ca.pem, ca/ca.key               the cluster CA (the key never leaves this folder)
#   internode-ca/ca.pem, ca.key        the internode CA (the key never leaves this folder)
#   temporal/frontend.pem|key          frontend server certificate (DNS temporal-frontend, localhost, IP 127.0.0.1)
#   temporal/internode.pem|key         internode CA: server and client certificate between the Temporal services (DNS internode)
#   temporal/system-worker.pem|key     client certificate of the Temporal system worker at the frontend (CN temporal-system-worker)
#   temporal/internode-ca.pem          the internode CA certificate
#   api/client.pem|key                 client certificate of the API processes (CN temporal-client-api)
#   worker/client.pem|key              client certificate of the workers (CN temporal-client-worker)
#   ui/client.pem|key                  client certificate of the Web UI server (CN temporal-client-ui)
#   <each holder>/ca.pem               the cluster CA certificate, to verify the other side
#
# The frontend authorizes each call by the client certificate's common name
# (deploy/temporal/authorization.yaml). A certificate made by an earlier version, when one CA signed
# everything, is made again: an internode certificate the internode CA did not sign.
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
mkdir -p "$DIR/ca" "$DIR/internode-ca" "$DIR/temporal" "$DIR/api" "$DIR/worker" "$DIR/ui"

# make_ca <folder> <common name>
make_ca() {
  if [ -s "$DIR/$1/ca.pem" ] && [ -s "$DIR/$1/ca.key" ]; then return 0; fi
  "$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 3650 \
    -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$DIR/$1/ca.key" -out "$DIR/$1/ca.pem" 2>/dev/null
  echo "made the CA $2: $DIR/$1/ca.pem"
}
make_ca ca temporal-cluster-ca
make_ca internode-ca temporal-internode-ca

# issue <CA folder> <folder> <name> <common name> <extendedKeyUsage> [subjectAltName]
# Keeps a certificate that exists and that this CA signed.
issue() {
  ca="$DIR/$1"
  shift
  out="$DIR/$1"
  if [ -s "$out/$2.pem" ] && [ -s "$out/$2.key" ]; then
    if "$OPENSSL" verify -CAfile "$ca/ca.pem" "$out/$2.pem" >/dev/null 2>&1; then return 0; fi
    echo "$1/$2.pem is not signed by $(basename "$ca"): made again"
    rm -f "$out/$2.pem" "$out/$2.key"
  fi
  ext="$out/$2.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$4"
    if [ -n "${5:-}" ]; then echo "subjectAltName=$5"; fi
  } >"$ext"
  "$OPENSSL" req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
    -keyout "$out/$2.key" -out "$out/$2.csr" 2>/dev/null
  "$OPENSSL" x509 -req -sha256 -days "$DAYS" -in "$out/$2.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
    -set_serial "0x$("$OPENSSL" rand -hex 16)" -extfile "$ext" -out "$out/$2.pem" 2>/dev/null
  rm -f "$out/$2.csr" "$ext"
  echo "made $1/$2.pem ($3)"
}

issue ca temporal frontend temporal-frontend serverAuth "DNS:temporal-frontend,DNS:localhost,IP:127.0.0.1"
issue internode-ca temporal internode internode serverAuth,clientAuth "DNS:internode"
issue ca temporal system-worker temporal-system-worker clientAuth
issue ca api client temporal-client-api clientAuth
issue ca worker client temporal-client-worker clientAuth
issue ca ui client temporal-client-ui clientAuth

for holder in temporal api worker ui; do
  cp "$DIR/ca/ca.pem" "$DIR/$holder/ca.pem"
done
cp "$DIR/internode-ca/ca.pem" "$DIR/temporal/internode-ca.pem"
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
