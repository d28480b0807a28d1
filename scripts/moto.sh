#!/usr/bin/env bash
# Runs moto_server (moto 5, which speaks the wire protocols of AWS Secrets
# Manager, EventBridge and SQS) on a free loopback port, so the Secrets
# Manager code and the event publisher are tested with the real SDK clients.
#
#   scripts/moto.sh CMD [ARGS...]  start it, run CMD with
#       LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT and LATCHKEY_TEST_MOTO_ENDPOINT
#       (the same URL, http://127.0.0.1:PORT, or MOTO_HOST's address when
#       it names one; the second for every other
#       service: EventBridge, SQS) exported,
#       stop it (also when CMD fails or the script is interrupted), and exit
#       with CMD's status. PORT is a free one, or MOTO_PORT if set; it listens
#       on 127.0.0.1, or on MOTO_HOST if set.
#
# It never skips silently: without moto_server it fails and says what to install.
set -euo pipefail

service_name=moto
# shellcheck source=lib/service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

[[ $# -gt 0 ]] || die "usage: $0 COMMAND [ARGS...]"
command -v moto_server >/dev/null 2>&1 ||
	die "moto_server is required to test the Secrets Manager code and the event publisher; install it with: pip install 'moto[server]'"

port="${MOTO_PORT:-$(free_port)}"
# Reached where it listens: a specific address (MOTO_HOST, e.g. the Docker
# bridge's), or loopback when it listens on loopback or everywhere.
reach="${MOTO_HOST:-127.0.0.1}"
[[ "$reach" == 0.0.0.0 ]] && reach=127.0.0.1
endpoint="http://$reach:$port"
service_start moto_server -H "${MOTO_HOST:-127.0.0.1}" -p "$port"
# moto answers GET /moto-api/ once it is serving.
service_wait "$endpoint" curl -fs -o /dev/null "$endpoint/moto-api/"

export LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT="$endpoint"
export LATCHKEY_TEST_MOTO_ENDPOINT="$endpoint"
service_run "$@"
