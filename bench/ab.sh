#!/usr/bin/env bash
# bench/ab.sh: one nd perf figure of the working tree's build against the
# same figure of BASE's build, over many rounds, for a change whose effect
# on that figure is smaller than the host's noise between runs.
# bench/compare.sh measures every row a few times; this measures one row
# often. Each round runs both builds back to back, the working tree first
# in odd rounds and BASE first in even ones, server and client pinned to
# different cores as compare.sh pins them. It prints every round, then
# each build's median and range, the paired speed-up (the median over the
# rounds of the within-round ratio: the base's figure over the working
# tree's for latency, the reverse for bandwidth; above 1 means the working
# tree is faster) and the rounds in which the working tree was faster.
#
#   BASE=b2752ee ROUNDS=20 bash bench/ab.sh tcp read_bw 1048576
#   BASE=HEAD~3 bash bench/ab.sh shm send_lat 8 20000 -b
#
# Arguments: PROVIDER TEST SIZE [ITERS [FLAGS...]]; ITERS defaults to 20000
# (a tenth of it for bandwidth tests from 1 MiB up). Environment: BASE (a
# git revision, required), ROUNDS (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ $# -lt 3 ] || [ -z "${BASE:-}" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
prov=$1 test=$2 size=$3
iters=${4:-20000}
if [ $# -lt 4 ] && [[ $test == *_bw ]] && [ "$size" -ge 1048576 ]; then
	iters=2000
fi
shift $(($# < 4 ? $# : 4))
ROUNDS=${ROUNDS:-20}

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# build_base, ready, pair and godir: bench/lib.sh.
. "$root/bench/lib.sh"
go build -o "$work/nd-head" ./cmd/nd
BASE=$(build_base "$BASE" "$work/nd-base")
ND=$work/nd-head
if [ "$(nproc)" -ge 2 ]; then S="taskset -c 0"; C="taskset -c 1"; else S=""; C=""; fi
port=17600

echo "nd perf $test over $prov, $size B, $iters iterations${*:+ ($*)}: the working tree against $BASE, $ROUNDS rounds"
rounds=()
for ((r = 1; r <= ROUNDS; r++)); do
	order="head base"
	if ((r % 2 == 0)); then order="base head"; fi
	declare -A fig=()
	for b in $order; do
		port=$((port + 1))
		out=($(NDBIN=$work/nd-$b godir "$prov" "$test" "$size" "$iters" "$@"))
		fig[$b]=${out[0]:-nan}
	done
	printf 'round %d: working tree %.2f, %s %.2f\n' "$r" "${fig[head]}" "$BASE" "${fig[base]}"
	rounds+=("${fig[head]} ${fig[base]}")
	unset fig
done

printf '%s\n' "${rounds[@]}" | python3 -c '
import math, statistics, sys
lower = sys.argv[1].endswith("_lat")
pairs = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
pairs = [(h, b) for h, b in pairs if not (math.isnan(h) or math.isnan(b) or h == 0 or b == 0)]
if not pairs:
    sys.exit("no round measured both builds")
unit = "us, lower is better" if lower else "MB/s, higher is better"
for name, vals in (("working tree", [h for h, _ in pairs]), (sys.argv[2], [b for _, b in pairs])):
    print(f"{name:>12}: median {statistics.median(vals):.3f} ({unit}), range {min(vals):.3f}-{max(vals):.3f}")
ratios = [(b / h) if lower else (h / b) for h, b in pairs]
print(f"paired speed-up {statistics.median(ratios):.2f}; the working tree faster in {sum(x > 1 for x in ratios)} of {len(ratios)} rounds")
' "$test" "$BASE"
