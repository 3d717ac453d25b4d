#!/usr/bin/env bash
# bench/ndnet.sh: ndnet streams beside plain sockets, between two processes
# on this host, measured side by side in one run: 64-byte ping-pong (half
# round trip) and 1 MiB io.Copy throughput over shm against a Unix domain
# socket and over the tcp provider against loopback TCP (cmd/ndnet-perf),
# and a unary gRPC round trip over shm against gRPC over loopback TCP
# (examples/ndnet's BenchmarkGRPCUnary). Each figure is the median of
# ROUNDS runs, the transports of a row taking turns. Prints the table with
# the issue's targets and writes it to OUT (default bench/ndnet-results.txt).
#
# Environment: ROUNDS (default 5), LAT_ITERS (20000), BW_ITERS (2000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ROUNDS=${ROUNDS:-5}
LAT_ITERS=${LAT_ITERS:-20000}
BW_ITERS=${BW_ITERS:-2000}
OUT=${OUT:-$root/bench/ndnet-results.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ndnet-perf" ./cmd/ndnet-perf
(cd examples/ndnet && go test -c -o "$work/example.test" .)

declare -A v
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
perf() { "$work/ndnet-perf" -transport "$1" -test "$2" -iters "$3" | awk '{print $4}'; }
grpc() { "$work/example.test" -test.run '^$' -test.bench "BenchmarkGRPCUnary/$1\$" -test.benchtime 5000x | awk '/ns\/op/ {print $3/1000}'; }

for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS" >&2
	for t in shm unix tcp net-tcp; do
		v[lat_$t]+=" $(perf $t lat "$LAT_ITERS")"
		v[bw_$t]+=" $(perf $t bw "$BW_ITERS")"
	done
	for t in shm net-tcp; do
		v[grpc_$t]+=" $(grpc $t)"
	done
done
declare -A m
for k in "${!v[@]}"; do m[$k]=$(echo "${v[$k]}" | median); done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a/b}'; }
{
	echo "ndnet streams between two processes, $(date -u +%Y-%m-%d), $(nproc) cores, median of $ROUNDS rounds"
	echo
	printf "%-38s %12s %12s %8s  %s\n" figure ndnet baseline ratio target
	printf "%-38s %9s us %9s us %8s  %s\n" "64 B half round trip, shm vs unix" "${m[lat_shm]}" "${m[lat_unix]}" "$(ratio "${m[lat_shm]}" "${m[lat_unix]}")" "<= 0.5x"
	printf "%-38s %7s GB/s %7s GB/s %8s  %s\n" "1 MiB io.Copy, shm vs unix" "${m[bw_shm]}" "${m[bw_unix]}" "$(ratio "${m[bw_shm]}" "${m[bw_unix]}")" ">= 2x"
	printf "%-38s %9s us %9s us %8s  %s\n" "64 B half round trip, tcp vs net TCP" "${m[lat_tcp]}" "${m[lat_net-tcp]}" "$(ratio "${m[lat_tcp]}" "${m[lat_net-tcp]}")" "<= 1.2x"
	printf "%-38s %7s GB/s %7s GB/s %8s  %s\n" "1 MiB io.Copy, tcp vs net TCP" "${m[bw_tcp]}" "${m[bw_net-tcp]}" "$(ratio "${m[bw_tcp]}" "${m[bw_net-tcp]}")" ">= 1/1.2x"
	printf "%-38s %9s us %9s us %8s  %s\n" "gRPC unary round trip, shm vs TCP" "${m[grpc_shm]}" "${m[grpc_net-tcp]}" "$(ratio "${m[grpc_shm]}" "${m[grpc_net-tcp]}")" "<= 0.6x"
} | tee "$OUT"
