#!/usr/bin/env bash
# Load test of the local server with wrk (installed from Debian's packages
# if missing), 16 connections, 2 threads: requests per second, p50 and p99
# of token verification, token issuance, and verification of a token of a
# key with a rate limit and credits (each one a counted use).
#
# Verify is measured against a ceiling in the same run: scripts/ceiling, a
# bare net/http server answering every request with the body of a real
# verify response. Runs alternate between the ceiling and Latchkey, so that
# both see the same machine, and verify/ceiling is Latchkey's share of what
# a Go HTTP handler can serve on this machine at all (the ratio of their
# mean requests per second over the rounds). To compare two builds of
# Latchkey with each other, scripts/ab.sh alternates them the same way, and
# can count instructions instead, which a crowded machine does not move.
#
# Usage: scripts/load.sh
#   LOAD_DURATION  seconds per run (default 3)
#   LOAD_ROUNDS    ceiling/Latchkey pairs of verify runs (default 8): short runs,
#                  closely interleaved, so that what else the machine does
#                  falls on both sides alike
# With DYNAMODB_ENDPOINT set (see scripts/dynamodb-local.sh), the server runs
# on DynamoDB instead of the embedded store.
# Traffic goes to 127.0.0.1 only; each run is bounded by its duration.
set -euo pipefail
cd "$(dirname "$0")/.."

duration="${LOAD_DURATION:-3}"
rounds="${LOAD_ROUNDS:-8}"
connections=16
threads=2

if ! command -v wrk >/dev/null 2>&1; then
  echo "load.sh: installing wrk (apt-get install wrk)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq wrk >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq wrk >/dev/null; fi
fi

work=$(mktemp -d)
pids=()
# The servers end by SIGTERM, and wait reports that as status 143: under
# set -e, that status would become the script's own, failing a run that
# succeeded (and make load with it, before the DynamoDB Local half).
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_for URL LOG: until URL answers, or fail showing LOG.
wait_for() {
  for _ in $(seq 1 100); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "load.sh: $1 did not answer" >&2; cat "$2" >&2; exit 1
}

port=$(free_port)
base="http://127.0.0.1:$port"
admin_key="lk_load_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"

go build -o "$work/latchkey" ./cmd/local
go build -o "$work/ceiling" ./scripts/ceiling
ADDR="127.0.0.1:$port" DATA_DIR="$work/data" ADMIN_API_KEY="$admin_key" TABLE_NAME="load-$port" \
  "$work/latchkey" >"$work/server.log" 2>&1 &
pids+=($!)
wait_for "$base/v1/auth/jwks" "$work/server.log"

token=$(curl -sf -X POST "$base/v1/auth/token" -H "Authorization: Bearer $admin_key" \
  -H 'Content-Type: application/json' -d '{"scopes":["read:users"],"expires_in":"1h"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')

# The ceiling answers with the very body Latchkey gives for this token.
curl -sf "$base/v1/auth/verify" -H "Authorization: Bearer $token" >"$work/verify.json"
ceiling_port=$(free_port)
ceiling="http://127.0.0.1:$ceiling_port"
# It runs with the server's garbage collector target (cmd/local's
# gcPercent, 400, or GOGC when set), so that the ratio compares handlers,
# not runtime settings: at Go's default of 100 the ceiling serves about 5%
# less.
gogc="${GOGC:-400}"
GOGC="$gogc" "$work/ceiling" -addr "127.0.0.1:$ceiling_port" -body "$work/verify.json" >"$work/ceiling.log" 2>&1 &
pids+=($!)
wait_for "$ceiling/v1/auth/verify" "$work/ceiling.log"

cat >"$work/issue.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"scopes":["read:users"],"expires_in":"15m"}'
wrk.headers["Content-Type"] = "application/json"
EOF

# run NAME SECONDS URL [wrk options]: one wrk run; prints NAME and its
# figures, and appends "NAME requests/s" to $work/results. A run with a
# socket error or a status other than 2xx fails the script.
run() {
  local name=$1 secs=$2 url=$3
  shift 3
  # A second of the same load first, not counted, so that each side is
  # measured from the same state: connections open, the Go runtime's heap
  # and scheduler settled.
  wrk -t"$threads" -c"$connections" -d1s "$@" "$url" >/dev/null
  wrk -t"$threads" -c"$connections" -d"${secs}s" --latency "$@" "$url" >"$work/wrk.out"
  python3 - "$name" "$work/wrk.out" "$work/results" <<'EOF'
import re, sys
name, text = sys.argv[1], open(sys.argv[2]).read()
def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
p50 = re.search(r"\s50%\s+([\d.]+)(us|ms|s)\b", text)
p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)\b", text)
if not (rps and p50 and p99):
    sys.exit("load.sh: could not read wrk output for " + name + ":\n" + text)
bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
sock = re.search(r"Socket errors:.*", text)
if bad or sock:
    sys.exit("load.sh: " + name + ": " + (bad.group(0) if bad else "") + " " + (sock.group(0) if sock else "") + "\n" + text)
print(f"{name:<22} {float(rps.group(1)):>9.0f} req/s   p50 {ms(*p50.groups()):7.2f} ms   p99 {ms(*p99.groups()):7.2f} ms")
with open(sys.argv[3], "a") as f:
    f.write(f"{name.split()[0]} {rps.group(1)}\n")
EOF
}

store="embedded (bbolt)"
[ -n "${DYNAMODB_ENDPOINT:-}" ] && store="DynamoDB at $DYNAMODB_ENDPOINT"
echo "Latchkey load test: wrk, $connections connections, $threads threads, ${duration}s per run, GOGC $gogc, store: $store"
auth=(-H "Authorization: Bearer $token")
: >"$work/results"
for r in $(seq 1 "$rounds"); do
  run "ceiling (round $r)" "$duration" "$ceiling/v1/auth/verify" "${auth[@]}"
  run "verify (round $r)" "$duration" "$base/v1/auth/verify" "${auth[@]}"
done
python3 - "$work/results" <<'EOF'
import sys
runs = {}
for line in open(sys.argv[1]):
    name, rps = line.split()
    runs.setdefault(name, []).append(float(rps))
c, v = runs["ceiling"], runs["verify"]
per = ", ".join(f"{b / a:.2f}" for a, b in zip(c, v))
print(f"verify/ceiling {sum(v) / sum(c):.2f}   (verify {sum(v) / len(v):.0f} req/s, ceiling {sum(c) / len(c):.0f} req/s; rounds: {per})")
EOF
run "issue token" "$duration" "$base/v1/auth/token" -H "Authorization: Bearer $admin_key" -s "$work/issue.lua"

# A key with a rate limit and credits too large to reach: each verify of
# its token counts a use (one conditional write), beside the key above,
# which has none.
limited_key=$(curl -sf -X POST "$base/v1/api-keys" -H "Authorization: Bearer $admin_key" -H 'Content-Type: application/json' \
  -d '{"name":"load limited","scopes":["read:users"],"rate_limits":[{"name":"day","limit":1000000000,"period":"1d"}],"credits":{"remaining":1000000000000000}}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
limited_token=$(curl -sf -X POST "$base/v1/auth/token" -H "Authorization: Bearer $limited_key" \
  -H 'Content-Type: application/json' -d '{"scopes":["read:users"],"expires_in":"1h"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
run "verify (limited key)" "$duration" "$base/v1/auth/verify" -H "Authorization: Bearer $limited_token"
