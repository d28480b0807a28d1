#!/usr/bin/env bash
# Runs moto_server (moto 5, which speaks AWS Secrets Manager's wire protocol)
# on a free loopback port, so the Secrets Manager code is tested with the
# real SDK client.
#
#   scripts/moto.sh CMD [ARGS...]  start it, run CMD with
#       LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT=http://127.0.0.1:PORT exported,
#       stop it (also when CMD fails or the script is interrupted), and exit
#       with CMD's status.
#
# It never skips silently: without moto_server it fails and says what to install.
set -euo pipefail

die() { echo "moto: $*" >&2; exit 1; }

[[ $# -gt 0 ]] || die "usage: $0 COMMAND [ARGS...]"
command -v moto_server >/dev/null 2>&1 ||
	die "moto_server is required to test the Secrets Manager code; install it with: pip install 'moto[server]'"
command -v python3 >/dev/null 2>&1 || die "python3 is required (moto is a Python package)"

free_port() {
	# Ask the kernel for a free port; the short window before moto binds it
	# is acceptable for a developer tool (a clash fails loudly below).
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

port="$(free_port)"
log="$(mktemp -t moto.XXXXXX.log)"
moto_server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
pid=$!

stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$log"
}
trap stop EXIT
trap 'exit 130' INT TERM

# moto answers GET /moto-api/ once it is serving; wait up to 30 s.
for _ in $(seq 1 300); do
	if curl -fsS -o /dev/null "http://127.0.0.1:$port/moto-api/" 2>/dev/null; then
		ready=1
		break
	fi
	kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "moto_server exited before it was ready"; }
	sleep 0.1
done
[[ "${ready:-}" == 1 ]] || { cat "$log" >&2; die "moto_server did not answer on port $port within 30 s"; }

export LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT="http://127.0.0.1:$port"
# Not exec: the EXIT trap must stop moto_server after CMD returns.
set +e
"$@"
status=$?
set -e
exit "$status"
