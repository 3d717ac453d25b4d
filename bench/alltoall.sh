#!/usr/bin/env bash
# bench/alltoall.sh: MPI's all-to-all exchange between P processes, each in
# a network namespace of its own, all on one Linux bridge, as on P hosts.
#
# For P = 2, 4, 8, 16, 32 it makes P namespaces whose veths join a bridge in
# one more namespace (addresses 192.0.2.1..P/24, a documentation range that
# exists only inside them: nothing is routed anywhere), and runs P ranks of
# bench/alltoall in them for M = 8 B and 64 KiB: over godirect's tcp
# provider (every endpoint of a rank on one completion queue) and with plain
# Go sockets (a goroutine reading each net.Conn). Every rank connects to
# every other, sends M bytes to each per exchange and checks every byte it
# receives; all ranks meet in a barrier before each exchange. An exchange's
# time is the slowest rank's, from its release from the barrier until its
# last send and receive completed; the table shows the median over REPS
# exchanges and bytes/s = P*(P-1)*M / time. Writes bench/alltoall-results.txt.
#
# Every namespace, veth and bridge it made is deleted on exit, whatever
# happens (a failing rank, Ctrl-C); every rank has a timeout.
#
#   sudo bash bench/alltoall.sh    # REPS=11 PS="2 4 8 16 32" SPIN=50us by default
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "alltoall.sh: run as root (it makes network namespaces)" >&2
	exit 1
fi
[ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH
reps=${REPS:-11}
rounds=${ROUNDS:-3} # sweeps, nd and go taking turns in each: minutes of load change fall on both
spin=${SPIN:-50us} # nd: how long an idle rank polls before it waits in Notify
counts=${PS:-"2 4 8 16 32"}
sizes="8 65536"
out=${OUT:-bench/alltoall-results.txt}
rank_timeout=60 # seconds for one rank's whole run, connections included
# Names carry this shell's PID: parallel runs never collide, and interface
# names stay within 15 characters (a2a + 7 digits + h/n + 2 digits).
tag=a2a$$
brns=$tag-br
bridge=${tag}br

work=$(mktemp -d)
namespaces=() # every namespace this run made and has not deleted yet
pids=()       # the ranks running now

cleanup() {
	local status=$?
	trap - EXIT INT TERM HUP
	if [ ${#pids[@]} -gt 0 ]; then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	teardown
	rm -rf "$work"
	# Deleting a namespace deletes the veths and the bridge in it; check
	# that nothing of this run is left.
	local left
	left=$( (ip netns list; ip -o link show) | grep -c "$tag" || true)
	if [ "$left" != 0 ]; then
		echo "alltoall.sh: $left namespaces or links of this run are left:" >&2
		(ip netns list; ip -o link show) | grep "$tag" >&2 || true
		status=1
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

teardown() {
	local ns
	for ns in ${namespaces[@]+"${namespaces[@]}"}; do
		ip netns del "$ns" 2>/dev/null || true
	done
	namespaces=()
}

# setup P: a bridge in namespace $brns, namespaces $tag-0 .. $tag-(P-1),
# rank i's veth ${tag}n$i at 192.0.2.(i+1)/24, its peer ${tag}h$i on the
# bridge.
setup() {
	local p=$1 i ns
	namespaces+=("$brns") # named first: an interrupt in between leaves nothing behind
	ip netns add "$brns"
	ip -n "$brns" link add "$bridge" type bridge
	ip -n "$brns" link set "$bridge" up
	for ((i = 0; i < p; i++)); do
		ns=$tag-$i
		namespaces+=("$ns")
		ip netns add "$ns"
		ip -n "$brns" link add "${tag}h$i" type veth peer name "${tag}n$i" netns "$ns"
		ip -n "$brns" link set "${tag}h$i" master "$bridge" up
		ip -n "$ns" addr add "192.0.2.$((i + 1))/24" dev "${tag}n$i"
		ip -n "$ns" link set "${tag}n$i" up
		ip -n "$ns" link set lo up
	done
}

# run ROUND P M MODE PORT: P ranks, one per namespace; their lines go to
# $work/lines. If one fails, the others are stopped and its error printed.
run() {
	local round=$1 p=$2 m=$3 mode=$4 port=$5 i n failed=0 log=$work/$1-$2-$3-$4
	pids=()
	for ((i = 0; i < p; i++)); do
		timeout -k 5 $((rank_timeout + 10)) ip netns exec "$tag-$i" "$work/alltoall" \
			-mode "$mode" -rank "$i" -p "$p" -m "$m" -reps "$reps" -spin "$spin" -base 192.0.2.1 -port "$port" \
			-timeout "${rank_timeout}s" >"$log.$i.out" 2>"$log.$i.err" &
		pids+=($!)
	done
	for ((n = 0; n < p; n++)); do
		if ! wait -n; then
			if [ $failed = 0 ]; then
				kill -TERM "${pids[@]}" 2>/dev/null || true
			fi
			failed=1
		fi
	done
	pids=()
	if [ $failed = 1 ]; then
		echo "alltoall.sh: P=$p M=$m $mode failed:" >&2
		cat "$log".*.err | head -20 >&2
		echo "alltoall fail mode=$mode p=$p m=$m round=$round" >>"$work/lines"
		return 1
	fi
	sed "s/\$/ round=$round/" "$log".*.out >>"$work/lines"
}

go build -o "$work/alltoall" ./bench/alltoall
: >"$work/lines"
status=0
port=18515
start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
	for p in $counts; do
		setup "$p"
		cc=$(ip netns exec "$tag-0" sysctl -n net.ipv4.tcp_congestion_control)
		for m in $sizes; do
			for mode in nd go; do
				port=$((port + 1))
				run "$round" "$p" "$m" "$mode" "$port" || status=1
				echo "round $round: P=$p M=$m $mode done ($(($(date +%s) - start)) s)" >&2
			done
		done
		teardown
	done
done

python3 - "$work/lines" "$out" "$reps" "$rounds" "$spin" "$cc" "$(nproc)" "$(git rev-parse --short HEAD)" <<'PY'
import statistics, sys, collections
src, dst, reps, rounds, spin, cc, cores, commit = sys.argv[1:]
runs = collections.defaultdict(lambda: collections.defaultdict(dict))  # (p, m, mode) -> round -> rank -> [ns]
failed = collections.defaultdict(set)  # (p, m, mode) -> rounds
for line in open(src):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key, rnd = (int(f["p"]), int(f["m"]), f["mode"]), int(f["round"])
    if line.startswith("alltoall fail"):
        failed[key].add(rnd)
    else:
        runs[key][rnd][int(f["rank"])] = [int(x) for x in f["ns"].split(",")]
def exchanges(key):
    """Each exchange of every round that did not fail: its slowest rank's time."""
    out = []
    for rnd, ranks in runs.get(key, {}).items():
        if rnd in failed[key] or len(ranks) != key[0]:
            continue
        out += [max(ts[k] for ts in ranks.values()) for k in range(min(len(ts) for ts in ranks.values()))]
    return out
def si(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x/scale:.2f} {unit}"
    return f"{x:.0f} "
out = ["MPI's all-to-all between P processes, each in a network namespace of its own on one Linux bridge (bench/alltoall.sh)",
       "every process connected to every other, M bytes to each per exchange, every byte received checked",
       f"nd: godirect's tcp provider, every endpoint of a process on one completion queue; an idle rank polls it for {spin}, then waits in Notify",
       "go: plain Go sockets, a goroutine reading each net.Conn",
       "exchange: the slowest rank's time from its release from the barrier until its last send and receive completed",
       "  (an nd Send completes once the peer confirmed it placed the bytes, docs/tcp-transport.md; a Go write once the kernel took them)",
       f"median and quartiles of {reps} exchanges in each of {rounds} sweeps, nd and go taking turns",
       "bytes/s: P*(P-1)*M / median exchange; nd/go: nd's median over go's (below 1: nd faster)",
       f"host: {cores} cores shared with other work, all P processes on them; TCP congestion control in the namespaces: {cc}; commit {commit}",
       "",
       f"{'P':>3} {'M':>6} {'mode':4} {'exchange us':>11} {'quartiles us':>19} {'bytes/s':>10} {'nd/go':>6}"]
keys = set(runs) | set(failed)
for p, m in sorted({(k[0], k[1]) for k in keys}):
    med = {}
    for mode in ("nd", "go"):
        x = exchanges((p, m, mode))
        med[mode] = statistics.median(x) if x else None
    for mode in ("nd", "go"):
        if (p, m, mode) not in keys:
            continue
        x = exchanges((p, m, mode))
        note = f"  ({len(failed[(p, m, mode)])} of {rounds} sweeps failed)" if failed[(p, m, mode)] else ""
        if not x:
            out.append(f"{p:>3} {m:>6} {mode:4} {'FAILED':>11}{note}")
            continue
        q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
        ratio = f"{med['nd']/med['go']:.2f}" if mode == "nd" and med["go"] else ""
        quart = f"{q[0]/1e3:.1f} - {q[2]/1e3:.1f}"
        out.append(f"{p:>3} {m:>6} {mode:4} {med[mode]/1e3:>11.1f} {quart:>19} {si(p*(p-1)*m/(med[mode]/1e9)):>9}B {ratio:>6}{note}")
text = "\n".join(out) + "\n"
print(text, end="")
open(dst, "w").write(text)
PY
exit $status
