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

# run P M MODE PORT: P ranks, one per namespace; their lines go to
# $work/lines. If one fails, the others are stopped and its error printed.
run() {
	local p=$1 m=$2 mode=$3 port=$4 i n failed=0 log=$work/$1-$2-$3
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
		echo "alltoall fail mode=$mode p=$p m=$m" >>"$work/lines"
		return 1
	fi
	cat "$log".*.out >>"$work/lines"
}

go build -o "$work/alltoall" ./bench/alltoall
: >"$work/lines"
status=0
port=18515
start=$(date +%s)
for p in $counts; do
	setup "$p"
	cc=$(ip netns exec "$tag-0" sysctl -n net.ipv4.tcp_congestion_control)
	for m in $sizes; do
		for mode in nd go; do
			port=$((port + 1))
			run "$p" "$m" "$mode" "$port" || status=1
			echo "P=$p M=$m $mode done ($(($(date +%s) - start)) s)" >&2
		done
	done
	teardown
done

python3 - "$work/lines" "$out" "$reps" "$spin" "$cc" "$(nproc)" "$(git rev-parse --short HEAD)" <<'PY'
import re, statistics, sys, collections
src, dst, reps, spin, cc, cores, commit = sys.argv[1:]
runs = collections.defaultdict(dict)  # (p, m, mode) -> rank -> [ns]
failed = set()
for line in open(src):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key = (int(f["p"]), int(f["m"]), f["mode"])
    if line.startswith("alltoall fail"):
        failed.add(key)
        continue
    runs[key][int(f["rank"])] = [int(x) for x in f["ns"].split(",")]
def si(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x/scale:.2f} {unit}"
    return f"{x:.0f} "
def exchange_ns(key):
    ranks = runs.get(key)
    if key in failed or not ranks or len(ranks) != key[0]:
        return None
    # One exchange takes as long as its slowest rank.
    per_rep = [max(ts[k] for ts in ranks.values()) for k in range(min(len(ts) for ts in ranks.values()))]
    return statistics.median(per_rep)
out = ["MPI's all-to-all between P processes, each in a network namespace of its own on one Linux bridge (bench/alltoall.sh)",
       "every process connected to every other, M bytes to each per exchange, every byte received checked",
       f"nd: godirect's tcp provider, every endpoint of a process on one completion queue; an idle rank polls it for {spin}, then waits in Notify",
       "go: plain Go sockets, a goroutine reading each net.Conn",
       f"exchange: the slowest rank's time from its release from the barrier until its last send and receive completed; median of {reps} exchanges",
       "  (an nd Send completes once the peer confirmed it placed the bytes, docs/tcp-transport.md; a Go write once the kernel took them)",
       "bytes/s: P*(P-1)*M / exchange; nd/go: nd's exchange time over go's (below 1: nd faster)",
       f"host: {cores} cores shared with other work, all P processes on them; TCP congestion control in the namespaces: {cc}; commit {commit}",
       "",
       f"{'P':>3} {'M':>6} {'mode':4} {'exchange':>12} {'bytes/s':>10} {'nd/go':>6}"]
for p, m in sorted({(k[0], k[1]) for k in list(runs) + list(failed)}):
    t = {mode: exchange_ns((p, m, mode)) for mode in ("nd", "go")}
    for mode in ("nd", "go"):
        if (p, m, mode) not in runs and (p, m, mode) not in failed:
            continue
        x = t[mode]
        if x is None:
            out.append(f"{p:>3} {m:>6} {mode:4} {'FAILED':>12}")
            continue
        ratio = f"{t['nd']/t['go']:.2f}" if mode == "nd" and t["go"] else ""
        out.append(f"{p:>3} {m:>6} {mode:4} {x/1e3:>9.1f} us {si(p*(p-1)*m/(x/1e9)):>9}B {ratio:>6}")
text = "\n".join(out) + "\n"
print(text, end="")
open(dst, "w").write(text)
PY
exit $status
