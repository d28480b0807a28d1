#!/usr/bin/env bash
# A/B test of two builds of the local server on token verification, the
# two alternated round by round in one run, so that whatever else the
# machine does falls on both alike.
#
# Usage: scripts/ab.sh A B
#   A, B  each a git revision of this repository (built from `git archive`,
#         so uncommitted changes are not in it) or a directory holding a
#         checkout (built as it is, uncommitted changes and all)
#   AB_ROUNDS    rounds (default 10); odd rounds run A first, even rounds B
#                first, so that neither always follows the other
#   AB_PATH      path to request (default /v1/auth/verify, with a token)
#
# Two measures:
#   by default, throughput under wrk (16 connections, 2 threads, as
#     scripts/load.sh), AB_DURATION seconds a run (default 3) after one
#     unmeasured second; each round's B/A ratio of requests per second and
#     the A/B ratio of the server's CPU time (user and system, from
#     /proc/PID/stat) per request, then their medians, lowest and highest.
#     On a crowded machine both swing from run to run (a load average of
#     18 on 2 cores gave B/A from 0.3 to 2.2 for two builds of one commit).
#   AB_CALLGRIND=1: instructions per request, counted by valgrind's
#     callgrind: each round sends AB_REQUESTS (default 1000) requests one
#     after another on one connection, after 300 uncounted ones, and counts
#     the server's user-space instructions (a system call counts as the
#     instructions that make it, not what the kernel does for it). A round
#     in which the collector runs counts up to 8% more on both sides; the
#     A/B ratio moves by 1 to 3% between rounds, however loaded the machine.
#     Debian 12's valgrind 3.19 cannot run Go 1.26 binaries (SIGILL on the
#     RDTSCP of runtime.cputicks, 2026-11-29): use a newer valgrind.
# Both servers run on the embedded store at their own defaults (GOGC as
# cmd/local sets it). Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

rounds="${AB_ROUNDS:-10}"
duration="${AB_DURATION:-3}"
path="${AB_PATH:-/v1/auth/verify}"
callgrind="${AB_CALLGRIND:-}"
if [ -n "$callgrind" ]; then
  command -v valgrind >/dev/null || { echo "ab.sh: AB_CALLGRIND needs valgrind (apt-get install valgrind)" >&2; exit 1; }
else
  command -v wrk >/dev/null || { echo "ab.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# build SIDE SOURCE: the local server of SOURCE into $work/SIDE.
build() {
  local src=$2
  if [ ! -d "$src" ]; then
    src="$work/src-$1"
    mkdir -p "$src"
    git archive "$(git rev-parse --verify "$2^{commit}")" | tar -x -C "$src"
  fi
  (cd "$src" && go build -trimpath -o "$work/$1" ./cmd/local)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start SIDE: runs $work/SIDE; sets base_SIDE, pid_SIDE and token_SIDE.
start() {
  local side=$1 port key base wrap=()
  # Instrumented only while a round counts. Asynchronous preemption off:
  # valgrind delivers its signals slowly and at random points.
  [ -n "$callgrind" ] && wrap=(env GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --instr-atstart=no
    "--callgrind-out-file=$work/callgrind-$side")
  port=$(free_port)
  base="http://127.0.0.1:$port"
  key="lk_ab_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  ADDR="127.0.0.1:$port" DATA_DIR="$work/data-$side" ADMIN_API_KEY="$key" "${wrap[@]}" "$work/$side" >"$work/$side.log" 2>&1 &
  pids+=($!)
  printf -v "pid_$side" %s "$!"
  for _ in $(seq 1 300); do curl -sf "$base/v1/auth/jwks" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "$base/v1/auth/jwks" >/dev/null || { echo "ab.sh: $side did not start" >&2; cat "$work/$side.log" >&2; exit 1; }
  printf -v "base_$side" %s "$base"
  printf -v "token_$side" %s "$(curl -sf -X POST "$base/v1/auth/token" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d '{"scopes":["read:users"],"expires_in":"1h"}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
}

# cpu PID: the process's user and system time so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run SIDE: one measured wrk run; appends "SIDE requests/s requests ticks"
# to $work/results.
run() {
  local side=$1 base="base_$1" token="token_$1" pid="pid_$1" before
  wrk -t2 -c16 -d1s -H "Authorization: Bearer ${!token}" "${!base}$path" >/dev/null
  before=$(cpu "${!pid}")
  wrk -t2 -c16 -d"${duration}s" -H "Authorization: Bearer ${!token}" "${!base}$path" >"$work/wrk.out"
  if grep -q -e 'Non-2xx' -e 'Socket errors' "$work/wrk.out"; then
    echo "ab.sh: $side answered with errors:" >&2; cat "$work/wrk.out" >&2; exit 1
  fi
  echo "$side $(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") $(awk '/requests in/ {print $1}' "$work/wrk.out")" \
    "$(($(cpu "${!pid}") - before))" >>"$work/results"
}

# sequential SIDE N: N requests one after another, on one connection.
sequential() {
  local base="base_$1" token="token_$1"
  python3 -c '
import http.client, sys, urllib.parse
base, path, token, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
u = urllib.parse.urlsplit(base)
c = http.client.HTTPConnection(u.hostname, u.port)
for _ in range(n):
    c.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"ab.sh: {base}{path} answered {r.status}")
' "${!base}" "$path" "${!token}" "$2"
}

# count SIDE: one counted callgrind round; appends "SIDE instructions
# requests" to $work/results.
count() {
  local side=$1 n="${AB_REQUESTS:-1000}" pid="pid_$1" dump
  callgrind_control -i on "${!pid}" >/dev/null 2>&1
  callgrind_control -z "${!pid}" >/dev/null 2>&1
  sequential "$side" "$n"
  callgrind_control -d "${!pid}" >/dev/null 2>&1
  callgrind_control -i off "${!pid}" >/dev/null 2>&1
  dump=$(ls -t "$work/callgrind-$side".* | head -1)
  echo "$side $(awk '/^totals:/ {print $2}' "$dump") $n" >>"$work/results"
}

describe() { git rev-parse --short "$1^{commit}" 2>/dev/null || echo directory; }
echo "ab.sh: A = $1 ($(describe "$1")), B = $2 ($(describe "$2"))"
build a "$1"
build b "$2"
start a
start b
: >"$work/results"
if [ -n "$callgrind" ]; then
  sequential a 300
  sequential b 300
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then count a; count b; else count b; count a; fi
  done
else
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then run a; run b; else run b; run a; fi
  done
fi
python3 - "$work/results" "$rounds" "$duration" "$path" "$(getconf CLK_TCK)" "$callgrind" <<'EOF'
import statistics, sys
results, rounds, duration, path, hz, callgrind = sys.argv[1:]
def report(what, a, b, ratios, digits=0):
    print(f"{what}: A {' '.join(f'{x:.{digits}f}' for x in a)}")
    print(f"{' ' * len(what)}  B {' '.join(f'{x:.{digits}f}' for x in b)}")
    print(f"{' ' * len(what)}  ratio median {statistics.median(ratios):.3f} (lowest {min(ratios):.3f}, highest {max(ratios):.3f}), by round: "
          + " ".join(f"{r:.3f}" for r in ratios))
lines = [line.split() for line in open(results)]
side = lambda s, f: [f(*l[1:]) for l in lines if l[0] == s]
load = open("/proc/loadavg").read().split()[0]
if callgrind:
    print(f"GET {path}: {rounds} rounds under callgrind; load average {load}")
    f = lambda instr, n: int(instr) / int(n)
    a, b = side("a", f), side("b", f)
    report("instructions per request, A/B (above 1: B runs fewer)", a, b, [x / y for x, y in zip(a, b)])
else:
    print(f"GET {path}: wrk, 16 connections, 2 threads, {rounds} rounds of {duration} s; load average {load}")
    rps = lambda r, n, t: float(r)
    us = lambda r, n, t: int(t) / int(hz) / int(n) * 1e6
    a, b = side("a", rps), side("b", rps)
    report("requests/s, B/A (above 1: B serves more)", a, b, [y / x for x, y in zip(a, b)])
    a, b = side("a", us), side("b", us)
    report("CPU us per request, A/B (above 1: B takes less)", a, b, [x / y for x, y in zip(a, b)], 1)
EOF
