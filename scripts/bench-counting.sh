#!/usr/bin/env bash
# bench-counting.sh: the counting statement's cost against a SELECT 1 round
# trip on the same server, in the same run (docs/performance.md,
# "Counting cheaply"). Prints two Markdown tables, one row per round, ready
# to paste:
#
#   pgbench (prepared, one client): SELECT 1 and one rl_take_024 call with
#     three fixed-window gates (existing counters, 10,000 callers at random),
#     ratio 1 = take / SELECT 1 (bar: at most 3); SELECT 1 at 16 clients.
#   in process (cmd/rlenforce-load, 64 goroutines, three gates a decision):
#     decisions/s per algorithm and key shape, ratio 2 = fixed window / the
#     16-client SELECT 1 tps of the same round (bar: at least 0.5), and the
#     sliding window and token bucket against the fixed window (bar: 0.8).
#
#   DATABASE_URL=postgres://... scripts/bench-counting.sh
#
# Environment: ROUNDS (3), PGBENCH_SECONDS (5), LOAD_DURATION (5s),
# LOAD_KEYS (2000: callers of the spread runs; more makes seeding and
# warm-up long). DATABASE_URL must be a URL (postgres://.../db?...): the
# script creates and drops two scratch databases beside its database,
# rlbench_counting_pg and rlbench_counting_load, so its user needs CREATEDB.
# Rounds are interleaved (pgbench, then the load program) so a machine whose
# load changes during the run changes both sides of each ratio alike; the
# load average is printed with each round.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${DATABASE_URL:?set DATABASE_URL to a postgres:// URL}"
rounds=${ROUNDS:-3}
secs=${PGBENCH_SECONDS:-5}
dur=${LOAD_DURATION:-5s}
keys=${LOAD_KEYS:-2000}

base=${DATABASE_URL%%\?*}
query=${DATABASE_URL#"$base"}
prefix=${base%/*}
url_of() { echo "$prefix/$1$query"; }
pgdb=rlbench_counting_pg
loaddb=rlbench_counting_load

work=$(mktemp -d)
cleanup() {
	for d in "$pgdb" "$loaddb"; do
		psql "$DATABASE_URL" -qXc "drop database if exists $d with (force)" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

echo "building rlapi and rlenforce-load..." >&2
(cd "$repo" && go build -o "$work/" ./cmd/rlapi ./cmd/rlenforce-load)

for d in "$pgdb" "$loaddb"; do
	psql "$DATABASE_URL" -qXc "set client_min_messages = warning" -c "drop database if exists $d with (force)" -c "create database $d" >/dev/null
done
"$work/rlapi" migrate -database-url "$(url_of "$pgdb")" >&2
# 30,000 fixed-window counters in window 1, keyed as a gateway keys them.
psql "$(url_of "$pgdb")" -qX >/dev/null <<'SQL'
insert into rl_counters (key, window_index, count, expires_at)
select k, 1, 0, now() + interval '1 day' from generate_series(1, 10000) i,
    lateral (values ('c|3600|user:bench-user-' || i),
                    ('ct|3600|user:bench-user-' || i || '|mcp_server:bench-server-' || i),
                    ('t|target:server_group:bench-servers:3600|bench-server-' || i)) v(k);
vacuum analyze rl_counters;
SQL

echo 'select 1;' >"$work/sel1.sql"
# (pgbench -M prepared takes every ":name" for a variable, even inside a
# literal: the keys are written with "~" for ":"; the counters exist, so
# the take inserts none and the keys' parts, written only on insert, are
# passed empty)
cat >"$work/take3.sql" <<'SQL'
\set k random(1, 10000)
select allowed, counts, room, previous from rl_take_024(array[1,1,1],
    array[replace('c|3600|user~bench-user-', '~', ':') || cast(:k as int),
          replace('ct|3600|user~bench-user-', '~', ':') || cast(:k as int) || replace('|mcp_server~bench-server-', '~', ':') || cast(:k as int),
          replace('t|target~server_group~bench-servers~3600|bench-server-', '~', ':') || cast(:k as int)],
    array[1,1,1]::bigint[], array[1000000000,1000000000,1000000000]::bigint[], array[true,true,true],
    array[now()+interval '1 day',now()+interval '1 day',now()+interval '1 day'], array[1]::bigint[], array[true],
    array['fixed_window','fixed_window','fixed_window'], array[3600000000000,3600000000000,3600000000000]::bigint[],
    array[0,0,0]::bigint[], array[0]::bigint[],
    array['','',''], array['','',''], array['','','']);
SQL

# pgbench_run <file> <clients>: prints "latency_ms tps"
pgbench_run() {
	local out
	out=$(pgbench -n -M prepared -c "$2" -j "$(($2 > 1 ? 2 : 1))" -T "$secs" -f "$work/$1" "$(url_of "$pgdb")" 2>&1) || {
		echo "$out" >&2
		return 1
	}
	awk '/^latency average/ {l=$4} /^tps/ {t=$3} END {printf "%s %s\n", l, t}' <<<"$out"
}

loadavg() { cut -d' ' -f1 /proc/loadavg; }

pg_rows=()
load_rows=()
for r in $(seq 1 "$rounds"); do
	echo "round $r of $rounds..." >&2
	la=$(loadavg)
	read -r sel_ms _ < <(pgbench_run sel1.sql 1)
	read -r take_ms _ < <(pgbench_run take3.sql 1)
	read -r _ sel16 < <(pgbench_run sel1.sql 16)
	pg_rows+=("$(awk -v r="$r" -v la="$la" -v s="$sel_ms" -v t="$take_ms" -v s16="$sel16" \
		'BEGIN {printf "| %d (%s) | %.3f | %.3f | **%.1f** | %.0f |", r, la, s, t, t / s, s16}')")
	out=$("$work/rlenforce-load" -dsn "$(url_of "$loaddb")" -modes ours -duration "$dur" -keys "$keys" -concurrency 64 \
		-shapes spread,hot -algorithm fixed_window,sliding_window,token_bucket 2>/dev/null)
	for shape in spread hot; do
		load_rows+=("$(awk -v r="$r" -v la="$(loadavg)" -v shape="$shape" -v s16="$sel16" '
			$2 == "ours" && $3 == shape && $4 == 64 { d[$1] = $5; p[$1] = $6 }
			END {
				fw = d["fixed_window"]; sw = d["sliding_window"]; tb = d["token_bucket"]
				printf "| %d (%s) | %s | %.0f | %.0f, %s | %.0f, %s | %.0f, %s | **%.2f** | %.2f | %.2f |",
					r, la, shape, s16, fw, p["fixed_window"], sw, p["sliding_window"], tb, p["token_bucket"],
					(s16 > 0 ? fw / s16 : 0), (fw > 0 ? sw / fw : 0), (fw > 0 ? tb / fw : 0)
			}' <<<"$out")")
	done
done

cpus=$(nproc)
pgv=$(psql "$DATABASE_URL" -AtXc "show server_version")
echo
echo "Machine: $cpus CPUs, $(uname -sr), PostgreSQL $pgv, $(go version | cut -d' ' -f3); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "pgbench -n -M prepared -T $secs; rlenforce-load -modes ours -duration $dur -keys $keys -concurrency 64"
echo
echo "| round (load) | \`select 1\`, ms | take, 3 gates, ms | ratio 1 (bar <= 3) | \`select 1\`, 16 clients, tps |"
echo "| --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${pg_rows[@]}"
echo
echo "| round (load) | keys | \`select 1\`, 16 clients, tps | fixed window: /s, p50 | sliding window | token bucket | ratio 2 (bar >= 0.5) | sliding / fixed (bar >= 0.8) | token / fixed (bar >= 0.8) |"
echo "| --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: |"
printf '%s\n' "${load_rows[@]}"
