#!/usr/bin/env bash
# run.sh: what `make run` does after building. Provision (or reuse) the
# database, migrate it, make sure a local admin token exists, then serve.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

DATABASE_URL=$(scripts/devdb.sh url)
export DATABASE_URL
addr=${RLAPI_ADDR:-127.0.0.1:8080}

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

# Point rlctl at this server, so that `bin/rlctl rate-limit list` works as is.
bin/rlctl config set-context local --server "http://$addr" --token-file "$repo/$tokenfile" --use >/dev/null 2>&1 ||
	echo "run.sh: could not write the rlctl context 'local' (rlctl config set-context)" >&2

cat >&2 <<MSG

  rlapi is starting on http://$addr

  Admin token:  $repo/$tokenfile (readable only by you)
  rlctl:        context 'local' is current: try  bin/rlctl rate-limit list
  Try it:       curl -s http://$addr/healthz
                curl -s -H "Authorization: Bearer \$(cat $tokenfile)" http://$addr/api/rate-limits
  Stop:         Ctrl-C stops rlapi; 'make db-stop' stops the local PostgreSQL.

MSG
exec bin/rlapi serve --addr "$addr"
