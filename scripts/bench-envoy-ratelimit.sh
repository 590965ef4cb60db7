#!/usr/bin/env bash
# bench-envoy-ratelimit.sh: our decision paths beside Envoy's ratelimit
# service (github.com/envoyproxy/ratelimit), on the same Redis, in one run of
# interleaved rounds (docs/performance.md, "Beside Envoy's ratelimit service").
#
#   ENVOY_RLS_BIN=/path/to/ratelimit DATABASE_URL=postgres://.../scratch_db \
#       scripts/bench-envoy-ratelimit.sh
#
# ENVOY_RLS_BIN is a ratelimit service binary you built yourself, outside this
# repository (this script neither fetches nor builds it). DATABASE_URL names a
# database the run may fill: rlenvoy-load applies the migrations and writes
# its definitions, a network membership and an enforcer token (prefix "load-").
#
# The script starts, all on 127.0.0.1 and all stopped when it ends:
#   - a throwaway standalone redis-server (scripts/redisdev.sh scratch-standalone);
#   - Envoy's service on it (db 0), configured with three descriptors whose
#     limits no run reaches (domain load: route=checkout -> tenant, api_key,
#     zone=/files/*; one hour windows);
#   - rlapi serve --grpc-addr --counters-url redis://.../1 (the same server, db 1);
#   - rlapi serve --grpc-addr with PostgreSQL's counters (the default)
# (each rlapi path, gRPC and HTTP, in a process of its own), then
# rlenvoy-load -targets drives them in rotating order, each concurrency in
# ROUNDS rounds, and prints a markdown table: decisions/s, p50, p99, the
# ratio of each to Envoy's, and the CPU time per decision of the target's
# own process and of the Redis server (used while that target's rounds ran;
# on a busy machine this moves far less than decisions/s). Every rlapi gets --backend-timeout 5s so that every
# answer is a decision, not a fail-open one on a busy machine (Envoy's
# REDIS_TIMEOUT is 10 s by default).
#
# Knobs (environment): DURATION (per target and concurrency, default 20s),
# ROUNDS (4), CONCURRENCY (1,16,64), KEYS (50000), GRPC_CONNS (1),
# ENVOY_RLS_ENV (extra VAR=value words for Envoy's service, e.g.
# "REDIS_PIPELINE_WINDOW=150us REDIS_POOL_SIZE=64"; default none: its defaults),
# ENVOY_RLS_COMMIT (the commit you built, printed in the header),
# KEEP=1 (keep the temporary directory with the servers' logs).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "bench-envoy-ratelimit: error: $*" >&2; exit 1; }
log() { echo "bench-envoy-ratelimit: $*" >&2; }

[ -n "${ENVOY_RLS_BIN:-}" ] || die "set ENVOY_RLS_BIN to a built envoyproxy/ratelimit service binary (build it outside this repository)"
[ -x "$ENVOY_RLS_BIN" ] || die "ENVOY_RLS_BIN=$ENVOY_RLS_BIN is not an executable file"
[ -n "${DATABASE_URL:-}" ] || die "set DATABASE_URL to a database the run may fill"
duration=${DURATION:-20s}
rounds=${ROUNDS:-4}
concurrency=${CONCURRENCY:-1,16,64}
keys=${KEYS:-50000}
grpc_conns=${GRPC_CONNS:-1}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlbench.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -d "$tmp/redis" ] && "$repo/scripts/redisdev.sh" scratch-stop "$tmp/redis" >/dev/null 2>&1 || true
	if [ -n "${KEEP:-}" ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# shellcheck source=loopback.sh
. "$repo/scripts/loopback.sh"

log "building rlapi and rlenvoy-load from $repo"
(cd "$repo" && go build -o "$tmp/bin/rlapi" ./cmd/rlapi && go build -o "$tmp/bin/rlenvoy-load" ./cmd/rlenvoy-load)

redis_url=$("$repo/scripts/redisdev.sh" scratch-standalone "$tmp/redis")
redis_addr=${redis_url#redis://}
redis_addr=${redis_addr%%/*}

# Envoy's service: three descriptors, limits never reached.
mkdir -p "$tmp/envoy/runtime/ratelimit/config"
cat >"$tmp/envoy/runtime/ratelimit/config/load.yaml" <<'EOF'
domain: load
descriptors:
  - key: route
    value: checkout
    descriptors:
      - key: tenant
        rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: api_key
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: zone
    value: /files/*
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
EOF
free_port envoy_grpc envoy_http envoy_debug
# shellcheck disable=SC2086 # ENVOY_RLS_ENV is a list of words
env USE_STATSD=false USE_PROMETHEUS=false LOG_LEVEL=warn \
	REDIS_SOCKET_TYPE=tcp REDIS_URL="$redis_addr" \
	RUNTIME_ROOT="$tmp/envoy/runtime" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
	HOST=127.0.0.1 PORT="$envoy_http" GRPC_HOST=127.0.0.1 GRPC_PORT="$envoy_grpc" \
	DEBUG_HOST=127.0.0.1 DEBUG_PORT="$envoy_debug" ${ENVOY_RLS_ENV:-} \
	"$ENVOY_RLS_BIN" >"$tmp/envoy.log" 2>&1 &
pids+=($!)

envoy_pid=$!

"$tmp/bin/rlapi" migrate >/dev/null
# One rlapi process per target, so that each one's CPU per decision can be
# read: NAME=URL?pid=N words for rlenvoy-load -targets, in $targets.
targets="envoy=grpc://127.0.0.1:$envoy_grpc?pid=$envoy_pid"
start_rlapi() { # start_rlapi NAME grpc|http [flags...]
	local name=$1 kind=$2 http grpc port
	shift 2
	free_port http grpc
	"$tmp/bin/rlapi" serve --addr "127.0.0.1:$http" --grpc-addr "127.0.0.1:$grpc" \
		--backend-timeout 5s --log-level warn "$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
	port=$http
	[ "$kind" = grpc ] && port=$grpc
	targets="$targets,$name=$kind://127.0.0.1:$port?pid=$!"
	wait_port "$grpc" "rlapi ($name)" "$tmp/$name.log"
}
wait_port "$envoy_grpc" "Envoy's ratelimit service" "$tmp/envoy.log"
start_rlapi ours-grpc-redis grpc --counters-url "redis://$redis_addr/1"
start_rlapi ours-http-redis http --counters-url "redis://$redis_addr/1"
start_rlapi ours-grpc-pg grpc
start_rlapi ours-http-pg http
redis_pid=$(cat "$tmp/redis/redis.pid")

cat <<EOF
bench-envoy-ratelimit: $(date -u +%FT%TZ), $(uname -srm), $(nproc) cores, loadavg $(cut -d' ' -f1-3 /proc/loadavg)
  rlctl $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), $(go version | cut -d' ' -f3)
  envoyproxy/ratelimit ${ENVOY_RLS_COMMIT:-commit not given (ENVOY_RLS_COMMIT)}, binary sha256 $(sha256sum "$ENVOY_RLS_BIN" | cut -c1-12), env: ${ENVOY_RLS_ENV:-defaults}
  $(redis-server --version | cut -d' ' -f1-3) on $redis_addr (Envoy db 0, ours db 1)
  envoy: exact per descriptor, counts every attempt (INCRBY each descriptor, then compares)
  ours: exact and all or nothing (a denied call counts in no gate)

EOF
"$tmp/bin/rlenvoy-load" -dsn "$DATABASE_URL" -duration "$duration" -rounds "$rounds" \
	-concurrency "$concurrency" -keys "$keys" -grpc-conns "$grpc_conns" \
	-targets "$targets" -shared-pid "$redis_pid"
echo
echo "loadavg at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
