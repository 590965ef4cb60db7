#!/usr/bin/env bash
# bench-before-after.sh: the enforcement core's speed at two revisions, in one
# run on one machine, interleaved (docs/performance.md, "Before and after").
#
#   DATABASE_URL=postgres://.../any_db scripts/bench-before-after.sh BASE [HEAD]
#
# BASE and HEAD are git revisions of this repository (HEAD defaults to HEAD).
# The script builds cmd/rlenforce-load at each into a temporary directory
# (git worktree add --detach; your checkout is not touched), creates two
# scratch databases on DATABASE_URL's server (one per revision, so that each
# applies its own migrations; both dropped at the end), starts a throwaway
# Redis (scripts/redisdev.sh scratch-standalone; db 1 for BASE, db 2 for
# HEAD), then runs ROUNDS rounds. A round runs both builds, BASE first in odd
# rounds and HEAD first in even ones, so a drift of the machine falls on both.
# Each run is one rlenforce-load table: -store postgres,redis -leases both
# -shapes spread,hot -concurrency 1,64 -modes ours (16 rows).
#
# It prints a markdown table: per row, each build's median decisions/s with
# the range over the rounds, HEAD/BASE of the medians, and the spread between
# rounds of the same build (the larger of the two builds' max/min - 1). A row
# whose ratio is below 0.95 minus that spread is marked "slower".
#
# Knobs (environment): DURATION (per row, default 10s), ROUNDS (3),
# CONCURRENCY (1,64), SHAPES (spread,hot), STORES (postgres,redis), KEYS (the
# spread callers and targets, 2000),
# KEEP=1 (keep the temporary directory with every run's output).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "bench-before-after: error: $*" >&2; exit 1; }
log() { echo "bench-before-after: $*" >&2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 BASE [HEAD]"
[ -n "${DATABASE_URL:-}" ] || die "set DATABASE_URL to a PostgreSQL server the run may create two databases on"
command -v psql >/dev/null || die "psql is needed to create the scratch databases"
base_rev=$(git -C "$repo" rev-parse --verify "$1^{commit}") || die "$1 is not a revision"
head_rev=$(git -C "$repo" rev-parse --verify "${2:-HEAD}^{commit}") || die "${2:-HEAD} is not a revision"
duration=${DURATION:-10s}
rounds=${ROUNDS:-3}
concurrency=${CONCURRENCY:-1,64}
shapes=${SHAPES:-spread,hot}
stores=${STORES:-postgres,redis}
keys=${KEYS:-2000}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlbefore.XXXXXX")
dbs=()
cleanup() {
	local d
	for d in "${dbs[@]}"; do psql -q "$DATABASE_URL" -c "drop database if exists $d" >/dev/null 2>&1 || true; done
	[ -d "$tmp/redis" ] && "$repo/scripts/redisdev.sh" scratch-stop "$tmp/redis" >/dev/null 2>&1 || true
	for d in base head; do
		[ -d "$tmp/src-$d" ] && git -C "$repo" worktree remove --force "$tmp/src-$d" >/dev/null 2>&1 || true
	done
	if [ -n "${KEEP:-}" ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# db_url NAME: DATABASE_URL with its database replaced by NAME.
db_url() {
	local url=${DATABASE_URL%%\?*} query=
	[ "$url" != "$DATABASE_URL" ] && query="?${DATABASE_URL#*\?}"
	echo "${url%/*}/$1$query"
}

for b in base head; do
	rev=$base_rev
	[ $b = head ] && rev=$head_rev
	log "building rlenforce-load at $b ${rev:0:12}"
	git -C "$repo" worktree add --detach -q "$tmp/src-$b" "$rev"
	(cd "$tmp/src-$b" && go build -o "$tmp/bin/$b" ./cmd/rlenforce-load)
	db=rlbefore_${b}_$$
	psql -q "$DATABASE_URL" -c "create database $db" >/dev/null
	dbs+=("$db")
done

redis_url=$("$repo/scripts/redisdev.sh" scratch-standalone "$tmp/redis")
redis_url=${redis_url%/}

run() { # run BUILD ROUND
	local b=$1 r=$2 db=1
	[ "$b" = head ] && db=2
	log "round $r: $b"
	"$tmp/bin/$b" -dsn "$(db_url "rlbefore_${b}_$$")" -redis-url "$redis_url/$db" \
		-store "$stores" -leases both -modes ours -shapes "$shapes" -concurrency "$concurrency" -keys "$keys" \
		-duration "$duration" >"$tmp/$b.$r.txt"
}
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then run base "$r"; run head "$r"; else run head "$r"; run base "$r"; fi
done

echo "# rlenforce-load, BASE ${base_rev:0:12} and HEAD ${head_rev:0:12}: $rounds interleaved rounds of $duration per row"
echo
head -n 1 "$tmp/base.1.txt"
echo
python3 - "$tmp" "$rounds" <<'EOF'
import statistics, sys

tmp, rounds = sys.argv[1], int(sys.argv[2])

def rows(path):
    # rlenforce-load's table: algorithm impl keys gor decisions/s p50 p99 ...
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[3].isdigit() and f[1] != "impl":
            try:
                out[(f[1], f[2], int(f[3]))] = float(f[4])
            except ValueError:
                pass
    return out

runs = {b: [rows(f"{tmp}/{b}.{r}.txt") for r in range(1, rounds + 1)] for b in ("base", "head")}
keys = [k for k in runs["base"][0] if all(k in run for b in runs for run in runs[b])]
print("| store, leases | keys | goroutines | BASE decisions/s, median (range) | HEAD decisions/s, median (range) | HEAD/BASE | spread between rounds | |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for k in keys:
    med, spread, cell = {}, 0.0, {}
    for b in ("base", "head"):
        v = [run[k] for run in runs[b]]
        med[b] = statistics.median(v)
        spread = max(spread, max(v) / min(v) - 1 if min(v) > 0 else 0)
        cell[b] = f"{med[b]:,.0f} ({min(v):,.0f}-{max(v):,.0f})"
    ratio = med["head"] / med["base"] if med["base"] else float("nan")
    verdict = "slower" if ratio < 0.95 - spread else ""
    print(f"| {k[0]} | {k[1]} | {k[2]} | {cell['base']} | {cell['head']} | {ratio:.2f} | {spread:.0%} | {verdict} |")
EOF
