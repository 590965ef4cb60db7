#!/usr/bin/env bash
# redisdev.sh: the private Redis servers behind `make test` (the Redis
# counter store's tests). `make run` never needs them.
#
#   scripts/redisdev.sh start        start (or reuse) a standalone instance and a
#                                    cluster of 3 masters + 3 replicas; print nothing
#   scripts/redisdev.sh url          start them; print the standalone's REDIS_URL
#   scripts/redisdev.sh cluster-url  start them; print the cluster's REDIS_CLUSTER_URL
#   scripts/redisdev.sh stop         stop the servers this checkout started (no-op if none)
#   scripts/redisdev.sh status       say whether they run, and where
#   scripts/redisdev.sh running      print how many of them run (0 to 7)
#
#   scripts/redisdev.sh scratch-cluster DIR   a throwaway cluster with its data in DIR
#                                    (an empty or missing directory); print its URL
#   scripts/redisdev.sh scratch-standalone DIR  a throwaway standalone server in DIR; print its URL
#   scripts/redisdev.sh scratch-sentinel DIR  a throwaway master, replica and three sentinels
#                                    (master set "rlctl") in DIR; print the redis+sentinel:// URL
#   scripts/redisdev.sh scratch-stop DIR      stop the throwaway server, cluster or sentinel set in DIR
#
# The fault tests (pkg/enforce/redis) kill and restart only such throwaway
# servers, never the shared ones the other tests use.
#
# With REDIS_URL (REDIS_CLUSTER_URL) set, url (cluster-url) prints it and
# touches nothing else.
#
# The servers belong to this checkout: their data lives under .rl/redis
# (standalone) and .rl/redis-cluster (one directory per node), they listen
# on 127.0.0.1 on ports of their own (chosen from the checkout's path, as
# scripts/devdb.sh chooses its port, and reused while they run), persist
# nothing (counters are soft state: a restart starts empty) and every data
# directory carries a marker file. stop refuses a directory without the
# marker and only ever signals the pid a server of ours wrote there, so the
# script never touches a server it did not start.
#
# Everything but the URLs goes to stderr, so `$(scripts/redisdev.sh url)` is safe.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="$repo/.rl"
marker="rlctl-redisdev"
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}

log() { echo "redisdev: $*" >&2; }
die() { echo "redisdev: error: $*" >&2; exit 1; }

need_binaries() {
	command -v "$server" >/dev/null 2>&1 || die "no redis-server found in PATH; install Debian's 'redis-server' package, or set REDIS_URL and REDIS_CLUSTER_URL to servers you own"
	command -v "$cli" >/dev/null 2>&1 || die "no redis-cli found in PATH (Debian's redis-tools package)"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports N OFFSET prints N consecutive free loopback ports (their cluster
# bus ports, +10000, free too), from one derived from the checkout's path.
# Every port and bus port stays below 32768, where Linux's ephemeral range
# begins: an outgoing connection of any test may take a port in that range
# at any moment, and a bus port taken so stops a node from starting.
pick_ports() {
	local n=$1 offset=$2 port i j ok
	port=$((10000 + ($(printf '%s' "$repo" | cksum | cut -d' ' -f1) + offset) % 12000))
	for i in $(seq 0 300); do
		if [ $((port + n - 1 + 10000)) -gt 32767 ]; then port=10000; fi
		ok=1
		for j in $(seq 0 $((n - 1))); do
			if port_busy $((port + j)) || port_busy $((port + j + 10000)); then ok=; break; fi
		done
		if [ -n "$ok" ]; then
			seq "$port" $((port + n - 1))
			return
		fi
		port=$((port + n))
	done
	die "no $n free loopback ports found"
}

pid_of() { [ -f "$1/redis.pid" ] && cat "$1/redis.pid"; }

# is_running DIR: a server of ours (marker, pid alive, answering PING on
# its recorded port) runs in DIR.
is_running() {
	local dir=$1 pid port
	[ -f "$dir/$marker" ] && [ -f "$dir/port" ] || return 1
	pid=$(pid_of "$dir") || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	port=$(cat "$dir/port")
	[ "$("$cli" -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]
}

# start_node DIR PORT [cluster|sentinel|ARGS...]: start one server
# (daemonized) in DIR: a Cluster node, a sentinel (its configuration
# already in DIR/sentinel.conf), or a standalone server with ARGS added.
start_node() {
	local dir=$1 port=$2 cluster=${3:-} i
	mkdir -p "$dir"
	touch "$dir/$marker"
	echo "$port" >"$dir/port"
	local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes
		--pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
		--save '' --appendonly no --protected-mode no)
	if [ "$cluster" = sentinel ]; then
		# Debian's redis-server is also the sentinel (redis-sentinel is
		# the same binary under another name): no package of its own. A
		# sentinel persists nothing but its configuration, which it
		# rewrites as it learns the set.
		args=("$dir/sentinel.conf" --sentinel --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes
			--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --protected-mode no)
	elif [ -n "$cluster" ] && [ "$cluster" != cluster ]; then
		args+=("${@:3}")
	elif [ -n "$cluster" ]; then
		# A short node timeout so that a killed master fails over within
		# seconds (the fault tests wait for it), and a replica always
		# stands in, however long it was cut off (validity factor 0: a
		# test cluster prefers availability; its data is soft state).
		args+=(--cluster-enabled yes --cluster-config-file "$dir/nodes.conf"
			--cluster-node-timeout 2000 --cluster-replica-validity-factor 0)
	fi
	"$server" "${args[@]}" >&2 || die "redis-server did not start in $dir"
	# Up to 30 s: on a loaded machine six servers starting at once take
	# longer than the 10 s a quiet one needs at most.
	for i in $(seq 1 300); do
		is_running "$dir" && return 0
		sleep 0.1
	done
	tail -n 20 "$dir/redis.log" >&2 || true
	die "redis-server in $dir did not answer"
}

stop_node() {
	local dir=$1 pid i
	[ -d "$dir" ] || return 0
	[ -f "$dir/$marker" ] || die "$dir was not created by this script; refusing to touch it"
	pid=$(pid_of "$dir") || return 0
	if kill -0 "$pid" 2>/dev/null && [ -f "$dir/port" ] &&
		[ "$("$cli" -h 127.0.0.1 -p "$(cat "$dir/port")" ping 2>/dev/null)" = PONG ]; then
		"$cli" -h 127.0.0.1 -p "$(cat "$dir/port")" shutdown nosave now >/dev/null 2>&1 || true
		# Wait for the port to close (not for the pid: a daemon whose
		# parent never reaps it lingers as a zombie).
		for i in $(seq 1 100); do
			port_busy "$(cat "$dir/port")" || break
			sleep 0.1
		done
	fi
	rm -f "$dir/redis.pid"
}

standalone_url() { echo "redis://127.0.0.1:$(cat "$state/redis/port")"; }

start_standalone() {
	local dir="$state/redis"
	[ -e "$dir" ] && [ ! -f "$dir/$marker" ] && die "$dir was not created by this script; refusing to touch it"
	is_running "$dir" && return 0
	local port
	if [ -f "$dir/port" ] && ! port_busy "$(cat "$dir/port")"; then
		port=$(cat "$dir/port")
	else
		port=$(pick_ports 1 0)
	fi
	log "starting Redis on 127.0.0.1:$port (data in $dir)"
	start_node "$dir" "$port"
}

cluster_url() {
	local base=$1 urls= i
	for i in 0 1 2 3 4 5; do
		urls="${urls:+$urls,}127.0.0.1:$(cat "$base/node$i/port")"
	done
	echo "redis+cluster://$urls"
}

# cluster_ok: every node sees the cluster as ok, and every replica is in
# sync with its master (so a master killed next can fail over).
cluster_ok() {
	local base=$1 i port info
	for i in 0 1 2 3 4 5; do
		port=$(cat "$base/node$i/port")
		"$cli" -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
		info=$("$cli" -h 127.0.0.1 -p "$port" info replication 2>/dev/null) || return 1
		if grep -q '^role:slave' <<<"$info"; then
			grep -q '^master_link_status:up' <<<"$info" || return 1
		fi
	done
}

# start_cluster BASE OFFSET: start (or reuse) a cluster of 3 masters and 3
# replicas with one directory per node under BASE.
start_cluster() {
	local base=$1 offset=$2 i ports=() up=1
	mkdir -p "$base"
	touch "$base/$marker"
	for i in 0 1 2 3 4 5; do
		[ -e "$base/node$i" ] && [ ! -f "$base/node$i/$marker" ] && die "$base/node$i was not created by this script; refusing to touch it"
		is_running "$base/node$i" || up=
	done
	if [ -n "$up" ] && cluster_ok "$base"; then
		return 0
	fi
	# Reuse the recorded ports (and the cluster's node files) when they are
	# all free; otherwise start over on new ports with a new cluster.
	local reuse=1
	for i in 0 1 2 3 4 5; do
		if is_running "$base/node$i"; then continue; fi
		if [ ! -f "$base/node$i/port" ] || [ ! -f "$base/node$i/nodes.conf" ] || port_busy "$(cat "$base/node$i/port")"; then reuse=; fi
	done
	if [ -z "$reuse" ]; then
		for i in 0 1 2 3 4 5; do stop_node "$base/node$i"; rm -f "$base/node$i/nodes.conf"; done
		mapfile -t ports < <(pick_ports 6 "$offset")
		for i in 0 1 2 3 4 5; do mkdir -p "$base/node$i"; touch "$base/node$i/$marker"; echo "${ports[$i]}" >"$base/node$i/port"; done
	fi
	log "starting a Redis Cluster (3 masters, 3 replicas) on 127.0.0.1:$(cat "$base/node0/port")..$(cat "$base/node5/port") (data in $base)"
	for i in 0 1 2 3 4 5; do
		is_running "$base/node$i" || start_node "$base/node$i" "$(cat "$base/node$i/port")" cluster
	done
	if [ -z "$reuse" ]; then
		local addrs=()
		for i in 0 1 2 3 4 5; do addrs+=("127.0.0.1:$(cat "$base/node$i/port")"); done
		# Its 45 lines (in colour on a terminal) go to a log, shown
		# only when it fails: make test's output stays the tests'.
		"$cli" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$base/create.log" 2>&1 ||
			{ tail -n 20 "$base/create.log" >&2; die "redis-cli --cluster create failed (log: $base/create.log)"; }
	fi
	for i in $(seq 1 300); do
		cluster_ok "$base" && return 0
		sleep 0.1
	done
	die "the cluster in $base did not reach cluster_state:ok"
}

stop_cluster() {
	local base=$1 i
	[ -d "$base" ] || return 0
	[ -f "$base/$marker" ] || die "$base was not created by this script; refusing to touch it"
	for i in 0 1 2 3 4 5; do stop_node "$base/node$i"; done
}

cmd_start() {
	need_binaries
	[ -n "${REDIS_URL:-}" ] || start_standalone
	[ -n "${REDIS_CLUSTER_URL:-}" ] || start_cluster "$state/redis-cluster" 100
}

cmd_url() {
	if [ -n "${REDIS_URL:-}" ]; then echo "$REDIS_URL"; return; fi
	cmd_start
	standalone_url
}

cmd_cluster_url() {
	if [ -n "${REDIS_CLUSTER_URL:-}" ]; then echo "$REDIS_CLUSTER_URL"; return; fi
	cmd_start
	cluster_url "$state/redis-cluster"
}

cmd_stop() {
	if [ ! -d "$state/redis" ] && [ ! -d "$state/redis-cluster" ]; then
		log "no Redis servers recorded in $state; nothing to stop"
		return
	fi
	command -v "$cli" >/dev/null 2>&1 || die "redis-cli not found"
	stop_node "$state/redis"
	stop_cluster "$state/redis-cluster"
}

cmd_status() {
	local rc=0 i
	[ -n "${REDIS_URL:-}" ] && log "REDIS_URL is set; the private standalone is not used"
	[ -n "${REDIS_CLUSTER_URL:-}" ] && log "REDIS_CLUSTER_URL is set; the private cluster is not used"
	if is_running "$state/redis"; then
		log "standalone running: $(standalone_url)"
	else
		log "standalone not running"
		rc=1
	fi
	local up=1
	for i in 0 1 2 3 4 5; do is_running "$state/redis-cluster/node$i" || up=; done
	if [ -n "$up" ] && cluster_ok "$state/redis-cluster"; then
		log "cluster running: $(cluster_url "$state/redis-cluster")"
	else
		log "cluster not running"
		rc=1
	fi
	return $rc
}

cmd_running() {
	local n=0 d
	command -v "$cli" >/dev/null 2>&1 || { echo 0; return; }
	for d in "$state/redis" "$state"/redis-cluster/node*; do
		is_running "$d" && n=$((n + 1))
	done
	echo "$n"
}

cmd_scratch_cluster() {
	local dir=${1:-}
	[ -n "$dir" ] || die "scratch-cluster needs a directory"
	need_binaries
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/$marker" ]; then
		die "$dir is not empty and was not created by this script; refusing to touch it"
	fi
	dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
	# Ports away from the checkout's own cluster.
	start_cluster "$dir" "$((200 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 5000))"
	cluster_url "$dir"
}

cmd_scratch_standalone() {
	local dir=${1:-}
	[ -n "$dir" ] || die "scratch-standalone needs a directory"
	need_binaries
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/$marker" ]; then
		die "$dir is not empty and was not created by this script; refusing to touch it"
	fi
	dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
	if ! is_running "$dir"; then
		local port
		if [ -f "$dir/port" ] && ! port_busy "$(cat "$dir/port")"; then
			port=$(cat "$dir/port")
		else
			port=$(pick_ports 1 "$((300 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 5000))")
		fi
		start_node "$dir" "$port"
	fi
	echo "redis://127.0.0.1:$(cat "$dir/port")"
}

sentinel_master=rlctl

sentinel_url() {
	local base=$1 urls= i
	for i in 0 1 2; do
		urls="${urls:+$urls,}127.0.0.1:$(cat "$base/sentinel$i/port")"
	done
	echo "redis+sentinel://$urls/$sentinel_master"
}

# sentinel_ok BASE: the replica is in sync, and every sentinel knows the
# master, its replica and the two other sentinels (so that a master
# killed next is failed over: the sentinels find each other through the
# master's hello channel, every 2 s).
sentinel_ok() {
	local base=$1 i info
	info=$("$cli" -h 127.0.0.1 -p "$(cat "$base/replica/port")" info replication 2>/dev/null) || return 1
	grep -q '^master_link_status:up' <<<"$info" || return 1
	for i in 0 1 2; do
		info=$("$cli" -h 127.0.0.1 -p "$(cat "$base/sentinel$i/port")" sentinel master "$sentinel_master" 2>/dev/null) || return 1
		grep -qx 'num-slaves' <<<"$info" || return 1
		[ "$(grep -A1 -x 'num-slaves' <<<"$info" | tail -n 1)" = 1 ] || return 1
		[ "$(grep -A1 -x 'num-other-sentinels' <<<"$info" | tail -n 1)" = 2 ] || return 1
	done
}

stop_sentinel_set() {
	local base=$1 i
	[ -d "$base" ] || return 0
	[ -f "$base/$marker" ] || die "$base was not created by this script; refusing to touch it"
	# The sentinels first, so that none fails the master over while the
	# servers stop.
	for i in 0 1 2; do stop_node "$base/sentinel$i"; done
	stop_node "$base/replica"
	stop_node "$base/master"
}

# cmd_scratch_sentinel DIR: a master, one replica and three sentinels
# (quorum 2) with a directory each under DIR. A sentinel calls the master
# down after 1 s without an answer and a failover takes a few seconds,
# so the fault tests can wait for one.
cmd_scratch_sentinel() {
	local dir=${1:-} ports=() i up=1
	[ -n "$dir" ] || die "scratch-sentinel needs a directory"
	need_binaries
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/$marker" ]; then
		die "$dir is not empty and was not created by this script; refusing to touch it"
	fi
	dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
	touch "$dir/$marker"
	for d in master replica sentinel0 sentinel1 sentinel2; do
		is_running "$dir/$d" || up=
	done
	if [ -n "$up" ] && sentinel_ok "$dir"; then
		sentinel_url "$dir"
		return
	fi
	# Whatever runs of an earlier set (a failover may have swapped the
	# roles) stops: the set starts over on new ports.
	stop_sentinel_set "$dir"
	mapfile -t ports < <(pick_ports 5 "$((400 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 5000))")
	log "starting a Redis master, replica and three sentinels on 127.0.0.1:${ports[0]}..${ports[4]} (data in $dir)"
	start_node "$dir/master" "${ports[0]}"
	start_node "$dir/replica" "${ports[1]}" --replicaof 127.0.0.1 "${ports[0]}"
	for i in 0 1 2; do
		mkdir -p "$dir/sentinel$i"
		touch "$dir/sentinel$i/$marker"
		cat >"$dir/sentinel$i/sentinel.conf" <<-EOF
			sentinel monitor $sentinel_master 127.0.0.1 ${ports[0]} 2
			sentinel down-after-milliseconds $sentinel_master 1000
			sentinel failover-timeout $sentinel_master 5000
			sentinel parallel-syncs $sentinel_master 1
		EOF
		start_node "$dir/sentinel$i" "${ports[$((i + 2))]}" sentinel
	done
	for i in $(seq 1 300); do
		if sentinel_ok "$dir"; then
			sentinel_url "$dir"
			return
		fi
		sleep 0.1
	done
	die "the sentinels in $dir did not all see the master, its replica and each other"
}

cmd_scratch_stop() {
	local dir=${1:-}
	[ -n "$dir" ] || die "scratch-stop needs a directory"
	if [ -d "$dir/node0" ]; then
		stop_cluster "$dir"
	elif [ -d "$dir/sentinel0" ]; then
		stop_sentinel_set "$dir"
	else
		stop_node "$dir"
	fi
}

case "${1:-}" in
start) cmd_start ;;
url) cmd_url ;;
cluster-url) cmd_cluster_url ;;
stop) cmd_stop ;;
status) cmd_status ;;
running) cmd_running ;;
scratch-cluster) cmd_scratch_cluster "${2:-}" ;;
scratch-standalone) cmd_scratch_standalone "${2:-}" ;;
scratch-sentinel) cmd_scratch_sentinel "${2:-}" ;;
scratch-stop) cmd_scratch_stop "${2:-}" ;;
*) echo "usage: $0 start|url|cluster-url|stop|status|running|scratch-cluster DIR|scratch-standalone DIR|scratch-sentinel DIR|scratch-stop DIR" >&2; exit 2 ;;
esac
