#!/usr/bin/env bash
# run.sh: what `make run` does after building. Provision (or reuse) the
# database, migrate it, make sure a local admin token exists, then serve.
#
#   scripts/run.sh                  serve (make run)
#   scripts/run.sh forget-context   delete the rlctl context make run wrote
#                                   (make clean, which deletes its token)
set -euo pipefail

# context_name is the rlctl context `make run` writes for the checkout at
# $1: local-<directory>-<6 hex digits of its path>, so two checkouts (even
# two directories of the same name) never overwrite each other's context.
# RLCTL_RUN_CONTEXT overrides it.
context_name() {
	if [ -n "${RLCTL_RUN_CONTEXT:-}" ]; then
		printf '%s\n' "$RLCTL_RUN_CONTEXT"
		return
	fi
	local base sum
	base=$(basename "$1" | tr -c 'A-Za-z0-9._\n-' '-')
	sum=$(printf '%s' "$1" | sha256sum | cut -c1-6)
	printf 'local-%s-%s\n' "$base" "$sum"
}

# config_file is where rlctl keeps its contexts (as internal/cli/config
# finds it).
config_file() {
	if [ -n "${RLCTL_CONFIG:-}" ]; then
		printf '%s\n' "$RLCTL_CONFIG"
	else
		printf '%s/rlctl/config.yaml\n' "${XDG_CONFIG_HOME:-$HOME/.config}"
	fi
}

# addr_in_use reports whether something accepts connections on the
# host:port rlapi would listen on (an empty host, or 0.0.0.0 or [::],
# checked on loopback).
addr_in_use() {
	local host=${1%:*} port=${1##*:}
	host=${host#[}
	host=${host%]}
	case "$host" in "" | 0.0.0.0) host=127.0.0.1 ;; ::) host=::1 ;; esac
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# lockout_hint says how to lift the lockout of the address a client of
# rlapi on host:port $1 calls from (loopback for an empty host, 0.0.0.0 or
# [::]). Five mistyped tokens lock it out for 5 minutes, a valid token
# from it included, so the hint goes through the database, not the API.
lockout_hint() {
	local host=${1%:*}
	host=${host#[}
	host=${host%]}
	case "$host" in "" | 0.0.0.0) host=127.0.0.1 ;; ::) host=::1 ;; esac
	cat <<HINT
  Locked out?   5 wrong tokens within a minute lock an address out for 5 minutes (429,
                even with the right token). Lift it from here, through the database:
                  DATABASE_URL=\$(scripts/devdb.sh url) bin/rlapi auth-lockout lift $host
                Other addresses: bin/rlctl auth-lockout list; bin/rlctl auth-lockout lift ADDRESS
HINT
}

main() {
	local repo addr tokenfile dbsum ctx
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cd "$repo"

	addr=${RLAPI_ADDR:-127.0.0.1:8080}
	# Before anything else: rlapi would migrate, then end in "bind: address
	# already in use" without saying how to serve elsewhere.
	if addr_in_use "$addr"; then
		echo "run.sh: $addr is already in use (another make run?): stop it, or serve elsewhere with RLAPI_ADDR, e.g. RLAPI_ADDR=127.0.0.1:8090 make run" >&2
		exit 1
	fi

	DATABASE_URL=$(scripts/devdb.sh url)
	export DATABASE_URL

	bin/rlapi migrate

	# The bootstrap token belongs to one database: remember which (by a hash of
	# its URL, never the URL itself, which holds a password) and make a new token
	# when the database changes or the file is gone.
	mkdir -p .rl
	tokenfile=.rl/admin.token
	dbsum=$(printf '%s' "$DATABASE_URL" | sha256sum | cut -c1-16)
	if [ ! -s "$tokenfile" ] || [ "$(cat .rl/admin.token.db 2>/dev/null)" != "$dbsum" ]; then
		bin/rlapi token create --name local-admin --role admin --replace --output-file "$tokenfile"
		echo "$dbsum" >.rl/admin.token.db
	fi

	# Point rlctl at this server, so that `bin/rlctl rate-limit list` works as
	# is, in a context of this checkout's own.
	ctx=$(context_name "$repo")
	bin/rlctl config set-context "$ctx" --server "http://$addr" --token-file "$repo/$tokenfile" --use >/dev/null 2>&1 ||
		echo "run.sh: could not write the rlctl context '$ctx' (rlctl config set-context)" >&2

	cat >&2 <<MSG

  rlapi is starting on http://$addr

  Admin token:  $repo/$tokenfile (readable only by you)
  rlctl:        context '$ctx' (in $(config_file)) is current:
                try  bin/rlctl rate-limit list
  Try it:       curl -s http://$addr/healthz
                curl -s -H "Authorization: Bearer \$(cat $tokenfile)" http://$addr/api/rate-limits
  Stop:         Ctrl-C stops rlapi; 'make db-stop' stops the local PostgreSQL.
MSG
	lockout_hint "$addr" >&2
	echo >&2
	exec bin/rlapi serve --addr "$addr"
}

# forget_context deletes the context main wrote for this checkout, so that
# rlctl is not left pointing at a token make clean deletes. RLCTL names the
# rlctl binary (bin/rlctl, or go run when it is not built).
forget_context() {
	local repo ctx rlctl
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cd "$repo"
	ctx=$(context_name "$repo")
	if [ -n "${RLCTL:-}" ]; then
		rlctl=("$RLCTL")
	elif [ -x bin/rlctl ]; then
		rlctl=(bin/rlctl)
	else
		rlctl=("${GO:-go}" run ./cmd/rlctl)
	fi
	# The JSON view names each context once, as a key.
	if "${rlctl[@]}" config view -o json 2>/dev/null | grep -qF "\"$ctx\": {"; then
		"${rlctl[@]}" config delete-context "$ctx"
	fi
}

# Sourced (by a test), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case "${1:-}" in
	"") main ;;
	forget-context) forget_context ;;
	*) echo "usage: $0 [forget-context]" >&2; exit 2 ;;
	esac
fi
