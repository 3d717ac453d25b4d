#!/usr/bin/env bash
# bench/compare.sh: godirect's nd perf beside UCX (ucx_perftest), libfabric
# (fi_pingpong) and plain Go sockets, measured in one run on this machine,
# server and client pinned to different cores. Prints one table with each
# figure and its ratio to the best of UCX and libfabric on the same
# transport, and writes it to bench/results.txt.
#
#   sudo bench/compare.sh          (installs ucx-utils and libfabric-bin from Debian)
#
# Environment: LAT_ITERS (default 20000), BW_ITERS (default 2000 at 64 KiB,
# a quarter of it at 1 MiB), OUT (default bench/results.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

need=()
command -v ucx_perftest >/dev/null || need+=(ucx-utils)
command -v fi_pingpong >/dev/null || need+=(libfabric-bin)
command -v taskset >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/nd" ./cmd/nd
go build -o "$work/gobaseline" ./bench/gobaseline
ND=$work/nd
GB=$work/gobaseline

LAT_ITERS=${LAT_ITERS:-20000}
BW_ITERS=${BW_ITERS:-2000}
OUT=${OUT:-$root/bench/results.txt}
if [ "$(nproc)" -ge 2 ]; then S="taskset -c 0"; C="taskset -c 1"; else S=""; C=""; fi
port=17100

# pair SERVER-CMD CLIENT-CMD: runs the server in the background, the client
# in the foreground (both bounded), prints the client's stdout.
pair() {
	port=$((port + 1))
	local srv=${1//@PORT@/$port} cli=${2//@PORT@/$port}
	timeout 90 $S bash -c "$srv" >"$work/srv.log" 2>&1 &
	local pid=$!
	local out
	if ! out=$(timeout 90 $C bash -c "$cli" 2>"$work/cli.err"); then
		echo "FAILED: $cli" >&2
		cat "$work/cli.err" "$work/srv.log" >&2
		wait $pid 2>/dev/null || true
		echo "nan"
		return
	fi
	wait $pid 2>/dev/null || true
	printf '%s\n' "$out"
}

# ucx TLS TEST SIZE ITERS FIELD: a ucx_perftest figure; FIELD 2 is the
# median latency (usec), 5 the average bandwidth (MB/s, 2^20).
ucx() {
	local tls=$1 test=$2 size=$3 iters=$4 field=$5
	pair "UCX_TLS=$tls ucx_perftest -p @PORT@ -t $test -s $size -n $iters -f" \
		"sleep 0.5; UCX_TLS=$tls ucx_perftest 127.0.0.1 -p @PORT@ -t $test -s $size -n $iters -f" |
		awk -v f="$field" '$1 ~ /^[0-9]+$/ && NF >= 7 {v=$f} END {print (v=="" ? "nan" : v)}'
}

# fab PROVIDER EP SIZE ITERS FIELD: an fi_pingpong figure; FIELD 7 is
# usec per transfer (a half round trip), 6 MB/sec (10^6).
fab() {
	local prov=$1 ep=$2 size=$3 iters=$4 field=$5
	pair "fi_pingpong -p $prov -e $ep -B @PORT@ -S $size -I $iters" \
		"sleep 0.5; fi_pingpong -p $prov -e $ep -P @PORT@ -S $size -I $iters 127.0.0.1" |
		awk -v f="$field" '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 8 {v=$f} END {print (v=="" ? "nan" : v)}'
}

# godir PROVIDER TEST SIZE ITERS [FLAGS...]: an nd perf figure: t_typical
# (usec) for latency tests, bw_average (MB/s, 2^20) for bandwidth tests.
# FLAGS (-b, -heap) go to both sides; without -b both poll.
godir() {
	local prov=$1 test=$2 size=$3 iters=$4
	shift 4
	local flags="$*"
	pair "$ND perf $test --server $flags -provider $prov -p @PORT@" \
		"sleep 0.5; $ND perf $test $flags -provider $prov -s $size -n $iters --json 127.0.0.1:@PORT@" |
		python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["results"][0]
print(r.get("t_typical_usec", r.get("bw_average", "nan")))'
}

gopp() { pair "$GB -server -port @PORT@" "$GB -pingpong -size $1 -iters $2 127.0.0.1:@PORT@"; }
gost() { pair "$GB -server -port @PORT@" "$GB -stream -size $1 -iters $2 127.0.0.1:@PORT@"; }

bw1m=$((BW_ITERS / 4))
declare -A v
echo "measuring (server on core 0, client on core 1) ..." >&2
for s in 8 4096; do
	v[ucx_tcp_lat_$s]=$(ucx tcp tag_lat $s "$LAT_ITERS" 2)
	v[fab_tcp_lat_$s]=$(fab tcp msg $s "$LAT_ITERS" 7)
	v[go_tcp_lat_$s]=$(gopp $s "$LAT_ITERS")
	v[nd_tcp_lat_$s]=$(godir tcp send_lat $s "$LAT_ITERS")
	v[ndb_tcp_lat_$s]=$(godir tcp send_lat $s "$LAT_ITERS" -b)
	v[ucx_shm_lat_$s]=$(ucx posix,cma,self tag_lat $s "$LAT_ITERS" 2)
	v[ucxput_shm_lat_$s]=$(ucx posix,cma,self ucp_put_lat $s "$LAT_ITERS" 2)
	v[fab_shm_lat_$s]=$(fab shm rdm $s "$LAT_ITERS" 7)
	v[nd_shm_lat_$s]=$(godir shm send_lat $s "$LAT_ITERS")
	v[ndb_shm_lat_$s]=$(godir shm send_lat $s "$LAT_ITERS" -b)
	v[ndw_shm_lat_$s]=$(godir shm write_lat $s "$LAT_ITERS")
done
for s in 65536 1048576; do
	n=$BW_ITERS; [ $s = 1048576 ] && n=$bw1m
	v[ucx_tcp_bw_$s]=$(ucx tcp tag_bw $s $n 5)
	v[fab_tcp_bw_$s]=$(fab tcp msg $s $n 6)
	v[go_tcp_bw_$s]=$(gost $s $n)
	v[nd_tcp_bw_$s]=$(godir tcp send_bw $s $n)
	v[ndb_tcp_bw_$s]=$(godir tcp send_bw $s $n -b)
	v[ndw_tcp_bw_$s]=$(godir tcp write_bw $s $n)
	v[ndwb_tcp_bw_$s]=$(godir tcp write_bw $s $n -b)
	v[ucx_shm_bw_$s]=$(ucx posix,cma,self tag_bw $s $n 5)
	v[ucxput_shm_bw_$s]=$(ucx posix,cma,self ucp_put_bw $s $n 5)
	v[ucxget_shm_bw_$s]=$(ucx posix,cma,self ucp_get $s $n 5)
	v[fab_shm_bw_$s]=$(fab shm rdm $s $n 6)
	v[nd_shm_bw_$s]=$(godir shm send_bw $s $n)
	v[ndb_shm_bw_$s]=$(godir shm send_bw $s $n -b)
	v[ndw_shm_bw_$s]=$(godir shm write_bw $s $n)
	v[ndwb_shm_bw_$s]=$(godir shm write_bw $s $n -b)
	v[ndwh_shm_bw_$s]=$(godir shm write_bw $s $n -b -heap)
	v[ndr_shm_bw_$s]=$(godir shm read_bw $s $n)
	v[ndrb_shm_bw_$s]=$(godir shm read_bw $s $n -b)
done

export V="$(for k in "${!v[@]}"; do echo "$k=${v[$k]}"; done)"
python3 - "$OUT" <<'PY'
import os, sys, math
v = dict(l.split("=", 1) for l in os.environ["V"].splitlines() if "=" in l)
def num(k):
    try:
        x = float(v.get(k, "nan"))
        return x
    except ValueError:
        return math.nan
MB = 1048576 / 1e9          # MB (2^20) per second in GB/s
rows = []
def lat(label, tr, size, peers, ours):
    vals = [(n, num(k)) for n, k in peers + ours]
    best = min([x for n, x in vals[:len(peers)] if not math.isnan(x)], default=math.nan)
    rows.append((label, "us (lower is better)", vals, best, True, len(peers)))
def bw(label, peers, ours, conv):
    vals = [(n, num(k) * conv.get(k, MB)) for n, k in peers + ours]
    best = max([x for n, x in vals[:len(peers)] if not math.isnan(x)], default=math.nan)
    rows.append((label, "GB/s (higher is better)", vals, best, False, len(peers)))
FAB = {}  # fi_pingpong reports MB/sec in 10^6 bytes
for s in ("65536", "1048576"):
    FAB[f"fab_tcp_bw_{s}"] = FAB[f"fab_shm_bw_{s}"] = 1e6 / 1e9
for s in ("8", "4096"):
    lat(f"TCP {s} B half round-trip",  "tcp", s,
        [("UCX tag_lat", f"ucx_tcp_lat_{s}"), ("libfabric fi_pingpong tcp", f"fab_tcp_lat_{s}")],
        [("plain Go sockets", f"go_tcp_lat_{s}"), ("godirect tcp send_lat", f"nd_tcp_lat_{s}"), ("godirect tcp send_lat -b", f"ndb_tcp_lat_{s}")])
for s, name in (("65536", "64 KiB"), ("1048576", "1 MiB")):
    bw(f"TCP bandwidth {name}",
       [("UCX tag_bw", f"ucx_tcp_bw_{s}"), ("libfabric fi_pingpong tcp", f"fab_tcp_bw_{s}")],
       [("plain Go stream", f"go_tcp_bw_{s}"), ("godirect tcp send_bw", f"nd_tcp_bw_{s}"), ("godirect tcp send_bw -b", f"ndb_tcp_bw_{s}"),
        ("godirect tcp write_bw", f"ndw_tcp_bw_{s}"), ("godirect tcp write_bw -b", f"ndwb_tcp_bw_{s}")], FAB)
for s in ("8", "4096"):
    lat(f"shared memory {s} B half round-trip", "shm", s,
        [("UCX tag_lat", f"ucx_shm_lat_{s}"), ("UCX ucp_put_lat", f"ucxput_shm_lat_{s}"), ("libfabric fi_pingpong shm", f"fab_shm_lat_{s}")],
        [("godirect shm send_lat", f"nd_shm_lat_{s}"), ("godirect shm send_lat -b", f"ndb_shm_lat_{s}"), ("godirect shm write_lat", f"ndw_shm_lat_{s}")])
for s, name in (("65536", "64 KiB"), ("1048576", "1 MiB")):
    bw(f"shared memory bandwidth {name}",
       [("UCX tag_bw", f"ucx_shm_bw_{s}"), ("UCX ucp_put_bw", f"ucxput_shm_bw_{s}"), ("UCX ucp_get", f"ucxget_shm_bw_{s}"), ("libfabric fi_pingpong shm", f"fab_shm_bw_{s}")],
       [("godirect shm send_bw", f"nd_shm_bw_{s}"), ("godirect shm send_bw -b", f"ndb_shm_bw_{s}"),
        ("godirect shm write_bw", f"ndw_shm_bw_{s}"), ("godirect shm write_bw -b", f"ndwb_shm_bw_{s}"), ("godirect shm write_bw -b -heap", f"ndwh_shm_bw_{s}"),
        ("godirect shm read_bw", f"ndr_shm_bw_{s}"), ("godirect shm read_bw -b", f"ndrb_shm_bw_{s}")], FAB)
out = []
out.append("godirect beside UCX, libfabric and plain Go, measured in one run (bench/compare.sh)")
out.append(f"host: {os.uname().nodename}, {os.cpu_count()} cores; server on core 0, client on core 1")
out.append("nd perf polls its completion queue (its default, as perftest) unless the row says -b (it blocks in Notify);")
out.append("over shm its windows are shm.AllocateMemory's memory unless the row says -heap (Go heap memory)")
out.append("warm-up before measuring: ucx_perftest's default (-w 10000), nd perf's default (-w: up to 10000 round trips, 256 MiB of messages)")
out.append("ratio: the figure over the best of UCX and libfabric on the same transport")
out.append("")
out.append(f"{'figure':38} {'tool':30} {'value':>10} {'ratio':>7}")
for label, unit, vals, best, lower, npeers in rows:
    out.append(f"{label} [{unit}]")
    for i, (n, x) in enumerate(vals):
        r = "" if math.isnan(x) or math.isnan(best) or best == 0 else f"{x / best:.2f}"
        val = "n/a" if math.isnan(x) else (f"{x:.2f}")
        out.append(f"{'':38} {n:30} {val:>10} {r:>7}")
text = "\n".join(out) + "\n"
print(text, end="")
open(sys.argv[1], "w").write(text)
PY
