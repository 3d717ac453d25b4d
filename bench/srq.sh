#!/usr/bin/env bash
# bench/srq.sh: the shared receive queue targets of issue 21, between two
# processes on this host, over tcp and shm.
#
#   1. 1000 connections (bench/srqpeers): the server's Receives of 64 KiB on
#      one shared receive queue of 256 entries ("srq") or 16 per endpoint
#      ("endpoint", 16000 Receives), every Receive with a buffer of its own;
#      the client keeps 256 messages of 64 KiB in flight over all 1000
#      connections (at most one per connection), each acknowledged by the
#      server after it reposted the Receive. Figures: the Receive buffers
#      posted, the server's peak resident memory, and the message rate.
#      Targets: 16 MiB of Receive buffers against 1 GiB; the srq message
#      rate within 1.2x of the endpoint one.
#   2. One connection, 8-byte Send/Receive latency (nd perf send_lat for
#      1 s, polling, the median half round trip) with and without --use_srq,
#      in SRQ_LAT_ROUNDS rounds (default 30): a run's median moves by up to
#      2x from run to run on a shared 2-core host, more than the difference
#      measured, so it takes many short rounds. Target: within 1.1x.
#
# Each pair of runs is an A/B round, the order alternating between rounds;
# ROUNDS rounds (default 3) of the many-connection runs; the medians and
# their ratios (and for the latency the median of the per-round ratios)
# go to bench/srq-results.txt.
# Usage: bash bench/srq.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
conns=${SRQ_CONNS:-1000}
secs=${SRQ_SECONDS:-5}
lat_secs=${SRQ_LAT_SECONDS:-1}
lat_rounds=${SRQ_LAT_ROUNDS:-30}
# Two descriptors a connection on each side over tcp, a few more for shm's
# doorbells: 1000 connections need more than the usual 1024.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < 4 * conns + 64)); then
	echo "bench/srq.sh: ulimit -n is $(ulimit -n); $conns connections need about $((4 * conns + 64))" >&2
	exit 1
fi
tmp=$(mktemp -d)
server_pid=
cleanup() {
	[[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/srqpeers" ./bench/srqpeers
go build -o "$tmp/nd" ./cmd/nd
raw=$tmp/raw.txt
port=18700

# peers PROVIDER MODE: one server and one client run of bench/srqpeers.
peers() {
	local prov=$1 mode=$2 args
	if [[ $mode == srq ]]; then args=(-srq 256); else args=(-srq 0 -recvs 16); fi
	port=$((port + 1))
	"$tmp/srqpeers" -provider "$prov" -server -p "$port" -n "$conns" "${args[@]}" >"$tmp/server.out" 2>&1 &
	server_pid=$!
	# The server prints its port once it listens.
	for _ in $(seq 200); do
		grep -q '^listening' "$tmp/server.out" && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! "$tmp/srqpeers" -provider "$prov" -p "$port" -n "$conns" -window 256 -d "$secs" >>"$raw" 2>"$tmp/client.err"; then
		echo "bench/srq.sh: $prov $mode: client failed: $(cat "$tmp/client.err")" >&2
	fi
	wait "$server_pid" || echo "bench/srq.sh: $prov $mode: server failed: $(cat "$tmp/server.out")" >&2
	server_pid=
	grep '^side=server' "$tmp/server.out" >>"$raw" || true
}

# lat PROVIDER MODE ROUND: one nd perf send_lat run, both sides on this host.
lat() {
	local prov=$1 mode=$2 round=$3 args=()
	[[ $mode == srq ]] && args=(--use_srq)
	local t
	t=$("$tmp/nd" perf send_lat -provider "$prov" -s 8 -D "$lat_secs" -timeout 2m --json "${args[@]}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["t_typical_usec"])') ||
		{ echo "bench/srq.sh: $prov $mode: nd perf send_lat failed" >&2; return; }
	echo "side=lat provider=$prov mode=$mode round=$round t_typical_usec=$t" >>"$raw"
}

for r in $(seq "$rounds"); do
	if ((r % 2)); then order=(srq endpoint); else order=(endpoint srq); fi
	for prov in tcp shm; do
		for mode in "${order[@]}"; do
			echo "round $r: $prov $mode, $conns connections" >&2
			peers "$prov" "$mode"
		done
	done
done
for r in $(seq "$lat_rounds"); do
	if ((r % 2)); then order=(srq endpoint); else order=(endpoint srq); fi
	for prov in tcp shm; do
		echo "latency round $r: $prov" >&2
		for mode in "${order[@]}"; do
			lat "$prov" "$mode" "$r"
		done
	done
done

python3 - "$raw" bench/srq-results.txt "$rounds" "$conns" "$secs" "$lat_secs" "$lat_rounds" <<'PY'
import collections, statistics, sys
src, dst, rounds, conns, secs, lat_secs, lat_rounds = sys.argv[1:]
v = collections.defaultdict(list)
by_round = collections.defaultdict(dict)  # (provider, round) -> mode -> latency
for line in open(src):
    f = dict(kv.split("=", 1) for kv in line.split())
    side, prov = f.get("side"), f.get("provider")
    if side == "server":
        v[(prov, f["mode"], "server")].append((int(f["recv_buf_bytes"]), int(f["max_rss_kib"])))
    elif side == "lat":
        v[(prov, f["mode"], "lat")].append(float(f["t_typical_usec"]))
        by_round[(prov, f["round"])][f["mode"]] = float(f["t_typical_usec"])
# The client does not know the server's mode: each client line pairs with
# the server line that follows it.
rate = collections.defaultdict(list)
order = collections.defaultdict(list)
for line in open(src):
    f = dict(kv.split("=", 1) for kv in line.split())
    if f.get("side") == "client":
        order[f["provider"]].append(["client", float(f["msg_per_s"])])
    elif f.get("side") == "server":
        order[f["provider"]].append(["server", f["mode"]])
for prov, seq in order.items():
    pending = None
    for kind, val in seq:
        if kind == "client":
            pending = val
        elif pending is not None:
            rate[(prov, val)].append(pending)
            pending = None
med = lambda xs: statistics.median(xs) if xs else float("nan")
out = [f"shared receive queue targets (bench/srq.sh): two processes on this host, A/B rounds (order alternating), medians",
       f"many connections: {rounds} rounds; latency: {lat_rounds} rounds",
       f"many connections: {conns} connections, 64 KiB messages, 256 in flight over all of them (one per connection at most),",
       f"  each acknowledged after its Receive is reposted; {secs} s measured per run (bench/srqpeers)",
       "  srq: one shared receive queue of 256 x 64 KiB; endpoint: 16 x 64 KiB per endpoint",
       f"latency: nd perf send_lat -s 8 -D {lat_secs} (polling), a run's median half round trip, with and without --use_srq",
       "", f"{'provider':8} {'mode':9} {'recv buffers MiB':>16} {'peak RSS MiB':>12} {'msg/s':>10} {'8 B lat us':>10}"]
for prov in ("tcp", "shm"):
    for mode in ("srq", "endpoint"):
        sv = v.get((prov, mode, "server"), [])
        buf = med([b for b, _ in sv]) / 2**20
        rss = med([r for _, r in sv]) / 1024
        out.append(f"{prov:8} {mode:9} {buf:>16.1f} {rss:>12.1f} {med(rate[(prov, mode)]):>10.0f} {med(v[(prov, mode, 'lat')]):>10.2f}")
out.append("")
out.append("targets (srq against endpoint): Receive buffers 16 MiB against 1 GiB; message rate within 1.2x; 8 B latency within 1.1x")
for prov in ("tcp", "shm"):
    rs, re_ = med(rate[(prov, "srq")]), med(rate[(prov, "endpoint")])
    ls, le = med(v[(prov, "srq", "lat")]), med(v[(prov, "endpoint", "lat")])
    sv, ev = v.get((prov, "srq", "server"), []), v.get((prov, "endpoint", "server"), [])
    bs = med([b for b, _ in sv]) / 2**20
    be = med([b for b, _ in ev]) / 2**20
    ok = lambda c: "met" if c else "NOT met"
    ratios = [m["srq"] / m["endpoint"] for (p, _), m in by_round.items() if p == prov and len(m) == 2]
    out.append(f"{prov}: buffers {bs:.0f} MiB against {be:.0f} MiB; message rate endpoint/srq {re_/rs:.2f}x ({ok(re_/rs <= 1.2)}); "
               f"latency srq/endpoint {ls/le:.2f}x ({ok(ls/le <= 1.1)}), median of the per-round ratios {med(ratios):.2f}x")
text = "\n".join(out) + "\n"
print(text, end="")
open(dst, "w").write(text)
PY
