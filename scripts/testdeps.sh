#!/usr/bin/env bash
# testdeps.sh: the programs `make test` needs besides PostgreSQL (which
# scripts/devdb.sh finds or installs): Debian's redis-server and redis-cli
# (the Redis counter store's tests, on servers scripts/redisdev.sh starts)
# nginx (the gateway end-to-end tests of internal/api), systemd-analyze
# (deploy/: the systemd unit is checked by systemd's own verifier; no
# systemd runs, the package only provides the tool) and buildah (deploy/:
# the container image is built; no daemon is needed). make test runs
# it first, since it then requires every server (RLCTL_REQUIRE_SERVERS=1):
# a test that would skip for want of one fails instead.
#
# Silent when everything is there. Root on a machine with apt-get, it
# installs the missing packages, with a temporary policy-rc.d so that they
# start no service of their own (on ports 6379 and 80: the tests start the
# servers they need). Otherwise it fails with one line naming what is
# missing and how to install it.
#
# For the script's own test (testdeps_test.go): TESTDEPS_UID stands for
# `id -u`, TESTDEPS_SBIN for the directories searched for nginx besides
# PATH (/usr/sbin:/sbin, where Debian puts it and a user's PATH often
# does not reach), TESTDEPS_POLICY_RC_D for /usr/sbin/policy-rc.d.
set -euo pipefail

uid=${TESTDEPS_UID:-$(id -u)}
sbin=${TESTDEPS_SBIN-/usr/sbin:/sbin}
policy=${TESTDEPS_POLICY_RC_D:-/usr/sbin/policy-rc.d}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}

die() { echo "testdeps: error: $*" >&2; exit 1; }

have() {
	command -v "$1" >/dev/null 2>&1 && return 0
	[ -n "$sbin" ] && PATH="$sbin" command -v "$1" >/dev/null 2>&1
}

# missing prints the Debian packages that provide what is not found.
missing() {
	local pkgs=()
	if ! have "$server"; then
		pkgs+=(redis-server)
	elif ! have "$cli"; then
		pkgs+=(redis-tools)
	fi
	have nginx || pkgs+=(nginx)
	have systemd-analyze || pkgs+=(systemd)
	have buildah || pkgs+=(buildah)
	echo "${pkgs[*]}"
}

pkgs=$(missing)
[ -z "$pkgs" ] && exit 0

if [ "$uid" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	how="sudo apt-get install $pkgs (as root make test installs them itself)"
	[ "$uid" = 0 ] && how="no apt-get here: install the packages that provide them"
	die "make test needs redis-server, redis-cli, nginx, systemd-analyze and buildah; missing Debian packages: $pkgs: $how"
fi

echo "testdeps: installing Debian's $pkgs for make test (one time)" >&2
created=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
fi
log=$(mktemp "${TMPDIR:-/tmp}/rlctl-testdeps.XXXXXX")
# shellcheck disable=SC2086 # $pkgs is a list of package names
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs; } >"$log" 2>&1; then
	[ -n "$created" ] && rm -f "$policy"
	tail -n 20 "$log" >&2
	rm -f "$log"
	die "apt-get install $pkgs failed"
fi
[ -n "$created" ] && rm -f "$policy"
rm -f "$log"
still=$(missing)
[ -z "$still" ] || die "apt-get installed $pkgs, but $still still provides nothing in PATH or $sbin"
