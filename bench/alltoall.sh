#!/usr/bin/env bash
# bench/alltoall.sh: MPI's all-to-all between P processes started by
# MPICH's mpiexec over network namespaces standing for hosts, godirect
# against MPICH's own MPI_Alltoall on the same ranks and namespaces.
#
# For P = 2, 4, 8, 16, 32 it makes P/PPN namespaces (PPN ranks each; one
# each for P = 2) whose veths join a bridge in one more namespace
# (addresses 192.0.2.1..N/24, a documentation range that exists only
# inside them: nothing is routed anywhere), and a launcher namespace at
# 192.0.2.254 from which mpiexec (Hydra) starts each host's proxy in its
# namespace. Each job is started by mpiexec -n P and gets its rank from
# PMI; for M = 8 B and 64 KiB per pair it runs:
#   nd:  bench/alltoall -mode nd: a mesh through package mesh, shm between
#        the ranks of a namespace, tcp between namespaces, every byte checked;
#   mpi: bench/alltoall/mpi/alltoall.c (built with mpicc): MPI_Barrier and
#        MPI_Alltoall, every byte checked (Debian's MPICH, ch4:ucx; its
#        shared memory within a node, UCX between nodes, UCX_TLS=tcp,self by
#        default so that UCX does not reach across namespaces through the
#        host's shared memory: set UCX_TLS= to let UCX choose);
#   nd-sends: nd, with each exchange also waiting for its own Sends'
#        completions (provider/tcp reports them once the peer confirmed the
#        data placed); nd leaves them to the exchange after next, which
#        reuses the buffer, as MPI's eager protocol returns before the data
#        is acknowledged;
#   go:  (MODES="nd nd-sends mpi go") bench/alltoall -mode go, plain Go sockets.
# An exchange's time is the slowest rank's, from its release from the
# barrier until its part of the all-to-all completed; the table shows the
# median over REPS exchanges in each of ROUNDS sweeps (the modes taking
# turns). Wire-up is the slowest rank's time from just before mpiexec
# started until it left its first barrier over connected peers (nd: pmi
# Init, mesh.Build and the first barrier round; mpi: MPI_Init and
# MPI_Barrier). Writes bench/alltoall-results.txt.
#
# Every namespace, veth and bridge it made is deleted on exit, whatever
# happens (a failing rank, Ctrl-C); every job has a timeout, and the
# processes of a job that outlive it are counted and killed.
#
#   sudo bash bench/alltoall.sh    # REPS=11 WARMUP=5 ROUNDS=3 PS="2 4 8 16 32" PPN=2 SPIN=auto MODES="nd nd-sends mpi" PIN=rank
#
# Each job first runs WARMUP exchanges that are not counted (every mode
# alike). SPIN=auto has an idle nd rank poll without end while the job's
# ranks fit this machine's cores, as MPI's ranks do, and poll for 50us
# and then wait in Notify when they do not. PIN=rank (the default) runs
# every rank, of every mode alike, on core (its PMI rank mod nproc) with
# taskset, as mpiexec -bind-to core places the ranks of one host; PIN=none
# leaves the placement to the kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "alltoall.sh: run as root (it makes network namespaces)" >&2
	exit 1
fi
[ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH
if ! mpiexec --version 2>/dev/null | grep -q HYDRA || ! command -v mpicc >/dev/null; then
	apt-get update -qq && apt-get install -y -qq mpich libmpich-dev >/dev/null
fi
reps=${REPS:-11}
warmup=${WARMUP:-5}
rounds=${ROUNDS:-3}
spin=${SPIN:-auto}
counts=${PS:-"2 4 8 16 32"}
ppn=${PPN:-2}
modes=${MODES:-"nd nd-sends mpi"}
pin=${PIN:-rank}
case $pin in
rank | none) ;;
*)
	echo "alltoall.sh: PIN=$pin: rank or none" >&2
	exit 2
	;;
esac
ucx_tls=${UCX_TLS-tcp,self}
sizes="8 65536"
out=${OUT:-bench/alltoall-results.txt}
job_timeout=300   # seconds for one job, launch to end
finalize_grace=10 # seconds a job may take to end once every rank printed
# Names carry this shell's PID: parallel runs never collide.
tag=a2a$$
brns=$tag-br
launcher=$tag-l

work=$(mktemp -d)
namespaces=()
job_pid=

cleanup() {
	local status=$?
	trap - EXIT INT TERM HUP
	if [ -n "$job_pid" ]; then
		kill -KILL -- "-$job_pid" 2>/dev/null || true
	fi
	killjob >/dev/null
	teardown
	rm -rf "$work"
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

# killjob kills the processes whose environment holds this run's marker
# and prints how many there were.
killjob() {
	local n=0 p
	for p in /proc/[0-9]*; do
		if grep -qz "^A2A_TAG=$tag\$" "$p/environ" 2>/dev/null; then
			kill -KILL "${p#/proc/}" 2>/dev/null && n=$((n + 1))
		fi
	done
	echo $n
}

# setup H: the bridge, H host namespaces $tag-0.. at 192.0.2.(i+1), the
# launcher's at 192.0.2.254.
setup() {
	local h=$1 i ns
	namespaces+=("$brns")
	ip netns add "$brns"
	ip -n "$brns" link add br0 type bridge
	ip -n "$brns" link set br0 up
	for ((i = 0; i <= h; i++)); do
		ns=$tag-$i addr=192.0.2.$((i + 1))
		if [ "$i" = "$h" ]; then
			ns=$launcher addr=192.0.2.254
		fi
		namespaces+=("$ns")
		ip netns add "$ns"
		ip -n "$brns" link add "v$i" type veth peer name eth0 netns "$ns"
		ip -n "$brns" link set "v$i" master br0 up
		ip -n "$ns" addr add "$addr/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" link set lo up
	done
}

# Hydra calls its launcher as "EXEC -x HOST COMMAND": HOST is a namespace.
cat >"$work/netns-launcher" <<'SH'
#!/bin/sh
[ "$1" = -x ] && shift
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
SH
chmod +x "$work/netns-launcher"
# PIN=rank: every rank of every mode runs on core PMI_RANK mod nproc.
cat >"$work/pin" <<'SH'
#!/bin/sh
exec taskset -c $((${PMI_RANK:?} % $(nproc))) "$@"
SH
chmod +x "$work/pin"

# run ROUND P H M MODE: one job; its lines go to $work/lines.
run() {
	local round=$1 p=$2 h=$3 m=$4 mode=$5 hosts="" i per log=$work/$1-$2-$4-$5 status=0
	per=$((p / h))
	for ((i = 0; i < h; i++)); do
		hosts+="${hosts:+,}$tag-$i:$per"
	done
	local jobspin=$spin
	if [ "$jobspin" = auto ]; then
		# An idle rank polls without end, as MPI's do, while the job's
		# ranks fit this machine's cores; else it polls 50 us and sleeps.
		jobspin=50us
		[ "$p" -le "$(nproc)" ] && jobspin=-1us
	fi
	local cmd=("$work/alltoall" -mode "$mode" -m "$m" -reps "$((warmup + reps))" -spin "$jobspin" -timeout "$((job_timeout - 10))s")
	if [ "$mode" = mpi ]; then
		cmd=("$work/alltoall-mpi" -m "$m" -reps "$((warmup + reps))")
	fi
	if [ "$pin" = rank ]; then
		cmd=("$work/pin" "${cmd[@]}")
	fi
	set -m
	A2A_TAG=$tag UCX_TLS=$ucx_tls A2A_LAUNCH_NS=$(date +%s%N) \
		timeout -k 5 "$job_timeout" ip netns exec "$launcher" mpiexec \
		-launcher ssh -launcher-exec "$work/netns-launcher" -localhost 192.0.2.254 \
		-hosts "$hosts" -n "$p" "${cmd[@]}" >"$log.out" 2>"$log.err" &
	job_pid=$!
	set +m
	# A job whose every rank printed its line is given finalize_grace
	# seconds to end; past them it is killed and counted (MPICH over
	# UCX_TLS=tcp,self sometimes hangs in MPI_Finalize here).
	local printed_at=
	while kill -0 "$job_pid" 2>/dev/null; do
		if [ -z "$printed_at" ] && [ "$(grep -c "^alltoall mode=$mode " "$log.out" 2>/dev/null || true)" = "$p" ]; then
			printed_at=$(date +%s)
		fi
		if [ -n "$printed_at" ] && [ $(($(date +%s) - printed_at)) -ge "$finalize_grace" ]; then
			kill -KILL -- "-$job_pid" 2>/dev/null || true
			echo "alltoall hung mode=$mode p=$p m=$m round=$round" >>"$work/lines"
			echo "alltoall.sh: P=$p M=$m $mode: every rank printed its line, then the job did not end in ${finalize_grace} s: killed" >&2
			break
		fi
		sleep 0.2
	done
	wait "$job_pid" || status=$?
	job_pid=
	if [ -n "$printed_at" ]; then
		status=0
	fi
	local orphans
	orphans=$(killjob)
	if [ "$orphans" != 0 ] && [ -z "$printed_at" ]; then
		echo "alltoall.sh: P=$p M=$m $mode: $orphans processes outlived the job" >&2
		status=1
	fi
	local got
	got=$(grep -c "^alltoall mode=$mode " "$log.out" || true)
	if [ "$status" != 0 ] || [ "$got" != "$p" ]; then
		echo "alltoall.sh: P=$p M=$m $mode failed (exit $status, $got of $p lines):" >&2
		head -20 "$log.err" >&2
		echo "alltoall fail mode=$mode p=$p m=$m round=$round" >>"$work/lines"
		return 1
	fi
	grep "^alltoall mode=$mode " "$log.out" | sed "s/\$/ round=$round/" >>"$work/lines"
}

built=$(git rev-parse --short HEAD) # the results name the commit the binaries came from
go build -o "$work/alltoall" ./bench/alltoall
mpicc -O2 -o "$work/alltoall-mpi" bench/alltoall/mpi/alltoall.c
: >"$work/lines"
status=0
start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
	for p in $counts; do
		h=$((p / ppn))
		if [ "$h" -lt 2 ]; then
			h=2
		fi
		if [ "$h" -gt "$p" ]; then
			h=$p
		fi
		setup "$h"
		for m in $sizes; do
			for mode in $modes; do
				run "$round" "$p" "$h" "$m" "$mode" || status=1
				echo "round $round: P=$p ($h hosts) M=$m $mode done ($(($(date +%s) - start)) s)" >&2
			done
		done
		teardown
	done
done

python3 - "$work/lines" "$out" "$reps" "$rounds" "$spin" "$(nproc)" "$warmup" "$built" "$ppn" "$ucx_tls" "$(mpiexec --version | awk '/Version:/ {print $2; exit}')" "$modes" "$pin" <<'PY'
import statistics, sys, collections
src, dst, reps, rounds, spin, cores, warmup, commit, ppn, ucx_tls, mpich, modes, pin = sys.argv[1:]
modes = modes.split()
runs = collections.defaultdict(lambda: collections.defaultdict(dict))  # (p, m, mode) -> round -> rank -> ([ns], wireup)
failed = collections.defaultdict(set)
hung = collections.defaultdict(set)  # jobs whose every rank printed, then did not end: killed
for line in open(src):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key, rnd = (int(f["p"]), int(f["m"]), f["mode"]), int(f["round"])
    if line.startswith("alltoall fail"):
        failed[key].add(rnd)
    elif line.startswith("alltoall hung"):
        hung[key].add(rnd)
    else:
        runs[key][rnd][int(f["rank"])] = ([int(x) for x in f["ns"].split(",")][int(warmup):], int(f["wireup_ns"]))
def exchanges(key):
    out = []
    for rnd, ranks in runs.get(key, {}).items():
        if rnd in failed[key] or len(ranks) != key[0]:
            continue
        out += [max(r[0][k] for r in ranks.values()) for k in range(min(len(r[0]) for r in ranks.values()))]
    return out
def wireups(p, mode):
    out = []
    for key in runs:
        if key[0] == p and key[2] == mode:
            for rnd, ranks in runs[key].items():
                if rnd not in failed[key] and len(ranks) == p and min(r[1] for r in ranks.values()) >= 0:
                    out.append(max(r[1] for r in ranks.values()))
    return out
def hosts(p):
    h = max(2, p // int(ppn))
    return min(h, p)
out = ["MPI's all-to-all between P processes started by MPICH's mpiexec over network namespaces standing for hosts (bench/alltoall.sh)",
       f"placement: {ppn} ranks per namespace (1 for P = 2), every rank of a job started by mpiexec -n P (Hydra {mpich}), its rank from PMI;",
       ("  every rank of every mode bound to core (its rank mod the host's cores) with taskset" if pin == "rank" else "  the ranks placed on cores by the kernel"),
       "nd: bench/alltoall -mode nd: package mesh, shm between the ranks of a namespace, tcp between namespaces, every endpoint",
       f"    of a provider on one completion queue, a dissemination barrier; an idle rank polls "
       + ("without end while the job's ranks fit the host's cores (as MPI's ranks do), else for 50us, then waits in Notify;" if spin == "auto" else f"for {spin}, then waits in Notify;"),
       "    each exchange sends from one of two buffers and ends when its data arrived; a Send is silent (ND_OP_FLAG_SILENT_SUCCESS)",
       "    when a control Send to the same peer follows in the next barrier, whose completion then frees the buffer, else",
       "    its completion is waited for before the exchange after next reuses the buffer (MPI's eager sends return before",
       "    the peer acknowledged the data and report nothing)",
       "nd-sends: nd, each exchange also waiting for its own Sends' completions (tcp: the peer confirmed the data placed)",
       f"mpi: bench/alltoall/mpi/alltoall.c, MPI_Barrier then MPI_Alltoall (Debian's MPICH {mpich}, ch4:ucx, UCX_TLS={ucx_tls or '(UCX chooses)'})",
       "exchange: the slowest rank's time from its release from the barrier until its part of the all-to-all completed; every byte checked",
       f"median and quartiles of {reps} exchanges in each of {rounds} sweeps (after {warmup} exchanges of each job not counted, in every mode),",
       "  the modes taking turns; nd/mpi: nd's median over mpi's (at most 1.00: target met)",
       "wire-up: the slowest rank's time from just before mpiexec started until it left its first barrier over connected peers",
       "  (nd: pmi.Init, mesh.Build, the first barrier round; mpi: MPI_Init, MPI_Barrier); median of the sweeps' runs of both sizes",
       f"host: {cores} cores shared with other work, all P processes on them; commit {commit}",
       "",
       f"{'P':>3} {'hosts':>5} {'M':>6} {'mode':8} {'exchange us':>11} {'quartiles us':>21} {'nd/mpi':>7}"]
keys = set(runs) | set(failed)
for p, m in sorted({(k[0], k[1]) for k in keys}):
    med = {}
    for mode in modes:
        x = exchanges((p, m, mode))
        med[mode] = statistics.median(x) if x else None
    for mode in modes:
        if (p, m, mode) not in keys:
            continue
        x = exchanges((p, m, mode))
        note = f"  ({len(failed[(p, m, mode)])} of {rounds} sweeps failed)" if failed[(p, m, mode)] else ""
        if hung[(p, m, mode)]:
            note += f"  ({len(hung[(p, m, mode)])} of {rounds} jobs hung after printing, killed)"
        if not x:
            out.append(f"{p:>3} {hosts(p):>5} {m:>6} {mode:8} {'FAILED':>11}{note}")
            continue
        q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
        ratio = ""
        if mode == "nd" and med.get("mpi"):
            r = med["nd"] / med["mpi"]
            ratio = f"{r:.2f}" + (" met" if r <= 1 else " MISSED")
        quart = f"{q[0]/1e3:.1f} - {q[2]/1e3:.1f}"
        out.append(f"{p:>3} {hosts(p):>5} {m:>6} {mode:8} {med[mode]/1e3:>11.1f} {quart:>21} {ratio:>7}{note}")
out += ["", f"{'P':>3} {'hosts':>5} " + " ".join(f"{mode + ' wire-up ms':>16}" for mode in modes) + f" {'nd/mpi':>7}"]
for p in sorted({k[0] for k in keys}):
    w = {mode: wireups(p, mode) for mode in modes}
    cells = " ".join(f"{statistics.median(w[mode])/1e6:>16.1f}" if w[mode] else f"{'-':>16}" for mode in modes)
    ratio = ""
    if w.get("nd") and w.get("mpi"):
        r = statistics.median(w["nd"]) / statistics.median(w["mpi"])
        ratio = f"{r:.2f}" + (" met" if r <= 1 else " MISSED")
    out.append(f"{p:>3} {hosts(p):>5} {cells} {ratio:>7}")
text = "\n".join(out) + "\n"
print(text, end="")
open(dst, "w").write(text)
PY
exit $status
