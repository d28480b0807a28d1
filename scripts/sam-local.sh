#!/usr/bin/env bash
# `make sam-local`: what `sam local start-api` needs on the host. It starts
# DynamoDB Local and moto (both in memory) on the ports local/env.json names,
# prepares them with cmd/samlocal (the table, the three secrets, the auth
# function's bootstrap), prints the admin key and the exact
# `sam local start-api` command, and keeps both running until Ctrl-C.
#
# The functions run in Docker containers and reach the host as
# host.docker.internal (Docker Desktop names it; on Linux the printed
# command's --add-host maps it to the bridge gateway). moto holds the local
# admin key, so it listens on loopback unless asked otherwise, which is
# enough for Docker Desktop. On Linux, where the containers come in through
# the bridge, give it the bridge's address, reachable from this host and its
# containers only: MOTO_HOST=$(ip -4 -br addr show docker0 | awk '{print
# $3}' | cut -d/ -f1) make sam-local; MOTO_HOST=0.0.0.0 shows the admin key
# to the whole network. DynamoDB Local listens on every interface whatever
# is asked (it holds hashes of keys, never a key).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# moto_host is the address moto listens on: MOTO_HOST if set, else loopback.
moto_host() { echo "${MOTO_HOST:-127.0.0.1}"; }
if [[ "${1:-}" == "--moto-host" ]]; then
	moto_host
	exit 0
fi

if [[ "${1:-}" == "--prepare-and-wait" ]]; then
	# Inside scripts/dynamodb-local.sh and scripts/moto.sh, which stop the
	# services when this returns (Ctrl-C included).
	bin/samlocal -dynamodb "$LATCHKEY_TEST_DYNAMODB_ENDPOINT" -secretsmanager "$LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT"
	echo "sam-local: DynamoDB Local and moto keep running until Ctrl-C (their data is lost then)." >&2
	sleep infinity &
	wait $!
	exit 0
fi

die() { echo "sam-local: $*" >&2; exit 1; }
go build -o bin/samlocal ./cmd/samlocal
read -r dynamodb_port moto_port < <(bin/samlocal -ports)
for port in "$dynamodb_port" "$moto_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		die "port $port (local/env.json) is in use; stop what listens there, or change the port in local/env.json"
	fi
done
if [[ "$(moto_host)" == 127.0.0.1 && "$(uname -s)" == Linux && -z "${MOTO_HOST:-}" ]]; then
	echo "sam-local: moto listens on 127.0.0.1; with Docker on Linux the functions cannot reach it: see the top of $0 for MOTO_HOST" >&2
fi
DYNAMODB_PORT="$dynamodb_port" MOTO_PORT="$moto_port" MOTO_HOST="$(moto_host)" \
	exec scripts/dynamodb-local.sh scripts/moto.sh "$0" --prepare-and-wait
