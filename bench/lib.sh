# bench/lib.sh: the nd perf helpers bench/compare.sh and bench/ab.sh share
# (sourced, not run). They use the caller's variables: work (a scratch
# directory), port (the last TCP port used), S and C (the server's and the
# client's taskset prefix, or empty), ND (the nd binary; NDBIN overrides it
# for one call).

# build_base REV OUT: builds nd at git revision REV into OUT, from a
# temporary worktree, and prints REV's short name.
build_base() {
	local rev
	rev=$(git rev-parse --short "$1")
	git worktree add -q --detach "$work/base-src" "$rev"
	(cd "$work/base-src" && go build -o "$2" ./cmd/nd)
	git worktree remove --force "$work/base-src"
	echo "$rev"
}

# ready PORT LOG: waits (at most 10 s) until the server listens: its TCP
# port is open, or its log says "Listening" (nd perf over shm has no TCP
# port).
ready() {
	local i
	for ((i = 0; i < 200; i++)); do
		if [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] || grep -q '^Listening' "$2" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# pair SERVER-CMD CLIENT-CMD: runs the server in the background on $port,
# then the client once the server listens (both bounded), and prints the
# client's stdout. Callers parse it once the client is done: a parser
# started beside the client takes the processor from the measurement (a
# python3 behind a pyenv shim spawns several processes: 1 MiB send_bw
# measured half its figure that way).
pair() {
	local srv=${1//@PORT@/$port} cli=${2//@PORT@/$port}
	: >"$work/srv.log"
	timeout 90 $S bash -c "$srv" >"$work/srv.log" 2>&1 &
	local pid=$!
	local out
	if ! ready "$port" "$work/srv.log" || ! out=$(timeout 90 $C bash -c "$cli" 2>"$work/cli.err"); then
		echo "FAILED: $cli" >&2
		cat "$work/cli.err" "$work/srv.log" >&2
		kill $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		echo "nan"
		return
	fi
	wait $pid 2>/dev/null || true
	printf '%s\n' "$out"
}

# godir PROVIDER TEST SIZE ITERS [FLAGS...]: an nd perf figure: t_typical
# (usec) for latency tests, bw_average (MB/s, 2^20) for bandwidth tests,
# then the client's CPU time per operation (usec; a round trip for the
# latency tests). FLAGS (-b, -heap) go to both sides; without -b both poll.
godir() {
	local prov=$1 test=$2 size=$3 iters=$4
	shift 4
	local flags="$*" out
	local nd=${NDBIN:-$ND}
	out=$(pair "$nd perf $test --server $flags -provider $prov -p @PORT@" \
		"$nd perf $test $flags -provider $prov -s $size -n $iters --json 127.0.0.1:@PORT@")
	printf '%s\n' "$out" | python3 -c 'import json,sys
try:
    r=json.load(sys.stdin)["results"][0]
    print(r.get("t_typical_usec", r.get("bw_average", "nan")), r.get("client_cpu_usec_per_op", "nan"))
except Exception:
    print("nan nan")'
}

