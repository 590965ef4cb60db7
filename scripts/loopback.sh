# loopback.sh: ports on 127.0.0.1 for the scripts that start servers of
# their own (bench-envoy-ratelimit.sh, diff-envoy-ratelimit.sh). Sourced,
# not run: the sourcing script defines die MESSAGE.

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port VAR... sets each VAR to a free loopback port below 32768
# (Linux's ephemeral range starts there) not handed out before in this run.
# It assigns rather than prints: in a $(...) subshell the record of the
# ports handed out would be lost, and two servers could be given one port.
taken=" "
free_port() {
	local _fp_port _fp_var
	for _fp_var in "$@"; do
		for _ in $(seq 1 500); do
			_fp_port=$((20000 + RANDOM % 12000))
			if [[ $taken != *" $_fp_port "* ]] && ! port_busy "$_fp_port"; then
				taken="$taken$_fp_port "
				printf -v "$_fp_var" '%s' "$_fp_port"
				continue 2
			fi
		done
		die "no free loopback port"
	done
}

wait_port() { # wait_port PORT NAME LOGFILE
	for _ in $(seq 1 300); do
		port_busy "$1" && return
		sleep 0.1
	done
	cat "$3" >&2 || true
	die "$2 did not listen on 127.0.0.1:$1"
}
