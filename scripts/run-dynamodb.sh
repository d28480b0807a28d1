#!/usr/bin/env bash
# `make run-dynamodb`: DynamoDB Local (in memory) and the local server on it,
# together; Ctrl-C stops both. Secrets still come from DATA_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/latchkey-local ./cmd/local  # built, not go run: see make run
exec scripts/dynamodb-local.sh bash -c 'DYNAMODB_ENDPOINT="$LATCHKEY_TEST_DYNAMODB_ENDPOINT" exec bin/latchkey-local'
