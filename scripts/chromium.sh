#!/usr/bin/env bash
# Prints the path of a headless Chromium for the console's browser test
# (pkg/console/browser_test.go), installing Debian's chromium package with
# apt-get when none is there. make test-browser calls it, so a fresh clone
# gets its browser from the project's own scripts; the second run costs
# nothing. CHROMIUM, when set, names the browser to use instead.
#
# It never skips silently: without apt-get, or without the rights to run
# it, it fails and says what to install.
set -euo pipefail

die() { echo "chromium: $*" >&2; exit 1; }

if [[ -n "${CHROMIUM:-}" ]]; then
	[[ -x "$CHROMIUM" ]] || die "CHROMIUM=$CHROMIUM is not an executable"
	echo "$CHROMIUM"
	exit 0
fi
for c in chromium chromium-browser; do
	if p="$(command -v "$c")"; then
		echo "$p"
		exit 0
	fi
done

command -v apt-get >/dev/null 2>&1 ||
	die "no chromium on PATH and no apt-get to install it; install Chromium and set CHROMIUM to its path"
sudo=()
if (( EUID != 0 )); then
	command -v sudo >/dev/null 2>&1 || die "installing chromium needs root: run 'apt-get install chromium' as root"
	sudo=(sudo)
fi
echo "chromium: installing Debian's chromium package (apt-get)" >&2
# The lock wait: other apt runs on a shared machine finish first instead
# of failing this one.
"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
p="$(command -v chromium)" || die "apt-get installed chromium, and it is not on PATH"
echo "$p"
