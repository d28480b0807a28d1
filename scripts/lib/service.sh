# Sourced by scripts/dynamodb-local.sh and scripts/moto.sh: start a helper
# service on a free loopback port, wait until it answers, run a command with
# it up, and stop it afterwards (also when the command fails or the script
# is interrupted). Set service_name (the prefix of every message) before
# sourcing.
#
#   port="$(free_port)"
#   service_start launch           # launch: a function or command that runs the service in the foreground
#   service_wait "http://127.0.0.1:$port" curl -s -o /dev/null "http://127.0.0.1:$port"
#   export SOME_ENDPOINT=...
#   service_run "$@"              # exits with the command's status

die() { echo "$service_name: $*" >&2; exit 1; }

# free_port prints a port the kernel reports free on 127.0.0.1. The short
# window before the service binds it is acceptable for a developer tool (a
# clash fails loudly in service_wait).
free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
	elif command -v node >/dev/null 2>&1; then
		node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
	else
		die "python3 or node is required to find a free port"
	fi
}

# service_start CMD [ARGS...] runs CMD in the background with its output in a
# temporary log (shown only if it fails to come up), and arranges for it to be
# stopped, and the log removed, when this script exits.
service_start() {
	service_log="$(mktemp -t "$service_name.XXXXXX.log")"
	"$@" >"$service_log" 2>&1 &
	service_pid=$!
	trap service_stop EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

service_stop() {
	kill "$service_pid" 2>/dev/null || true
	wait "$service_pid" 2>/dev/null || true
	rm -f "$service_log"
}

# service_wait URL PROBE [ARGS...] polls PROBE every 0.1 s until it succeeds,
# for up to 120 s (DynamoDB Local's JVM took 16 s to answer at load 15 on 2
# cores); it fails with the service's log if the service exits first or
# never answers. URL is for the messages.
service_wait() {
	local url="$1"
	shift
	for _ in $(seq 1 1200); do
		"$@" && return 0
		kill -0 "$service_pid" 2>/dev/null || { cat "$service_log" >&2; die "exited before it answered on $url"; }
		sleep 0.1
	done
	cat "$service_log" >&2
	die "did not answer on $url within 120 s"
}

# service_run CMD [ARGS...] runs CMD and exits with its status. Not exec: the
# EXIT trap must stop the service after CMD returns.
service_run() {
	local status
	set +e
	"$@"
	status=$?
	set -e
	exit "$status"
}
