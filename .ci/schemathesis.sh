#!/usr/bin/env bash
# Schemathesis against a live service, started the way a user starts it (`npm start`, embedded
# Temporal and store in a temporary DATA_DIR, free ports). Checks every documented operation of
# /api/openapi.json for server errors (5xx) and for responses that do not match the document.
#
# Exit status: non-zero only for real findings: a server error (5xx) or a response that does not
# match the document. When schemathesis cannot be installed (no network), the service cannot be
# started here, or st itself fails without a report, it prints a SKIPPED line and exits 0
# (a missing or invalid /api/openapi.json is caught by test/integration/openapi.test.ts).
# Ends with one summary line: "schemathesis: PASSED|FAILED|SKIPPED ...".
#
# Environment: SCHEMATHESIS_VERSION (pinned below), SCHEMATHESIS_MAX_EXAMPLES (20),
# SCHEMATHESIS_MAX_TIME (seconds, 180), SCHEMATHESIS_VENV (where the venv is kept between runs),
# SCHEMATHESIS_REPORT_DIR (where to keep the JUnit report; default: a temporary directory).
set -uo pipefail
cd "$(dirname "$0")/.."

ST_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-20}"
MAX_TIME="${SCHEMATHESIS_MAX_TIME:-180}"
VENV="${SCHEMATHESIS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/automation-governance/schemathesis-$ST_VERSION}"
READY_TIMEOUT=300

log() { printf '[schemathesis] %s\n' "$*"; }
skip() {
  log "$*"
  echo "schemathesis: SKIPPED ($*)"
  exit 0
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/schemathesis.XXXXXX")
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    # npm start runs in its own process group (setsid): stop the whole group, then make sure.
    kill -TERM -- "-$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 30); do
      kill -0 -- "-$SERVER_PID" 2>/dev/null || break
      sleep 1
    done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=""
}
cleanup() {
  stop_server
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- schemathesis
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
if [ ! -x "$VENV/bin/st" ] || ! "$VENV/bin/st" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  log "installing schemathesis==$ST_VERSION into $VENV"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  if ! python3 -m venv "$VENV" >"$WORK/pip.log" 2>&1; then
    tail -5 "$WORK/pip.log"
    rm -rf "$VENV"
    skip "python3 -m venv failed (install python3-venv)"
  fi
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check --retries 2 --timeout 30 "schemathesis==$ST_VERSION" >>"$WORK/pip.log" 2>&1; then
    tail -5 "$WORK/pip.log"
    rm -rf "$VENV"
    skip "pip install schemathesis==$ST_VERSION failed (no network?)"
  fi
fi
log "$("$VENV/bin/st" --version)"

# ---------------------------------------------------------------- the service
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
PORT=$(free_port)
TEMPORAL_PORT=$(free_port)
TEMPORAL_UI_PORT=$(free_port)
while [ "$TEMPORAL_PORT" = "$PORT" ]; do TEMPORAL_PORT=$(free_port); done
while [ "$TEMPORAL_UI_PORT" = "$PORT" ] || [ "$TEMPORAL_UI_PORT" = "$TEMPORAL_PORT" ]; do TEMPORAL_UI_PORT=$(free_port); done
BASE="http://127.0.0.1:$PORT"
CLIENT_ID="schemathesis-$(node -e 'console.log(require("crypto").randomBytes(6).toString("hex"))')"
CLIENT_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64url"))')

log "npm start on port $PORT (Temporal $TEMPORAL_PORT, UI $TEMPORAL_UI_PORT, DATA_DIR $WORK/data)"
# The embedded store, as a user's first `npm start`: no DATABASE_URL, no external Temporal.
env -u DATABASE_URL -u TEMPORAL_ADDRESS \
  PORT="$PORT" HOST=127.0.0.1 BASE_URL="$BASE" TEMPORAL_PORT="$TEMPORAL_PORT" TEMPORAL_UI_PORT="$TEMPORAL_UI_PORT" \
  DATA_DIR="$WORK/data" BOOTSTRAP_CLIENT_ID="$CLIENT_ID" BOOTSTRAP_CLIENT_SECRET="$CLIENT_SECRET" \
  ACCESS_TOKEN_TTL_SECONDS=3600 LOG_LEVEL=warn TOKEN_RATE_LIMIT_PER_MINUTE=1000000 \
  setsid npm start >"$WORK/server.log" 2>&1 </dev/null &
SERVER_PID=$!

ready=""
for _ in $(seq 1 "$READY_TIMEOUT"); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
  if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$BASE/ready"; then ready=yes; break; fi
  sleep 1
done
if [ -z "$ready" ]; then
  log "the service did not become ready; last lines of its output:"
  tail -30 "$WORK/server.log" | sed 's/^/    /'
  skip "the service did not become ready within ${READY_TIMEOUT}s"
fi

TOKEN=$(node -e '
  const [url, id, secret] = process.argv.slice(1);
  const body = new URLSearchParams({ grant_type: "client_credentials", client_id: id, client_secret: secret });
  fetch(url, { method: "POST", body }).then((r) => r.json()).then((j) => console.log(j.access_token ?? ""), () => console.log(""));
' "$BASE/auth/v1/token" "$CLIENT_ID" "$CLIENT_SECRET")
if [ -z "$TOKEN" ]; then
  tail -30 "$WORK/server.log" | sed 's/^/    /'
  skip "no access token for the bootstrap client (the token endpoint is covered by npm test)"
fi

# ---------------------------------------------------------------- the run
REPORT_DIR="${SCHEMATHESIS_REPORT_DIR:-$WORK/report}"
mkdir -p "$REPORT_DIR" && REPORT_DIR=$(cd "$REPORT_DIR" && pwd)
log "st run $BASE/api/openapi.json (max $MAX_EXAMPLES examples per operation, at most ${MAX_TIME}s)"
# (from the temporary directory: st and hypothesis keep their caches in the working directory)
(cd "$WORK" && exec timeout --kill-after=30 $((MAX_TIME + 120)) "$VENV/bin/st" run "$BASE/api/openapi.json" \
  --header "Authorization: Bearer $TOKEN" \
  --checks not_a_server_error,response_schema_conformance \
  --max-examples "$MAX_EXAMPLES" \
  --max-time "$MAX_TIME" \
  --request-timeout 30 \
  --workers 2 \
  --seed "${SCHEMATHESIS_SEED:-$RANDOM}" \
  --suppress-health-check all \
  --warnings off \
  --report junit --report-junit-path "$REPORT_DIR/junit.xml" \
  --no-color) >"$WORK/st.log" 2>&1
st_status=$?
sed 's/^/    /' "$WORK/st.log" | tail -120
stop_server

# A summary from the JUnit report: test cases = operations; failures = check failures; errors =
# schemathesis could not test an operation (e.g. a schema it cannot generate data for).
summary=$(python3 - "$REPORT_DIR/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("none 0 0 0 0"); sys.exit()
ops = failed = errors = server = schema = 0
for case in root.iter("testcase"):
    if (case.get("name") or "").split(" ")[0] in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        ops += 1
    for f in case.findall("failure"):
        failed += 1
        text = (f.get("message") or "") + (f.text or "")
        if "Server error" in text: server += 1
        elif "schema" in text.lower(): schema += 1
    errors += len(case.findall("error"))
print(ops, failed, errors, server, schema)
PY
)
read -r ops failed errors server schema <<<"$summary"
if [ "$st_status" -eq 124 ] || [ "$st_status" -eq 137 ]; then
  echo "schemathesis: SKIPPED (st run exceeded its time limit; exit $st_status)"
  exit 0
fi
if [ "$ops" = "none" ]; then
  [ "$st_status" -eq 0 ] && { echo "schemathesis: PASSED (no report written; schemathesis $ST_VERSION)"; exit 0; }
  echo "schemathesis: SKIPPED (st run ended with exit $st_status and no report: see its output above)"
  exit 0
fi
if [ "$failed" -gt 0 ]; then
  # Only two checks run, so every failed check is a finding: a 5xx or a response the document does not describe.
  echo "schemathesis: FAILED ($ops operations: $server server errors, $schema schema violations, $((failed - server - schema)) other failed checks; schemathesis $ST_VERSION)"
  exit 1
fi
if [ "$errors" -gt 0 ] || [ "$st_status" -ne 0 ]; then
  echo "schemathesis: PASSED with warnings ($ops operations, no server errors, no schema violations, $errors operations schemathesis could not test: see above; schemathesis $ST_VERSION)"
  exit 0
fi
echo "schemathesis: PASSED ($ops operations, no server errors, no schema violations; schemathesis $ST_VERSION)"
exit 0
