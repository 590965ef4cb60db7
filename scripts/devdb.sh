#!/usr/bin/env bash
# devdb.sh: the private PostgreSQL cluster behind `make run` and `make test`.
#
#   scripts/devdb.sh start   start (or reuse) the cluster; print its DATABASE_URL on stdout
#   scripts/devdb.sh url     same as start: callers only ever need a reachable URL
#   scripts/devdb.sh stop    stop the cluster this checkout created (no-op if none)
#   scripts/devdb.sh status  say whether it runs, and where; exit 0 when it
#                            runs, 3 (as pg_ctl status) when it does not
#
# With DATABASE_URL set, start and url print it and touch nothing else.
#
# The cluster belongs to this checkout: its data directory lives under .rl/ (or,
# when the postgres user cannot reach the checkout, in a private folder of the
# system's temp directory recorded in .rl/pgdata), it listens on 127.0.0.1 on a
# port of its own with its socket inside the data directory, and it carries a
# marker file. stop refuses any data directory without that marker, so the
# script never touches a cluster it did not create.
#
# Everything but the URL goes to stderr, so `$(scripts/devdb.sh url)` is safe.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="$repo/.rl"
marker="rlctl-devdb"
dbname="rlctl"
dbuser="rlctl"

log() { echo "devdb: $*" >&2; }
die() { echo "devdb: error: $*" >&2; exit 1; }

# find_bindir prints the directory holding initdb and pg_ctl: PATH first, then
# the newest Debian server package.
find_bindir() {
	local p
	if p=$(command -v pg_ctl 2>/dev/null) && [ -x "$(dirname "$(readlink -f "$p")")/initdb" ]; then
		dirname "$(readlink -f "$p")"
		return 0
	fi
	for p in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$p/initdb" ] && [ -x "$p/pg_ctl" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

install_postgres() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "no PostgreSQL server binaries found (looked in PATH and /usr/lib/postgresql/*/bin);
  install Debian's 'postgresql' package, or set DATABASE_URL to a server you own"
	fi
	log "no PostgreSQL server found; installing Debian's postgresql package (one time)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 || die "apt-get update failed"
	# policy-rc.d keeps the package from starting the system's own cluster:
	# we only ever run the private one below.
	local policy=/usr/sbin/policy-rc.d created_policy=
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
	fi
	apt-get install -y -qq postgresql >&2 || { [ -n "$created_policy" ] && rm -f "$policy"; die "apt-get install postgresql failed"; }
	[ -n "$created_policy" ] && rm -f "$policy"
	return 0
}

# as_owner runs a command as the cluster's owner: the postgres user when we are
# root (initdb and postgres refuse to run as root), ourselves otherwise.
as_owner() {
	if [ "$(id -u)" = 0 ]; then
		# From /, since the postgres user may not be allowed in our cwd.
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

owner_can_reach() {
	[ "$(id -u)" != 0 ] && return 0
	id postgres >/dev/null 2>&1 || die "running as root but there is no postgres user to own the cluster"
	(cd / && runuser -u postgres -- test -x "$1" && runuser -u postgres -- test -r "$1") 2>/dev/null
}

# datadir prints the data directory, choosing and recording it on first use.
datadir() {
	if [ -f "$state/pgdata" ]; then
		cat "$state/pgdata"
		return
	fi
	mkdir -p "$state"
	chmod 755 "$state"
	local dir="$state/pg"
	if ! owner_can_reach "$state"; then
		# The checkout sits where the postgres user cannot go (under /root,
		# say): keep the cluster in a private temp folder and remember it.
		dir=$(mktemp -d "${TMPDIR:-/tmp}/rlctl-pg.XXXXXX")
		chmod 700 "$dir"
		[ "$(id -u)" = 0 ] && chown postgres: "$dir"
		dir="$dir/data"
	fi
	echo "$dir" >"$state/pgdata"
	echo "$dir"
}

# pick_port finds a free loopback port, starting from one derived from the
# checkout's path so two checkouts rarely collide.
pick_port() {
	local port=$((20000 + $(printf '%s' "$repo" | cksum | cut -d' ' -f1) % 10000))
	local i
	for i in $(seq 0 200); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
		port=$((port + 1))
	done
	die "no free loopback port found near $port"
}

url() {
	local port password
	port=$(cat "$state/pgport")
	password=$(cat "$state/pgpassword")
	echo "postgres://$dbuser:$password@127.0.0.1:$port/$dbname?sslmode=disable"
}

is_running() {
	local dir=$1
	[ -f "$dir/$marker" ] || return 1
	as_owner "$bindir/pg_ctl" -D "$dir" status >/dev/null 2>&1
}

init_cluster() {
	local dir=$1 pwfile
	log "creating a private PostgreSQL cluster in $dir"
	mkdir -p "$(dirname "$dir")"
	[ "$(id -u)" = 0 ] && [ "$(dirname "$dir")" = "$state" ] && { mkdir -p "$dir"; chown postgres: "$dir"; chmod 700 "$dir"; }
	umask 077
	head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$state/pgpassword"
	pwfile=$(dirname "$dir")/.pwfile.$$
	cp "$state/pgpassword" "$pwfile"
	[ "$(id -u)" = 0 ] && chown postgres: "$pwfile"
	# initdb's report (ending in advice to start the server with pg_ctl,
	# which this script does itself) goes to a log, shown only when it fails.
	as_owner "$bindir/initdb" -D "$dir" -U "$dbuser" --pwfile="$pwfile" \
		--auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$state/initdb.log" 2>&1 ||
		{ rm -f "$pwfile"; tail -n 20 "$state/initdb.log" >&2; die "initdb failed (log: $state/initdb.log)"; }
	rm -f "$pwfile"
	as_owner touch "$dir/$marker"
	pick_port >"$state/pgport"
	umask 022
}

cmd_start() {
	if [ -n "${DATABASE_URL:-}" ]; then
		echo "$DATABASE_URL"
		return
	fi
	bindir=$(find_bindir) || { install_postgres; bindir=$(find_bindir) || die "postgresql installed but initdb not found"; }
	local dir
	dir=$(datadir)
	if [ ! -f "$dir/$marker" ]; then
		[ -e "$dir/PG_VERSION" ] && die "$dir holds a cluster this script did not create; refusing to touch it"
		init_cluster "$dir"
	fi
	if is_running "$dir"; then
		url
		return
	fi
	local port
	port=$(cat "$state/pgport")
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		port=$(pick_port)
		echo "$port" >"$state/pgport"
	fi
	log "starting PostgreSQL on 127.0.0.1:$port (data in $dir)"
	# Checks and settings for a developer's machine: enough connections
	# for parallel test packages, and the socket kept inside the data
	# directory so no system path is touched.
	as_owner "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -s -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c shared_buffers=128MB" \
		start >&2 || { tail -n 20 "$dir/server.log" >&2 || true; die "PostgreSQL did not start"; }
	# Create the application database once.
	if ! PGPASSWORD=$(cat "$state/pgpassword") "$bindir/psql" -h 127.0.0.1 -p "$port" -U "$dbuser" -d postgres -tAc \
		"select 1 from pg_database where datname = '$dbname'" | grep -q 1; then
		PGPASSWORD=$(cat "$state/pgpassword") "$bindir/psql" -h 127.0.0.1 -p "$port" -U "$dbuser" -d postgres -qc \
			"create database $dbname" >&2 || die "create database $dbname failed"
	fi
	url
}

cmd_stop() {
	if [ ! -f "$state/pgdata" ]; then
		log "no cluster recorded in $state; nothing to stop"
		return
	fi
	bindir=$(find_bindir) || die "PostgreSQL binaries not found"
	local dir
	dir=$(cat "$state/pgdata")
	[ -f "$dir/$marker" ] || die "$dir was not created by this script; refusing to touch it"
	if is_running "$dir"; then
		as_owner "$bindir/pg_ctl" -D "$dir" -m fast -s -w stop >&2
	else
		log "cluster in $dir is not running"
	fi
}

cmd_status() {
	if [ -n "${DATABASE_URL:-}" ]; then
		log "DATABASE_URL is set; the private cluster is not used"
	fi
	if [ ! -f "$state/pgdata" ]; then
		log "no private cluster yet (make db-start creates one)"
		return 3
	fi
	bindir=$(find_bindir) || die "PostgreSQL binaries not found"
	local dir
	dir=$(cat "$state/pgdata")
	if is_running "$dir"; then
		log "running on 127.0.0.1:$(cat "$state/pgport"), data in $dir"
	else
		log "stopped; data in $dir (make db-start starts it)"
		return 3
	fi
}

case "${1:-}" in
start | url) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) echo "usage: $0 start|url|stop|status" >&2; exit 2 ;;
esac
