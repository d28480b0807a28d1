#!/usr/bin/env bash
# Runs the README's quick start and the walk-through that goes on from it
# (docs/guide.md), as written, in one shell against a fresh local server,
# and checks that each step shows what the pages say it shows; then
# docs/protect-your-api.md's Node.js example against the same server.
# Needs curl and jq (apt-get install curl jq), and Node.js with
# tools/node_modules installed (scripts/node-tools.sh). Traffic stays on
# 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in curl jq python3 node; do
  command -v "$tool" >/dev/null || { echo "readme-check: $tool is required (apt-get install $tool)" >&2; exit 1; }
done

work=$(mktemp -d)
server_pid=""
node_pid=""
cleanup() {
  # Each stopped whatever its exit status (node's is 143 on SIGTERM, which
  # set -e would otherwise take for a failure and leave the server running).
  if [ -n "$node_pid" ]; then kill "$node_pid" 2>/dev/null; wait "$node_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The quick start's shell blocks, then the walk-through's, in order. The
# server address and the printed admin key are the two values a reader
# fills in by hand.
python3 - README.md docs/guide.md >"$work/quickstart.sh" <<'PY'
import re, sys
readme, guide = (open(p).read() for p in sys.argv[1:3])
section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
# The walk-through goes on from the quick start: its steps, and the quick
# start's, are numbered 1, 2, 3, … across both pages, each number once.
steps = [int(n) for n in re.findall(r"^\*\*(\d+)\. ", section + "\n" + guide, re.M)]
if steps != list(range(1, len(steps) + 1)):
    sys.exit(f"readme-check: the steps of the quick start and the walk-through are numbered {steps}, not 1 to {len(steps)} once each")
quick = re.findall(r"```sh\n(.*?)```", section, re.S)
more = re.findall(r"```sh\n(.*?)```", guide, re.S)
if len(quick) < 5 or len(more) < 7:
    sys.exit(f"readme-check: expected the quick start's and the walk-through's shell blocks, found {len(quick)} and {len(more)}")
script = "\n".join(quick + more)
script = re.sub(r"^export LK=.*$", 'export LK="$README_LK"', script, flags=re.M)
script = re.sub(r"^export ADMIN=.*$", 'export ADMIN="$README_ADMIN"', script, flags=re.M)
print("set -euo pipefail\n" + script)
PY

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
admin="lk_readme_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
go build -o "$work/latchkey" ./cmd/local
ADDR="127.0.0.1:$port" DATA_DIR="$work/data" ADMIN_API_KEY="$admin" "$work/latchkey" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/v1/auth/jwks" >/dev/null 2>&1 && break; sleep 0.1; done

(cd "$work" && README_LK="http://127.0.0.1:$port" README_ADMIN="$admin" bash quickstart.sh) 2>&1 | cat >"$work/out.txt" || {
  echo "readme-check: the quick start failed:" >&2; cat "$work/out.txt" >&2; exit 1; }

# What each step of the README says the reader will see.
expect=(
  '"name":"billing-backend"'
  '"token_type":"Bearer"'
  '"valid":true'
  '"revoked":true'
  '{"valid":false,"reason":"revoked"}'
  '{"valid":true,"reason":null}'
  '{"valid":false,"reason":"usage_exceeded"}'
  '"slug":"analytical-engines"'
  '"role":"owner"'
  '"code":"email_taken"'
  '"code":"last_owner"'
  '"organization":{"id":"org_'
  '"plan":"enterprise"'
  '"email":"ada.king@example.com","name":"Ada Lovelace","role":"admin","external_id":"crm-4711","metadata":{"plan":"pro","source":"signup"}'
  '"has_more":true'
  'Idempotent-Replayed: true'
  '"code":"idempotency_key_reused"'
  '{"valid":false,"reason":"disabled"}'
  '{"code":"unauthorized","detail":"the API key is disabled"}'
  '"enabled":false}'
  '{"valid":true,"key_id":"key_'
  '"previous_key_expires_at":"20'
  '{"scopes":["read:users"],"expires_at":"20'
  '"tokens_revoked_before":"20'
  '{"live":0}'
  '{"type":"user.created","key_id":"key_'
  '"rate_limits":[{"name":"day","limit":2,"period":"1d"}],"credits":{"remaining":100,"refill":null}'
  'Ratelimit-Policy: "day";q=2;w=86400'
  '{"valid":false,"reason":"rate_limited","credits":{"remaining":99},"rate_limits":[{"name":"day","limit":2,"remaining":0,"reset":'
  'Ratelimit: "day";r=0;t='
  '{"status":429,"code":"rate_limited"}'
)
for e in "${expect[@]}"; do
  grep -qF -- "$e" "$work/out.txt" || { echo "readme-check: expected $e in the output:" >&2; cat "$work/out.txt" >&2; exit 1; }
done
# Nothing in the walk-through should be refused for a reason the README does not show: the one
# 401 it shows is the disabled key's.
if grep -vF '{"code":"unauthorized","detail":"the API key is disabled"}' "$work/out.txt" |
  grep -qE '"code":"(unauthorized|insufficient_scope|invalid_request|internal|not_found)"'; then
  echo "readme-check: unexpected error in the output:" >&2; cat "$work/out.txt" >&2; exit 1
fi
# Step 4: the token lists the user the key just created (not an empty list),
# before step 5 revokes it.
listed=$(grep -n -m1 -F '"data":[{"id":"usr_' "$work/out.txt" | cut -d: -f1)
revoked=$(grep -n -m1 -F '"revoked":true' "$work/out.txt" | cut -d: -f1)
[ -n "$listed" ] && [ "$listed" -lt "$revoked" ] || {
  echo "readme-check: step 4 listed no user before the token was revoked:" >&2; cat "$work/out.txt" >&2; exit 1; }
# The lookup by external id found Ada (a list holding her, not an empty one).
grep -qE '^\{"data":\[\{"id":"usr_[^"]*","email":"ada@example.com".*"external_id":"crm-4711"' "$work/out.txt" || {
  echo "readme-check: ?external_id= did not find the user:" >&2; cat "$work/out.txt" >&2; exit 1; }
# Step 9: the retried create made one user, and the second answer was the first.
[ "$(grep -c -F '"email":"grace@example.com"' "$work/out.txt")" -eq 2 ] &&
  [ "$(grep -F '"email":"grace@example.com"' "$work/out.txt" | sort -u | wc -l)" -eq 1 ] && grep -qx 1 "$work/out.txt" || {
  echo "readme-check: step 9 did not replay the create:" >&2; cat "$work/out.txt" >&2; exit 1; }
# Step 11: the old and the new secret each got a token.
[ "$(grep -c -F '{"token_type":"Bearer","scopes":["read:users"]}' "$work/out.txt")" -eq 2 ] || {
  echo "readme-check: step 11 did not get a token with both secrets:" >&2; cat "$work/out.txt" >&2; exit 1; }
# Step 12: the feed after the noted event holds exactly the user just created.
[ "$(grep -c -F '{"type":"user.created","key_id":"key_' "$work/out.txt")" -eq 1 ] &&
  grep -qF '"email":"alan@example.com"}' "$work/out.txt" || {
  echo "readme-check: step 12 did not show the one change after the noted event:" >&2; cat "$work/out.txt" >&2; exit 1; }
# Every sample answer the README's quick start and the walk-through show is
# one the server gave, field for field: each JSON object of a json block
# has the very keys (nested ones too) of an answer in the run, in the order
# the pages show them. A sample that leaves out or adds a field fails here.
python3 - README.md docs/guide.md "$work/out.txt" <<'PY' || { echo "readme-check: the output was:" >&2; cat "$work/out.txt" >&2; exit 1; }
import json, re, sys
readme, guide, out = (open(p).read() for p in sys.argv[1:4])
quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]

def objects(text):
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            v = json.loads(line)
        except ValueError:
            continue  # cut short on the page ("…"), or not JSON
        if isinstance(v, dict):
            found.append((line, v))
    return found

def keys(v, at=""):
    if isinstance(v, dict):
        return {at + k for k in v} | {p for k, x in v.items() for p in keys(x, at + k + ".")}
    if isinstance(v, list):
        return {p for x in v for p in keys(x, at[:-1] + "[].")} if at else set()
    return set()

samples = [o for block in re.findall(r"```json\n(.*?)```", quick + guide, re.S) for o in objects(block)]
answers = objects(out)
i, failed = 0, False
for line, sample in samples:
    want = keys(sample)
    j = next((j for j in range(i, len(answers)) if keys(answers[j][1]) == want), None)
    if j is None:
        near = next((a for a in answers[i:] if list(a[1])[:1] == list(sample)[:1]), None)
        print(f"readme-check: a sample answer has fields no answer of the run has:\n  {line}", file=sys.stderr)
        if near:
            got = keys(near[1])
            print(f"  the next answer that starts alike: {near[0]}\n  missing from the sample: {sorted(got - want)}\n  not in the answer: {sorted(want - got)}", file=sys.stderr)
        failed = True
        continue
    i = j + 1
sys.exit(1 if failed else 0)
PY
# Keys and tokens stay in shell variables: the walk-through writes no file
# into the directory it runs in, which for a reader is the checkout.
written=$(cd "$work" && ls -A | grep -vxE 'quickstart\.sh|latchkey|data|server\.log|out\.txt' || true)
[ -z "$written" ] || { echo "readme-check: the quick start wrote files into the checkout: $written" >&2; exit 1; }
echo "readme-check: quick start OK (${#expect[@]} checks)"

# docs/protect-your-api.md's Node.js example, as written: a service that
# accepts tokens for https://orders.example.com with read:orders. It runs
# from a directory of its own whose node_modules is tools/node_modules.
mkdir "$work/node"
ln -s "$PWD/tools/node_modules" "$work/node/node_modules"
python3 - docs/protect-your-api.md >"$work/node/orders.mjs" <<'PY'
import re, sys
blocks = re.findall(r"```js\n(.*?)```", open(sys.argv[1]).read(), re.S)
if len(blocks) != 1:
    sys.exit(f"readme-check: expected one js block in docs/protect-your-api.md, found {len(blocks)}")
print(blocks[0])
PY
node_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ISSUER="http://127.0.0.1:$port" PORT="$node_port" node "$work/node/orders.mjs" >"$work/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 1 100); do grep -qs listening "$work/node.log" && break; sleep 0.1; done
grep -q listening "$work/node.log" || { echo "readme-check: the Node.js example did not start:" >&2; cat "$work/node.log" >&2; exit 1; }

lk="http://127.0.0.1:$port"
orders="http://127.0.0.1:$node_port/orders"
token() {
  curl -sf -X POST "$lk/v1/auth/token" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d "{\"scopes\":[\"$1\"],\"audience\":\"https://orders.example.com\"}" | jq -r .access_token
}
# call TOKEN prints the status, the WWW-Authenticate header and the body on one line.
call() {
  local auth=()
  [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
  curl -s -D "$work/node.headers" -o "$work/node.body" -w '%{http_code}' "${auth[@]}" "$orders"
  printf ' %s %s\n' "$(grep -i '^www-authenticate:' "$work/node.headers" | cut -d' ' -f2- | tr -d '\r')" "$(cat "$work/node.body")"
}
node_check() { # WHAT GOT WANT
  case "$2" in "$3"*) ;; *) echo "readme-check: the Node.js example, $1: got $2, want $3…" >&2; cat "$work/node.log" >&2; exit 1 ;; esac
}
valid=$(token read:orders)
node_check "a valid token" "$(call "$valid")" "200  orders for key_"
node_check "no token" "$(call "")" '401 Bearer realm="https://orders.example.com" 401'
node_check "a forged token" "$(call "${valid%??????}AAAAAA")" '401 Bearer realm="https://orders.example.com", error="invalid_token"'
node_check "a token without read:orders" "$(call "$(token read:users)")" '403 Bearer realm="https://orders.example.com", error="insufficient_scope", scope="read:orders"'
curl -sf -X POST "$lk/v1/auth/revoke" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d "{\"token\":\"$valid\"}" >/dev/null
has_status=$(python3 -c 'import sys, base64, json; p = sys.argv[1].split(".")[1]; print("status" in json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))))' "$valid")
if [ "$has_status" != True ]; then
  # The local server puts its formats in force at start (its data file is
  # its own): its tokens carry the claim, and the quick start shows it.
  echo "readme-check: the local server issued a token without a status claim" >&2; exit 1
fi
# The status list: refused within its ttl (10 s by default).
for _ in $(seq 1 150); do
  got=$(call "$valid"); case "$got" in 401*revoked*) break ;; esac; sleep 0.2
done
node_check "a revoked token, 30 s after the revocation" "$got" '401 Bearer realm="https://orders.example.com", error="invalid_token", error_description="revoked"'
echo "readme-check: docs/protect-your-api.md's Node.js example OK (status list: $has_status)"
