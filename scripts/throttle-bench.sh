#!/usr/bin/env bash
# Verify under DynamoDB throttling, before and after the store's retries
# were sized to its call timeout: BenchmarkVerifyThrottled (pkg/dynamostore)
# over DynamoDB Local behind a proxy that answers a share of the calls
# ProvisionedThroughputExceededException (dynamotest.Throttler), with 8
# verifiers at once, each with a client of its own like a Lambda execution
# environment. For each share throttled (0, 0.3, 1) it reports answers a
# second, the share answered 200, p50 and p99, with the SDK's default
# retryer (retryer=sdk, the store before) and with the store's
# (retryer=sized). docs/performance.md has the figures.
#
# Usage: scripts/throttle-bench.sh [go test flags]
#   THROTTLE_VERIFIES  verifies per case (default 320: 40 per verifier, fewer
#                      than the 50 that spend an SDK client's retry quota
#                      when every call is throttled)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec scripts/dynamodb-local.sh go test ./pkg/dynamostore/ -run '^$' -bench BenchmarkVerifyThrottled \
	-benchtime="${THROTTLE_VERIFIES:-320}x" -count=1 "$@"
