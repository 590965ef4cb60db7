#!/usr/bin/env bash
# diff-envoy-ratelimit.sh: rlapi's Envoy rate-limit service beside Envoy's
# own (github.com/envoyproxy/ratelimit), answer by answer, over Envoy's own
# configuration files (docs/envoy.md, "Differential test against Envoy's
# service").
#
#   ENVOY_RLS_BIN=/path/to/ratelimit ENVOY_RLS_REPO=/path/to/ratelimit-checkout \
#       DATABASE_URL=postgres://.../postgres scripts/diff-envoy-ratelimit.sh
#
# ENVOY_RLS_BIN is a ratelimit service binary you built yourself, outside
# this repository, and ENVOY_RLS_REPO a checkout of the same repository
# (its test/config, examples/ratelimit/config and integration runtime
# files are the configuration both services serve); this script neither
# fetches nor builds either. DATABASE_URL names a PostgreSQL server on
# which the run may create a database: it creates one of its own
# (rlenvoydiff_<random>), and drops it at the end.
#
# The script starts, all on 127.0.0.1 and all stopped when it ends:
#   - a throwaway standalone redis-server (scripts/redisdev.sh scratch-standalone);
#   - Envoy's service on it (db 0), with MERGE_DOMAIN_CONFIG=true, reading
#     the configuration directory rlenvoy-diff configs wrote;
#   - rlapi serve --grpc-addr --grpc-count-mode every-descriptor
#     --counters-url redis://.../1 (the same server, db 1), trusting
#     127.0.0.1 (no token), with the same directory imported by
#     rlctl import envoy-ratelimit --merge-domains --apply;
# then rlenvoy-diff run sends both the same seeded sequences of
# ShouldRateLimit requests (each sequence on empty counters) and prints
# the summary. It exits as rlenvoy-diff does: 0 when every difference is
# a documented one (the allowlist), 1 when one is not, 2 when the run
# could not be made.
#
# Knobs (environment): SEED (1), SEQUENCES (1000), MAX_REQUESTS (12),
# SHOW (20: differences printed), DIFFS (a file for every differing
# request as JSON lines), TRACE (sequence numbers, comma-separated, whose
# every request is printed with both answers), ENVOY_RLS_COMMIT (the
# commit you built, printed in the header), KEEP=1 (keep the temporary
# directory, the servers' logs and the database).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "diff-envoy-ratelimit: error: $*" >&2; exit 2; }
log() { echo "diff-envoy-ratelimit: $*" >&2; }

[ -n "${ENVOY_RLS_BIN:-}" ] || die "set ENVOY_RLS_BIN to a built envoyproxy/ratelimit service binary (build it outside this repository)"
[ -x "$ENVOY_RLS_BIN" ] || die "ENVOY_RLS_BIN=$ENVOY_RLS_BIN is not an executable file"
[ -n "${ENVOY_RLS_REPO:-}" ] || die "set ENVOY_RLS_REPO to a checkout of github.com/envoyproxy/ratelimit (its configuration files are the test's)"
[ -d "$ENVOY_RLS_REPO/test/config" ] || die "ENVOY_RLS_REPO=$ENVOY_RLS_REPO has no test/config directory"
[ -n "${DATABASE_URL:-}" ] || die "set DATABASE_URL to a PostgreSQL server on which the run may create a database"
command -v psql >/dev/null || die "psql is needed to create the run's database"
server_url=$DATABASE_URL

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rldiff.XXXXXX")
pids=()
db="rlenvoydiff_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
db_created=
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -d "$tmp/redis" ] && "$repo/scripts/redisdev.sh" scratch-stop "$tmp/redis" >/dev/null 2>&1 || true
	if [ -n "${KEEP:-}" ]; then
		log "kept $tmp and database $db"
	else
		[ -n "$db_created" ] && psql -q "$server_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

# shellcheck source=loopback.sh
. "$repo/scripts/loopback.sh"

log "building rlapi, rlctl and rlenvoy-diff from $repo"
(cd "$repo" && for c in rlapi rlctl rlenvoy-diff; do go build -o "$tmp/bin/$c" "./cmd/$c"; done)

# The configuration, the same files for both services.
cfg="$tmp/envoy/runtime/ratelimit/config"
"$tmp/bin/rlenvoy-diff" configs -envoy-repo "$ENVOY_RLS_REPO" -out "$cfg" >"$tmp/configs.txt"

redis_url=$("$repo/scripts/redisdev.sh" scratch-standalone "$tmp/redis")
redis_addr=${redis_url#redis://}
redis_addr=${redis_addr%%/*}

free_port envoy_grpc envoy_http envoy_debug
env USE_STATSD=false USE_PROMETHEUS=false LOG_LEVEL=warn \
	REDIS_SOCKET_TYPE=tcp REDIS_URL="$redis_addr" MERGE_DOMAIN_CONFIG=true \
	RUNTIME_ROOT="$tmp/envoy/runtime" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
	HOST=127.0.0.1 PORT="$envoy_http" GRPC_HOST=127.0.0.1 GRPC_PORT="$envoy_grpc" \
	DEBUG_HOST=127.0.0.1 DEBUG_PORT="$envoy_debug" \
	"$ENVOY_RLS_BIN" >"$tmp/envoy.log" 2>&1 &
pids+=($!)

# rlapi on a database of the run's own, so that no other definition is in
# the domains compared.
psql -q "$server_url" -c "CREATE DATABASE $db" >/dev/null || die "cannot create database $db on DATABASE_URL's server"
db_created=1
base=${DATABASE_URL%%\?*}
export DATABASE_URL="${base%/*}/$db${DATABASE_URL#"$base"}"
"$tmp/bin/rlapi" migrate >/dev/null
"$tmp/bin/rlapi" token create --name envoydiff --role admin --output-file "$tmp/admin.token" >/dev/null
free_port http grpc
"$tmp/bin/rlapi" serve --addr "127.0.0.1:$http" --grpc-addr "127.0.0.1:$grpc" \
	--grpc-count-mode every-descriptor --grpc-trusted-clients 127.0.0.1/32 \
	--counters-url "redis://$redis_addr/1" --enforcement on \
	--backend-timeout 5s --log-level warn >"$tmp/rlapi.log" 2>&1 &
pids+=($!)
wait_port "$http" rlapi "$tmp/rlapi.log"
wait_port "$grpc" "rlapi (gRPC)" "$tmp/rlapi.log"
wait_port "$envoy_grpc" "Envoy's ratelimit service" "$tmp/envoy.log"
RLCTL_SERVER="http://127.0.0.1:$http" RLCTL_TOKEN_FILE="$tmp/admin.token" \
	"$tmp/bin/rlctl" import envoy-ratelimit "$cfg" --merge-domains --apply >"$tmp/import.txt" 2>&1 ||
	{ cat "$tmp/import.txt" >&2; die "rlctl import envoy-ratelimit refused the configuration"; }

cat <<EOF
diff-envoy-ratelimit: $(date -u +%FT%TZ), $(uname -srm), $(nproc) cores, loadavg $(cut -d' ' -f1-3 /proc/loadavg)
  rlctl $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), $(go version | cut -d' ' -f3), rlapi --grpc-count-mode every-descriptor, counters on $(redis-server --version | cut -d' ' -f1-3) (db 1)
  envoyproxy/ratelimit ${ENVOY_RLS_COMMIT:-commit not given (ENVOY_RLS_COMMIT)}, binary sha256 $(sha256sum "$ENVOY_RLS_BIN" | cut -c1-12), configuration from $(git -C "$ENVOY_RLS_REPO" rev-parse --short HEAD 2>/dev/null || echo "$ENVOY_RLS_REPO") (db 0)
$(sed 's/^/  /' "$tmp/configs.txt" | grep -v '^  not used')
$(grep -i warn "$tmp/import.txt" | sed 's/^/  import: /' || true)

EOF
set +e
"$tmp/bin/rlenvoy-diff" run -envoy "127.0.0.1:$envoy_grpc" -rlapi "127.0.0.1:$grpc" -config "$cfg" \
	-envoy-redis "redis://$redis_addr/0" -rlapi-redis "redis://$redis_addr/1" \
	-seed "${SEED:-1}" -sequences "${SEQUENCES:-1000}" -max-requests "${MAX_REQUESTS:-12}" \
	-show "${SHOW:-20}" ${DIFFS:+-diffs "$DIFFS"} ${TRACE:+-trace "$TRACE"}
rc=$?
set -e
exit "$rc"
