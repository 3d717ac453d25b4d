#!/usr/bin/env bash
# bench/shm.sh: the shared-memory transport between two processes, beside
# single-core copy() over the same sizes, in one run. Writes
# bench/shm-results.txt.
#
#   bench/shm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/nd" ./cmd/nd
OUT=${OUT:-bench/shm-results.txt}
{
	echo "provider/shm between two processes (nd perf with no address starts the server as a second process), -b; windows and Send sources in shm.AllocateMemory memory (nd perf's default over shm)"
	echo "host: $(nproc) cores; MB = 2^20 bytes"
	echo
	echo "Send/Receive half round-trip (nd perf send_lat), usec:"
	for s in 8 4096; do
		"$work/nd" perf send_lat -b -provider shm -s $s -n 20000 | grep -E "^ *[0-9]+ " |
			awk '{printf "  %8s B   median %s   avg %s   99%% %s\n", $1, $5, $6, $8}'
	done
	echo
	echo "RDMA Write and Read bandwidth (nd perf write_bw / read_bw), MB/sec average:"
	for t in write_bw read_bw; do
		for s in 65536 1048576 16777216; do
			n=2000; [ $s = 1048576 ] && n=500; [ $s = 16777216 ] && n=100
			"$work/nd" perf $t -b -provider shm -s $s -n $n | grep -E "^ *[0-9]+ " |
				awk -v t=$t '{printf "  %-9s %9s B   %10.0f MB/sec   (peak %.0f)\n", t, $1, $4, $3}'
		done
	done
	echo
	echo "copy() on one core over the same sizes (go test -bench Copy ./provider/shm), MB/s = 10^6 B/s:"
	go test -run XXX -bench 'Copy' ./provider/shm | grep -E "^BenchmarkCopy" |
		awk '{printf "  %-28s %s %s\n", $1, $5, $6}'
	echo
	echo "allocations per operation on the data path (ndtest.CheckAllocs over shm):"
	go test -count=1 -run 'TestDataPathAllocatesNothing' -v ./provider/shm | grep -E "^(--- |ok)" | sed 's/^/  /'
} | tee "$OUT"
