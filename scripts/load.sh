#!/usr/bin/env bash
# Load test of the local server: requests per second, p50 and p99 for token
# verification and token issuance at 16 connections, with hey (installed
# from Debian's packages if missing).
#
# Usage: scripts/load.sh [requests-per-endpoint]     (default 20000)
# With DYNAMODB_ENDPOINT set (see scripts/dynamodb-local.sh), the server runs
# on DynamoDB instead of the embedded store.
# Traffic goes to 127.0.0.1 only; the run is bounded by the request count.
set -euo pipefail
cd "$(dirname "$0")/.."

requests="${1:-20000}"
concurrency=16

if ! command -v hey >/dev/null 2>&1; then
  echo "load.sh: installing hey (apt-get install hey)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq hey >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq hey >/dev/null; fi
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
admin_key="lk_load_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"

go build -o "$work/latchkey" ./cmd/local
ADDR="127.0.0.1:$port" DATA_DIR="$work/data" ADMIN_API_KEY="$admin_key" TABLE_NAME="load-$port" \
  "$work/latchkey" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  curl -sf "$base/v1/auth/jwks" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "$base/v1/auth/jwks" >/dev/null || { echo "load.sh: server did not start" >&2; cat "$work/server.log" >&2; exit 1; }

token=$(curl -sf -X POST "$base/v1/auth/token" -H "Authorization: Bearer $admin_key" \
  -H 'Content-Type: application/json' -d '{"scopes":["read:users"],"expires_in":"1h"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')

# report NAME: one line from hey's output.
report() {
  python3 -c '
import re, sys
name, text = sys.argv[1], sys.stdin.read()
rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
p50 = re.search(r"50%+ in ([\d.]+) secs", text)
p99 = re.search(r"99%+ in ([\d.]+) secs", text)
codes = re.findall(r"\[(\d+)\]\s+(\d+) responses", text)
if not (rps and p50 and p99):
    sys.exit("load.sh: could not read hey output for " + name + ":\n" + text)
print(f"{name:<14} {float(rps.group(1)):>9.0f} req/s   p50 {float(p50.group(1))*1000:7.2f} ms   p99 {float(p99.group(1))*1000:7.2f} ms   status {dict(codes)}")
' "$1"
}

store="embedded (bbolt)"
[ -n "${DYNAMODB_ENDPOINT:-}" ] && store="DynamoDB at $DYNAMODB_ENDPOINT"
echo "Latchkey load test: $requests requests per endpoint, $concurrency connections, store: $store"
hey -n "$requests" -c "$concurrency" -H "Authorization: Bearer $token" "$base/v1/auth/verify" | report "verify"
hey -n "$requests" -c "$concurrency" -m POST -H "Authorization: Bearer $admin_key" -T application/json \
  -d '{"scopes":["read:users"],"expires_in":"15m"}' "$base/v1/auth/token" | report "issue token"
