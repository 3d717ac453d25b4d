#!/usr/bin/env bash
# bench/peers.sh: many connections on one completion queue a side.
#
# Runs ndtest.BenchmarkPeers over tcp, shm and loop (both ends of every
# connection in one process, every endpoint of a side attached to that
# side's one completion queue) and the same shape with plain Go sockets (a
# goroutine reading each connection; bench/peers), at N = 1, 10, 100 and
# 1000 connections, ROUNDS times (default 3), and writes the medians to
# bench/peers-results.txt:
#   empty poll  one GetResults on the shared queue with nothing to find (ns),
#               once the set-up's traffic has settled
#   settle      the ndtest.SettlePolls empty polls of each queue right after
#               the set-up, in all (us): what a provider's rule for arming
#               links after their last message costs once
#   round       one 64-byte Send over every connection, all completions reaped
#               (ms), and its message rate
#   vs own CQ   the round's time over the same round with a queue per endpoint
#   SRQ round   the round with the passive side's Receives on one shared
#               receive queue of min(N, 256) entries (ndtest.PeerSRQEntries)
#               (ms); vs round: its time over the round's; SRQ recv KiB: the
#               Receive buffers it keeps posted
#   vs Go       the round's time over plain Go's
#   ping-pong   8-byte half round trip, one connection after another, once
#               settled (us)
# Usage: bash bench/peers.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for pkg in ./provider/tcp ./provider/shm ./provider/loop ./bench/peers; do
	# A package whose run fails (a set of connections the machine's
	# limits refuse) still gives its other rows; the failure is shown.
	# An empty poll is short: 20000 of them; a round or a round trip: 20.
	for spec in 'EmptyPoll$ 20000x' '(Round|RoundSRQ|RoundOwnCQ|PingPong)$ 20x'; do
		go test -run '^$' -bench "^BenchmarkPeers\$/N=[0-9]+\$/${spec% *}" -benchtime "${spec#* }" -count "$rounds" "$pkg" 2>&1 |
			sed "s|^Benchmark|${pkg##*/} Benchmark|" >>"$out" || echo "bench/peers.sh: $pkg: go test failed; the rows it measured are kept" >&2
	done
done
python3 - "$out" bench/peers-results.txt "$rounds" <<'PY'
import re, statistics, sys, collections
src, dst, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
v = collections.defaultdict(list)
for line in open(src):
    m = re.match(r'(\S+) BenchmarkPeers/N=(\d+)/(\w+)-\d+\s+\d+\s+([\d.]+) ns/op(.*)', line)
    if not m:
        continue
    prov, n, what, ns, rest = m.group(1), int(m.group(2)), m.group(3), float(m.group(4)), m.group(5)
    v[(prov, n, what)].append(ns)
    h = re.search(r'([\d.]+) half-rtt-ns', rest)
    if h:
        v[(prov, n, what + "_half")].append(float(h.group(1)))
    st = re.search(r'([\d.]+) settle-us', rest)
    if st:
        v[(prov, n, what + "_settle")].append(float(st.group(1)))
    rb = re.search(r'([\d.]+) recv-buf-bytes', rest)
    if rb:
        v[(prov, n, what + "_bytes")].append(float(rb.group(1)))
med = lambda k: statistics.median(v[k]) if v.get(k) else float('nan')
names = {"tcp": "godirect tcp", "shm": "godirect shm", "loop": "godirect loop", "peers": "plain Go sockets"}
out = ["many connections on one completion queue a side (bench/peers.sh; both ends in one process)",
       f"each figure: the median of {rounds} runs (20000 empty polls; 20 rounds or round trips)",
       "empty poll: one GetResults on the shared queue with nothing to find, once the set-up's traffic has settled;",
       "settle: the 1024 empty polls of each queue right after the set-up, in all (a provider's rule for arming idle links, paid once)",
       "round: one 64-byte Send over every connection, every completion reaped; vs own CQ: over the round with a queue per endpoint",
       "vs Go: the round's time over plain Go's (a goroutine reading each connection)",
       "SRQ round: the round with the passive Receives on one shared receive queue of min(N, 256) entries; vs round: its time over the round's;",
       "SRQ recv KiB: the Receive buffers that queue keeps posted (a provider without shared receive queues leaves the three empty)",
       "ping-pong: 8-byte half round trip, one connection after another, once settled",
       "",
       f"{'N':>5} {'provider':18} {'empty poll ns':>13} {'settle us':>9} {'round ms':>10} {'msg/s':>11} {'vs own CQ':>9} {'vs Go':>6} {'ping-pong us':>13}"
       f" {'SRQ round ms':>12} {'vs round':>8} {'SRQ recv KiB':>12}"]
for n in (1, 10, 100, 1000):
    gor = med(("peers", n, "Round"))
    for prov in ("tcp", "shm", "loop", "peers"):
        r = med((prov, n, "Round"))
        if r != r:
            continue
        ep = med((prov, n, "EmptyPoll"))
        se = med((prov, n, "EmptyPoll_settle"))
        own = med((prov, n, "RoundOwnCQ"))
        pp = med((prov, n, "PingPong_half"))
        sr = med((prov, n, "RoundSRQ"))
        sb = med((prov, n, "RoundSRQ_bytes"))
        f = lambda x, fmt: "" if x != x else format(x, fmt)
        out.append(f"{n:>5} {names[prov]:18} {f(ep, '.0f'):>13} {f(se, '.0f'):>9} {r/1e6:>10.3f} {n/(r/1e9):>11.0f} "
                   f"{f(r/own if own == own else float('nan'), '.2f'):>9} {f(r/gor, '.2f'):>6} {f(pp/1e3, '.2f'):>13} "
                   f"{f(sr/1e6, '.3f'):>12} {f(sr/r, '.2f'):>8} {f(sb/1024, '.0f'):>12}")
text = "\n".join(out) + "\n"
print(text, end="")
open(dst, "w").write(text)
PY
