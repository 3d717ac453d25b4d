#!/usr/bin/env bash
# bench/compare.sh: godirect's nd perf beside UCX (ucx_perftest: tag
# matching, and put/get, over TCP and over shared memory), libfabric
# (fi_pingpong, tcp and shm providers) and plain Go sockets, measured in one
# run on this machine, server and client pinned to different cores. Prints
# one table with each figure (the median of ROUNDS measurements) and its
# ratio to the best of UCX and libfabric on the same transport, then the
# project's targets, and writes both to bench/results.txt.
#
#   sudo bench/compare.sh          (installs ucx-utils and libfabric-bin from Debian)
#
# The figures of one row (UCX, libfabric, plain Go and nd perf at one size)
# are measured in turn, ROUNDS times over: a shared host that changes speed
# during the run then moves every tool of a row alike, and the medians
# compare like with like.
#
# Over TCP the bandwidth rows add UCX tag_bw with one TCP connection
# (UCX_MAX_RNDV_LANES=1; by default UCX splits each large message over
# two) and nd perf under the system's congestion control (-congestion
# system; godirect's default within the host is reno).
#
# Environment: ROUNDS (default 5), LAT_ITERS (default 20000), BW_ITERS
# (default 20000 at 64 KiB, a tenth of it at 1 MiB: 1.3 and 2 GB, long
# enough that a short stall of the host does not decide the figure), OUT
# (default bench/results.txt), BASE (a git revision: its nd perf runs
# beside the working tree's in every round, one more row under each
# godirect row, and a before/after table follows the targets; this is how a
# change is measured before and after in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

need=()
command -v ucx_perftest >/dev/null || need+=(ucx-utils)
command -v fi_pingpong >/dev/null || need+=(libfabric-bin)
command -v taskset >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3)
command -v ss >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# build_base, ready, pair and godir: bench/lib.sh.
. "$root/bench/lib.sh"
go build -o "$work/nd" ./cmd/nd
go build -o "$work/gobaseline" ./bench/gobaseline
ND=$work/nd
BASE=${BASE:-}
if [ -n "$BASE" ]; then
	BASE=$(build_base "$BASE" "$work/nd-base")
fi
GB=$work/gobaseline

ROUNDS=${ROUNDS:-5}
LAT_ITERS=${LAT_ITERS:-20000}
BW_ITERS=${BW_ITERS:-20000}
OUT=${OUT:-$root/bench/results.txt}
if [ "$(nproc)" -ge 2 ]; then S="taskset -c 0"; C="taskset -c 1"; else S=""; C=""; fi
port=17100

# ucx TLS TEST SIZE ITERS FIELD [WARMUP]: a ucx_perftest figure; FIELD 2
# is the median latency (usec), 5 the average bandwidth (MB/s, 2^20);
# WARMUP iterations (default ucx_perftest's own, 10000).
ucx() {
	local tls=$1 test=$2 size=$3 iters=$4 field=$5 warm=${6:+-w $6} out
	out=$(pair "UCX_TLS=$tls ucx_perftest -p @PORT@ -t $test -s $size -n $iters $warm -f" \
		"UCX_TLS=$tls ucx_perftest 127.0.0.1 -p @PORT@ -t $test -s $size -n $iters $warm -f")
	printf '%s\n' "$out" | awk -v f="$field" '$1 ~ /^[0-9]+$/ && NF >= 7 {v=$f} END {print (v=="" ? "nan" : v)}'
}

# fab PROVIDER EP SIZE ITERS FIELD: an fi_pingpong figure; FIELD 7 is
# usec per transfer (a half round trip), 6 MB/sec (10^6).
fab() {
	local prov=$1 ep=$2 size=$3 iters=$4 field=$5 out
	out=$(pair "fi_pingpong -p $prov -e $ep -B @PORT@ -S $size -I $iters" \
		"fi_pingpong -p $prov -e $ep -P @PORT@ -S $size -I $iters 127.0.0.1")
	printf '%s\n' "$out" | awk -v f="$field" '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 8 {v=$f} END {print (v=="" ? "nan" : v)}'
}

gopp() { pair "$GB -server -port @PORT@" "$GB -pingpong -size $1 -iters $2 127.0.0.1:@PORT@"; }
gost() { pair "$GB -server -port @PORT@" "$GB -stream -size $1 -iters $2 127.0.0.1:@PORT@"; }

# row KEY=COMMAND...: measures every COMMAND of one row in turn, ROUNDS
# times, and appends each figure to v[KEY] (space-separated), and a second
# word of its output (nd perf's CPU time per operation) to v[KEY_cpu].
# With BASE, an nd perf entry and its twin run back to back, the twin
# second in odd rounds and first in even ones: on this kind of host the
# run that comes second in a pair can be systematically faster or slower.
declare -A v
row() {
	local r kv out all=()
	for kv in "$@"; do
		all+=("$kv")
		# With BASE, every nd perf entry gets a twin run by BASE's build.
		if [ -n "$BASE" ] && [[ ${kv#*=} == godir* ]]; then
			all+=("base_${kv%%=*}=NDBIN=$work/nd-base ${kv#*=}")
		fi
	done
	local i order
	for ((r = 1; r <= ROUNDS; r++)); do
		order=()
		for ((i = 0; i < ${#all[@]}; i++)); do
			# A twin runs before its working-tree entry in every
			# other round: the pair's order does not favour either.
			if ((r % 2 == 0)) && ((i + 1 < ${#all[@]})) && [[ ${all[i + 1]} == base_* ]]; then
				order+=("${all[i + 1]}" "${all[i]}")
				((i++)) || true
				continue
			fi
			order+=("${all[i]}")
		done
		for kv in "${order[@]}"; do
			port=$((port + 1))
			out=($(eval "${kv#*=}"))
			v[${kv%%=*}]+="${out[0]:-nan} "
			[ ${#out[@]} -gt 1 ] && v[${kv%%=*}_cpu]+="${out[1]} "
		done
	done
}

bw1m=$((BW_ITERS / 10))
start=$(date +%s)
echo "measuring: $ROUNDS rounds per row, server on core 0, client on core 1 ..." >&2
for s in 8 4096; do
	echo "  TCP latency, $s B" >&2
	# UCX's put over TCP is emulated (about 15 us here): fewer iterations.
	row "ucx_tcp_lat_$s=ucx tcp tag_lat $s $LAT_ITERS 2" \
		"ucxput_tcp_lat_$s=ucx tcp ucp_put_lat $s $((LAT_ITERS / 10)) 2 1000" \
		"fab_tcp_lat_$s=fab tcp msg $s $LAT_ITERS 7" \
		"go_tcp_lat_$s=gopp $s $LAT_ITERS" \
		"nd_tcp_lat_$s=godir tcp send_lat $s $LAT_ITERS" \
		"ndb_tcp_lat_$s=godir tcp send_lat $s $LAT_ITERS -b" \
		"ndw_tcp_lat_$s=godir tcp write_lat $s $LAT_ITERS"
	echo "  shared-memory latency, $s B" >&2
	row "ucx_shm_lat_$s=ucx posix,cma,self tag_lat $s $LAT_ITERS 2" \
		"ucxput_shm_lat_$s=ucx posix,cma,self ucp_put_lat $s $LAT_ITERS 2" \
		"fab_shm_lat_$s=fab shm rdm $s $LAT_ITERS 7" \
		"nd_shm_lat_$s=godir shm send_lat $s $LAT_ITERS" \
		"ndb_shm_lat_$s=godir shm send_lat $s $LAT_ITERS -b" \
		"ndw_shm_lat_$s=godir shm write_lat $s $LAT_ITERS"
done
for s in 65536 1048576; do
	n=$BW_ITERS
	[ $s = 1048576 ] && n=$bw1m
	echo "  TCP bandwidth, $s B" >&2
	# UCX's put and get over TCP are emulated (about 0.5 GB/s here, a get
	# of 8 B takes a millisecond): a tenth of the iterations, 100 warm-up.
	row "ucx_tcp_bw_$s=ucx tcp tag_bw $s $n 5" \
		"ucxput_tcp_bw_$s=ucx tcp ucp_put_bw $s $((n / 10)) 5 100" \
		"ucxget_tcp_bw_$s=ucx tcp ucp_get $s $((n / 10)) 5 100" \
		"ucx1_tcp_bw_$s=ucx 'tcp UCX_MAX_RNDV_LANES=1' tag_bw $s $n 5" \
		"fab_tcp_bw_$s=fab tcp msg $s $n 6" \
		"go_tcp_bw_$s=gost $s $n" \
		"nd_tcp_bw_$s=godir tcp send_bw $s $n" \
		"ndsys_tcp_bw_$s=godir tcp send_bw $s $n -congestion system" \
		"ndb_tcp_bw_$s=godir tcp send_bw $s $n -b" \
		"ndw_tcp_bw_$s=godir tcp write_bw $s $n" \
		"ndwb_tcp_bw_$s=godir tcp write_bw $s $n -b" \
		"ndr_tcp_bw_$s=godir tcp read_bw $s $n"
	echo "  shared-memory bandwidth, $s B" >&2
	row "ucx_shm_bw_$s=ucx posix,cma,self tag_bw $s $n 5" \
		"ucxput_shm_bw_$s=ucx posix,cma,self ucp_put_bw $s $n 5" \
		"ucxget_shm_bw_$s=ucx posix,cma,self ucp_get $s $n 5" \
		"fab_shm_bw_$s=fab shm rdm $s $n 6" \
		"nd_shm_bw_$s=godir shm send_bw $s $n" \
		"ndb_shm_bw_$s=godir shm send_bw $s $n -b" \
		"ndw_shm_bw_$s=godir shm write_bw $s $n" \
		"ndwb_shm_bw_$s=godir shm write_bw $s $n -b" \
		"ndwh_shm_bw_$s=godir shm write_bw $s $n -b -heap" \
		"ndr_shm_bw_$s=godir shm read_bw $s $n" \
		"ndrb_shm_bw_$s=godir shm read_bw $s $n -b"
done
elapsed=$(($(date +%s) - start))

export V="$(for k in "${!v[@]}"; do echo "$k=${v[$k]}"; done)"
python3 - "$OUT" "$ROUNDS" "$elapsed" "$BASE" <<'PY'
import os, sys, math, statistics
rounds, elapsed, base = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
raw = dict(l.split("=", 1) for l in os.environ["V"].splitlines() if "=" in l)
def samples(k):
    out = []
    for w in raw.get(k, "").split():
        try:
            x = float(w)
        except ValueError:
            continue
        if not math.isnan(x):
            out.append(x)
    return out
MB = 1048576 / 1e9          # MB (2^20) per second in GB/s
FAB = {}                    # fi_pingpong reports MB/sec in 10^6 bytes
for s in ("65536", "1048576"):
    FAB[f"fab_tcp_bw_{s}"] = FAB[f"fab_shm_bw_{s}"] = 1e6 / 1e9
def conv(k):
    return 1.0 if "_lat_" in k else FAB.get(k, MB)
def med(k):
    x = samples(k)
    return statistics.median(x) * conv(k) if x else math.nan
def spread(k):
    x = samples(k)
    if not x:
        return "", 0
    return f"{min(x) * conv(k):.2f}-{max(x) * conv(k):.2f}", len(x)
rows = []
def group(label, unit, lower, peers, ours):
    vals = [(n, k, med(k)) for n, k in peers + ours]
    pv = [x for n, k, x in vals[:len(peers)] if not math.isnan(x)]
    best = (min(pv) if lower else max(pv)) if pv else math.nan
    rows.append((label, unit, vals, best))
LAT, BW = "us, lower is better", "GB/s, higher is better"
for s in ("8", "4096"):
    group(f"TCP {s} B half round-trip", LAT, True,
          [("UCX tag_lat", f"ucx_tcp_lat_{s}"), ("UCX ucp_put_lat", f"ucxput_tcp_lat_{s}"),
           ("libfabric fi_pingpong tcp", f"fab_tcp_lat_{s}")],
          [("plain Go sockets", f"go_tcp_lat_{s}"), ("godirect tcp send_lat", f"nd_tcp_lat_{s}"),
           ("godirect tcp send_lat -b", f"ndb_tcp_lat_{s}"), ("godirect tcp write_lat", f"ndw_tcp_lat_{s}")])
for s, name in (("65536", "64 KiB"), ("1048576", "1 MiB")):
    group(f"TCP bandwidth {name}", BW, False,
          [("UCX tag_bw", f"ucx_tcp_bw_{s}"), ("UCX tag_bw, one lane", f"ucx1_tcp_bw_{s}"),
           ("UCX ucp_put_bw", f"ucxput_tcp_bw_{s}"),
           ("UCX ucp_get", f"ucxget_tcp_bw_{s}"), ("libfabric fi_pingpong tcp", f"fab_tcp_bw_{s}")],
          [("plain Go stream", f"go_tcp_bw_{s}"), ("godirect tcp send_bw", f"nd_tcp_bw_{s}"),
           ("godirect tcp send_bw, system cc", f"ndsys_tcp_bw_{s}"),
           ("godirect tcp send_bw -b", f"ndb_tcp_bw_{s}"), ("godirect tcp write_bw", f"ndw_tcp_bw_{s}"),
           ("godirect tcp write_bw -b", f"ndwb_tcp_bw_{s}"), ("godirect tcp read_bw", f"ndr_tcp_bw_{s}")])
for s in ("8", "4096"):
    group(f"shared memory {s} B half round-trip", LAT, True,
          [("UCX tag_lat", f"ucx_shm_lat_{s}"), ("UCX ucp_put_lat", f"ucxput_shm_lat_{s}"),
           ("libfabric fi_pingpong shm", f"fab_shm_lat_{s}")],
          [("godirect shm send_lat", f"nd_shm_lat_{s}"), ("godirect shm send_lat -b", f"ndb_shm_lat_{s}"),
           ("godirect shm write_lat", f"ndw_shm_lat_{s}")])
for s, name in (("65536", "64 KiB"), ("1048576", "1 MiB")):
    group(f"shared memory bandwidth {name}", BW, False,
          [("UCX tag_bw", f"ucx_shm_bw_{s}"), ("UCX ucp_put_bw", f"ucxput_shm_bw_{s}"),
           ("UCX ucp_get", f"ucxget_shm_bw_{s}"), ("libfabric fi_pingpong shm", f"fab_shm_bw_{s}")],
          [("godirect shm send_bw", f"nd_shm_bw_{s}"), ("godirect shm send_bw -b", f"ndb_shm_bw_{s}"),
           ("godirect shm write_bw", f"ndw_shm_bw_{s}"), ("godirect shm write_bw -b", f"ndwb_shm_bw_{s}"),
           ("godirect shm write_bw -b -heap", f"ndwh_shm_bw_{s}"), ("godirect shm read_bw", f"ndr_shm_bw_{s}"),
           ("godirect shm read_bw -b", f"ndrb_shm_bw_{s}")])

# The project's targets: ours (nd perf's defaults: polling, AllocateMemory
# over shm) against the figure each one names.
targets = []
def target(what, ours, peers, limit, lower):
    o = med(ours)
    pv = [med(k) for k in peers if not math.isnan(med(k))]
    p = (min(pv) if lower else max(pv)) if pv else math.nan
    r = o / p if p and not math.isnan(o) and not math.isnan(p) else math.nan
    ok = (r <= limit) if lower else (r >= limit)
    verdict = "n/a" if math.isnan(r) else ("met" if ok else "MISSED")
    bound = f"{'<=' if lower else '>='} {limit:.1f}x"
    targets.append((what, r, bound, verdict))
target("TCP 8 B latency vs best peer", "nd_tcp_lat_8", ["ucx_tcp_lat_8", "ucxput_tcp_lat_8", "fab_tcp_lat_8"], 1.1, True)
target("TCP 64 KiB bandwidth vs best peer", "nd_tcp_bw_65536",
       ["ucx_tcp_bw_65536", "ucx1_tcp_bw_65536", "ucxput_tcp_bw_65536", "ucxget_tcp_bw_65536", "fab_tcp_bw_65536"], 1.0, False)
target("TCP 1 MiB bandwidth vs best peer", "nd_tcp_bw_1048576",
       ["ucx_tcp_bw_1048576", "ucx1_tcp_bw_1048576", "ucxput_tcp_bw_1048576", "ucxget_tcp_bw_1048576", "fab_tcp_bw_1048576"], 1.0, False)
target("shm 8 B send_lat vs UCX tag_lat", "nd_shm_lat_8", ["ucx_shm_lat_8"], 1.5, True)
target("shm 8 B write_lat vs UCX put_lat", "ndw_shm_lat_8", ["ucxput_shm_lat_8"], 1.5, True)
target("shm 1 MiB write_bw vs UCX put_bw", "ndw_shm_bw_1048576", ["ucxput_shm_bw_1048576"], 0.8, False)
target("shm 1 MiB read_bw vs UCX get", "ndr_shm_bw_1048576", ["ucxget_shm_bw_1048576"], 0.8, False)
target("shm 1 MiB send_bw vs UCX tag_bw", "nd_shm_bw_1048576", ["ucx_shm_bw_1048576"], 1.0, False)

out = []
try:
    cc = open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
except OSError:
    cc = "unknown"
out.append("godirect beside UCX, libfabric and plain Go, measured in one run (bench/compare.sh)")
out.append(f"host: {os.uname().nodename}, {os.cpu_count()} cores; server on core 0, client on core 1; {elapsed} s")
out.append(f"each figure: the median of {rounds} rounds; the tools of a row take turns in every round;")
out.append("range: the lowest and highest of the rounds")
out.append("nd perf polls its completion queue (its default, as perftest) unless the row says -b (it blocks in Notify);")
out.append("over shm its windows are shm.AllocateMemory's memory unless the row says -heap (Go heap memory)")
out.append("warm-up before measuring: ucx_perftest's default (-w 10000), nd perf's default (-w: up to 10000 round trips, 256 MiB of messages)")
out.append("ratio: the figure over the best of UCX and libfabric on the same transport")
out.append(f"TCP congestion control: the system's ({cc}) for UCX, libfabric and plain Go; godirect's default within the")
out.append("     host is reno, and the rows that say 'system cc' run it with -congestion system")
out.append("UCX tag_bw splits each large message over two TCP connections (UCX_MAX_RNDV_LANES=2, its default);")
out.append("     'one lane' is tag_bw with UCX_MAX_RNDV_LANES=1")
out.append("cpu: nd perf's client CPU time per operation (user + system, usec; a round trip for the latency")
out.append("     tests); it spins while it polls, so with polling it is close to the wall time")
out.append("")
out.append(f"{'figure':38} {'tool':32} {'value':>8} {'ratio':>6} {'cpu':>7}  range")
for label, unit, vals, best in rows:
    out.append(f"{label} [{unit}]")
    for n, k, x in vals:
        r = "" if math.isnan(x) or math.isnan(best) or best == 0 else f"{x / best:.2f}"
        val = "n/a" if math.isnan(x) else f"{x:.2f}"
        rng, cnt = spread(k)
        if cnt and cnt < rounds:
            rng += f" ({rounds - cnt} failed)"
        cs = samples(k + "_cpu")
        cpu = f"{statistics.median(cs):.2f}" if cs else ""
        out.append(f"{'':38} {n:32} {val:>8} {r:>6} {cpu:>7}  {rng}")
        if base and ("base_" + k) in raw:
            bk = "base_" + k
            bx = med(bk)
            br = "" if math.isnan(bx) or math.isnan(best) or best == 0 else f"{bx / best:.2f}"
            bval = "n/a" if math.isnan(bx) else f"{bx:.2f}"
            brng, _ = spread(bk)
            bcs = samples(bk + "_cpu")
            bcpu = f"{statistics.median(bcs):.2f}" if bcs else ""
            out.append(f"{'':38} {'  the same at ' + base:32} {bval:>8} {br:>6} {bcpu:>7}  {brng}")
out.append("")
out.append("targets (godirect's defaults against the figure each target names, medians)")
for what, r, bound, verdict in targets:
    rs = "n/a" if math.isnan(r) else f"{r:.3f}x"
    out.append(f"  {what:38} {rs:>7}  target {bound:8} {verdict}")
if base:
    out.append("")
    out.append(f"before and after: {base}'s nd perf and the working tree's, medians of the same rounds")
    out.append(f"  {'figure, tool':70} {base:>9} {'now':>9}  speed-up  paired  faster in")
    out.append("  speed-up: the base's figure over the working tree's for latency, the reverse for bandwidth;")
    out.append("  above 1 means the working tree is faster; paired: the median over the rounds of the same")
    out.append("  ratio within each round (the two builds run back to back), which a change of the host's speed")
    out.append("  between rounds moves less; faster in: the rounds in which the working tree was faster")
    for label, unit, vals, best in rows:
        for n, k, x in vals:
            bk = "base_" + k
            if bk not in raw:
                continue
            bx = med(bk)
            lower = unit == LAT
            ch = "n/a" if math.isnan(x) or math.isnan(bx) or x == 0 or bx == 0 else f"{(bx / x if lower else x / bx):.2f}"
            ratios = []
            for a, b in zip(raw.get(k, "").split(), raw.get(bk, "").split()):
                try:
                    a, b = float(a), float(b)
                except ValueError:
                    continue
                if a > 0 and b > 0:
                    ratios.append(b / a if lower else a / b)
            pr = f"{statistics.median(ratios):.2f}" if ratios else "n/a"
            won = f"{sum(r > 1 for r in ratios)} of {len(ratios)}"
            out.append(f"  {label + ', ' + n:70} {bx:9.2f} {x:9.2f}  {ch:>8}  {pr:>6}  {won}")
text = "\n".join(out) + "\n"
print(text, end="")
open(sys.argv[1], "w").write(text)
PY

# ndnet streams (net.Conn over ND) beside Unix sockets and loopback TCP,
# and gRPC over them: bench/ndnet.sh, written to bench/ndnet-results.txt.
echo "measuring ndnet streams (bench/ndnet.sh) ..." >&2
# (OUT names this script's own file: ndnet.sh must not inherit it.)
env -u OUT ROUNDS=$ROUNDS bash "$root/bench/ndnet.sh"

# Many connections on one completion queue a side, beside plain Go's
# goroutine per connection: bench/peers.sh, written to
# bench/peers-results.txt.
echo "measuring many connections on one completion queue (bench/peers.sh) ..." >&2
bash "$root/bench/peers.sh" "$ROUNDS"
