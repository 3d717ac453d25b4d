#!/usr/bin/env bash
# verbs_perf.sh - nd perf over provider/verbs beside perftest's ib_* tools on
# the same kernel RDMA device, in one run of the throw-away VM of
# ../../shared/interop/vm.sh (soft-iWARP siw0 on 192.0.2.1, Soft-RoCE rxe0 on
# 192.0.2.2). The VM emulates its CPU (no KVM), so only the ratios mean
# something: each line gives perftest's figure, nd perf's, and nd perf's
# over perftest's.
#
#   sudo interop/verbs_perf.sh        (prints the table, writes bench/verbs-results.txt)
#
# It builds nd with the verbs tag on the host (cgo: needs libibverbs-dev
# and librdmacm-dev) and runs, per device, send/write/read _bw at 64 KiB and
# send/write/read _lat at 8 B: perftest first (-R, rdma_cm), then nd perf,
# each server and client a process of its own; then nd perf -R against the
# same perftest binary in both roles (perftest's rdma_cm protocol).
#
# The table's header says when and on what it was made: the date, the
# commit nd was built from, the guest's kernel and perftest's version, and
# the parameters. A guest kernel BUG or oops stops the run (kernel_watch.sh)
# and names the pair that was running. A pair that failed has no figure,
# the table says why (the first error line of its output, or why the run
# did not reach it), and the script exits 1 after writing the table.
#
# Environment: BW_ITERS (default 2000), LAT_ITERS (default 1000), BW_SIZE
# (65536), LAT_SIZE (8), ND_VM_SH (the VM harness), ND_VM_TIMEOUT (900),
# OUT (default bench/verbs-results.txt).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel_watch.sh
. "$here/kernel_watch.sh" # KW_PATTERN
repo=$(cd "$here/.." && pwd)
vmsh=${ND_VM_SH:-$here/../../shared/interop/vm.sh}
out=${OUT:-$repo/bench/verbs-results.txt}
[[ -x $vmsh ]] || { echo "no VM harness at $vmsh (set ND_VM_SH)" >&2; exit 1; }
[[ $(id -u) == 0 ]] || { echo "vm.sh needs root" >&2; exit 1; }

tmp=$(mktemp -d /tmp/nd-verbs-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "building nd with -tags verbs" >&2
(cd "$repo" && CGO_ENABLED=1 go build -tags verbs -o "$tmp/nd" ./cmd/nd) ||
	{ echo "go build -tags verbs failed (apt-get install libibverbs-dev librdmacm-dev)" >&2; exit 1; }

commit=$(cd "$repo" && git rev-parse --short HEAD 2>/dev/null)$(cd "$repo" && git diff --quiet HEAD 2>/dev/null || echo "+changes")
params="BW_ITERS=${BW_ITERS:-2000} LAT_ITERS=${LAT_ITERS:-1000} BW_SIZE=${BW_SIZE:-65536} LAT_SIZE=${LAT_SIZE:-8}"
{
	echo '#!/bin/bash'
	echo "$params"
	cat "$here/kernel_watch.sh"
} >"$tmp/guest.sh"
cat >>"$tmp/guest.sh" <<'GUEST'
cd /tmp
ulimit -l unlimited
echo "KERNEL $(uname -r) $(uname -v)"
echo "PERFTEST $(ib_send_bw --version 2>&1 | head -n 1)"
kw_start
ND=/inject/nd
port=18500
# listening PORT: whether an rdma_cm id listens on PORT (perftest's on
# every device, nd perf's on its -bind address).
listening() { rdma res show cm_id | grep -q "state LISTEN .*:$1 "; }
# pair SERVER CLIENT: runs the server in the background, waits (bounded)
# until it listens on $port, and runs the client in the foreground, both
# bounded; prints the client's output. When the client fails, /tmp/why
# says why in one line (empty otherwise).
pair() {
	local i rc
	kw_case "$2"
	: >/tmp/why
	timeout 120 bash -c "$1" >/tmp/srv.log 2>&1 &
	local pid=$!
	for i in $(seq 600); do listening "$port" && break; sleep 0.1; done
	timeout 120 bash -c "$2" 2>/tmp/cli.err
	rc=$?
	wait $pid 2>/dev/null
	if ((rc != 0)); then
		echo "FAILED: $2" >&2
		cat /tmp/cli.err /tmp/srv.log >&2
		why /tmp/cli.err "client" $rc || why /tmp/srv.log "server" $rc
	fi
}
# why FILE SIDE RC: writes to /tmp/why the first line of FILE that reads
# like an error (else its last line), naming SIDE and the client's exit
# status; false if FILE has nothing to say.
why() {
	local l
	l=$(grep -m 1 -iE 'error|fail|unable|couldn|refused|invalid|timed? ?out|ND_[A-Z_]+|reject|abort' "$1")
	[[ -n $l ]] || l=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)
	[[ -n $l ]] || { (($3 == 124)) && echo "timed out after 120 s ($2 silent)" >/tmp/why; return 1; }
	l=$(printf '%s' "$l" | tr -s ' \t' ' ' | cut -c 1-110)
	if (($3 == 124)); then echo "timed out after 120 s; $2: $l" >/tmp/why; else echo "exit $3; $2: $l" >/tmp/why; fi
}
# figure FIELD: the FIELD of the last result row (a line starting with the size).
figure() { awk -v f="$1" '$1 ~ /^[0-9]+$/ && NF >= 5 {v=$f} END {print (v == "" ? "nan" : v)}'; }
# row DEV TEST SIZE ROLE FIGURE: one line of the table's data; the reason
# when FIGURE is missing.
row() {
	local w
	w=$(cat /tmp/why)
	[[ $5 == nan && -z $w ]] && w="no result row in the client's output"
	[[ $5 != nan ]] && w=""
	echo "ROW $1 $2 $3 $4 $5 $w"
}
for dev in siw0:192.0.2.1 rxe0:192.0.2.2; do
	name=${dev%%:*} addr=${dev#*:}
	for t in send_bw write_bw read_bw send_lat write_lat read_lat; do
		if [[ $t == *_bw ]]; then size=$BW_SIZE iters=$BW_ITERS field=4; else size=$LAT_SIZE iters=$LAT_ITERS field=5; fi
		# perftest against itself: the reference of the three rows.
		port=$((port + 1))
		v=$(pair "ib_$t -d $name -R -F -s $size -n $iters -p $port" \
			"ib_$t -d $name -R -F -s $size -n $iters -p $port $addr" | figure $field)
		row $name $t $size perftest "$v"
		# nd perf against itself (its own protocol).
		port=$((port + 1))
		v=$(pair "$ND perf $t --server -provider verbs -bind $addr -p $port" \
			"$ND perf $t -provider verbs -s $size -n $iters $addr:$port" | figure $field)
		row $name $t $size nd-nd "$v"
		# nd perf -R as the client of perftest's server.
		port=$((port + 1))
		v=$(pair "ib_$t -d $name -R -F -s $size -n $iters -p $port" \
			"$ND perf $t -provider verbs -R -s $size -n $iters -p $port $addr" | figure $field)
		row $name $t $size nd-client "$v"
		# nd perf -R as the server of perftest's client (perftest's figure).
		port=$((port + 1))
		v=$(pair "$ND perf $t --server -provider verbs -R -bind $addr -s $size -n $iters -p $port" \
			"ib_$t -d $name -R -F -s $size -n $iters -p $port $addr" | figure $field)
		row $name $t $size nd-server "$v"
	done
done
GUEST

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "booting the VM" >&2
"$vmsh" -t "${ND_VM_TIMEOUT:-900}" -i "$tmp/nd" -s "$tmp/guest.sh" >"$tmp/out" 2>"$tmp/err"
rc=$?
grep -E '^FAILED' "$tmp/out" "$tmp/err" >&2
kbug=$(grep -A 40 '^KERNEL-BUG' "$tmp/out")
[[ -n $kbug ]] && printf '%s\n' "$kbug" >&2
kernel=$(sed -n 's/^KERNEL //p' "$tmp/out" | head -n 1)
perftest=$(sed -n 's/^PERFTEST //p' "$tmp/out" | head -n 1)
# stop: why the rows the guest did not reach have no figure.
stop=""
if [[ -n $kbug ]]; then
	stop="not run: a guest kernel BUG stopped the run ($(sed -n 's/^KERNEL-BUG during //p' "$tmp/out" | head -n 1))"
elif ((rc == 124)); then
	stop="not run: the VM reached its timeout (ND_VM_TIMEOUT=${ND_VM_TIMEOUT:-900} s) first"
elif ((rc != 0)); then
	stop="not run: the VM run failed (vm.sh exit $rc)"
fi
{
	echo "nd perf over provider/verbs beside perftest (ib_*, -R) on the same device, one VM run (interop/verbs_perf.sh)"
	echo "made $(date -u '+%Y-%m-%d %H:%M UTC') by: sudo interop/verbs_perf.sh ($params); nd built from $commit with -tags verbs"
	echo "guest kernel: ${kernel:-unknown}; siw built out of tree from the same version; perftest: ${perftest:-unknown}"
	echo "host: $(nproc) cores, load average (1, 5, 15 min) $load0 before the run and $(cut -d' ' -f1-3 /proc/loadavg) after it"
	echo "the VM emulates its CPU (qemu TCG, 2 vCPUs): compare the ratio, not the figures"
	echo "bandwidth: BW average, MB/s (2^20), higher is better; latency: t_typical, us, lower is better"
	echo "roles (each row against perftest's own pair, ib_TEST -R against ib_TEST -R, on the same device and test):"
	echo "  nd-nd      nd perf against nd perf (its own protocol, not -R)"
	echo "  nd-client  nd perf TEST -R against an ib_TEST -R server (nd's figure)"
	echo "  nd-server  an ib_TEST -R client against nd perf TEST -R --server (perftest's figure as the client)"
	echo "ratio: the row's figure over perftest's; a row that could not run says why"
	echo
	printf '%-6s %-10s %8s %-10s %10s %10s %7s  %s\n' device test bytes role perftest nd ratio note
	awk -v stop="${stop:-not run: the guest script ended first}" -v bw="${BW_SIZE:-65536}" -v lat="${LAT_SIZE:-8}" '
		function r(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
		/^ROW / {
			key = $2 " " $3
			seen[$2 " " $3 " " $5] = 1
			if ($5 == "perftest") { ref[key] = $6; if ($6 == "nan") refwhy[key] = why(); next }
			note = why()
			if ($6 == "nan") { fig = "-" } else { fig = $6 }
			p = ref[key]
			if (p == "" || p == "nan") { p = "-"; if (note == "") note = "perftest pair failed: " refwhy[key] }
			line = sprintf("%-6s %-10s %8s %-10s %10s %10s %7s  %s", $2, $3, $4, $5, p, fig, r($6, ref[key]), note)
			sub(/ +$/, "", line)
			print line
		}
		function why(   i, w) { w = ""; for (i = 7; i <= NF; i++) w = w (i > 7 ? " " : "") $i; return w }
		# The rows the guest did not reach (they come last: the guest
		# runs them in this order).
		END {
			nd = split("siw0 rxe0", devs, " "); nt = split("send_bw write_bw read_bw send_lat write_lat read_lat", tests, " ")
			nr = split("nd-nd nd-client nd-server", roles, " ")
			for (i = 1; i <= nd; i++) for (j = 1; j <= nt; j++) for (k = 1; k <= nr; k++) {
				if ((devs[i] " " tests[j] " " roles[k]) in seen) continue
				size = tests[j] ~ /_bw$/ ? bw : lat
				printf "%-6s %-10s %8s %-10s %10s %10s %7s  %s\n", devs[i], tests[j], size, roles[k], "-", "-", "-", stop
			}
		}' "$tmp/out"
} >"$tmp/table"
cat "$tmp/table"
cp "$tmp/table" "$out"
if ((rc != 0)) || [[ -n $kbug ]] || ! grep -q '^ROW ' "$tmp/out"; then
	echo "vm.sh exited $rc; its diagnostics:" >&2
	tail -n 20 "$tmp/err" >&2
	exit 1
fi
# A pair without a figure: the table says why, and the run failed.
! grep -qE '^ROW ([^ ]+ ){4}nan( |$)' "$tmp/out"
