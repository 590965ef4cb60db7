#!/usr/bin/env bash
# test.sh: what `make test` does. Every server the tests need is provided
# (scripts/testdeps.sh for redis-server and nginx, then the private
# PostgreSQL of scripts/devdb.sh and the private Redis servers of
# scripts/redisdev.sh, or DATABASE_URL, REDIS_URL and REDIS_CLUSTER_URL
# when set), so RLCTL_REQUIRE_SERVERS=1 makes a test that would skip for
# want of one fail instead. go test's output goes through cmd/rltestsum,
# which prints it as a plain go test would and closes with the tests that
# were skipped; its exit status is go test's (pipefail). Last, one line
# says which private servers still run and how to stop them.
#
# GO names the go command (make passes its own); GOTEST_FLAGS adds flags.
set -euo pipefail

# still_running prints one line naming the private servers of this
# checkout that run, and how to stop them; nothing when none does.
still_running() {
	local running=() n list
	scripts/devdb.sh status >/dev/null 2>&1 && running+=("the private PostgreSQL (make db-stop)")
	n=$(scripts/redisdev.sh running 2>/dev/null || echo 0)
	if [ "$n" = 1 ]; then
		running+=("1 private redis-server process (make redis-stop)")
	elif [ "$n" -gt 1 ]; then
		running+=("$n private redis-server processes (make redis-stop)")
	fi
	[ ${#running[@]} -gt 0 ] || return 0
	list=${running[0]}
	[ ${#running[@]} -gt 1 ] && list="$list and ${running[1]}"
	echo "still running: $list; make clean stops them and deletes their data"
}

main() {
	local go=${GO:-go} rc=0
	scripts/testdeps.sh
	DATABASE_URL=$(scripts/devdb.sh url)
	REDIS_URL=$(scripts/redisdev.sh url)
	REDIS_CLUSTER_URL=$(scripts/redisdev.sh cluster-url)
	export DATABASE_URL REDIS_URL REDIS_CLUSTER_URL RLCTL_REQUIRE_SERVERS=1

	mkdir -p bin
	"$go" build -o bin/rltestsum ./cmd/rltestsum
	# shellcheck disable=SC2086 # GOTEST_FLAGS is a list of flags
	"$go" test -json -race -count=1 -timeout 8m ${GOTEST_FLAGS:-} ./... | bin/rltestsum || rc=$?
	# What make test leaves running, so that nobody wonders whose
	# servers those are.
	still_running
	return "$rc"
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Sourced (by a test), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main
fi
