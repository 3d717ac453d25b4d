#!/usr/bin/env bash
# netem_test.sh - godirect's tcp transport over a link that loses, delays,
# reorders, duplicates and cuts packets, in the throw-away VM of
# ../../shared/interop/vm.sh (see README.md beside this script).
#
# In the VM two network namespaces, a (10.9.0.1, the clients) and b
# (10.9.0.2, the servers), are joined by a veth pair whose two ends each
# carry a queueing discipline: netem (or tbf) impairs both directions. A
# soft-iWARP device sits on each end (siwa, siwb), so that rdma-core's rping
# and perftest are peers as well. For each condition the script runs:
#
#   verify      nd verify, godirect to godirect, MPA CRC off and on: Sends,
#               Writes and Reads of 1 B to 1 MiB, every byte checked on
#               arrival, every request completed exactly once (counts)
#   rping       nd rping -V against the kernel's rping over siw, both
#               roles, CRC off and on (impaired: nd client without CRC, nd
#               server with it)
#   perftest    nd perf send_bw, write_bw, read_bw -R against ib_*_bw -R
#               over siw: every iteration counted on both sides
#   sha256      an ndnet io.Copy of pseudo-random bytes whose SHA-256 and
#               count the far end checks (256 MiB, or what 30 s carry)
#   throughput  nd perf send_bw and write_bw at 64 KiB and 1 MiB, ndnet's
#               io.Copy, and a plain Go TCP io.Copy (before and after them)
#               for the ratio; the system's congestion control everywhere
#   latency     nd perf send_lat (clean and delay conditions)
#   connect     20 connections in a row under 5% loss and under 50 ms
#               delay, each set up and used
#
# then two partitions (100% loss both ways): 5 s, which every connection
# must survive, and 20 s, longer than the bounds that apply to a cut path
# (UserTimeout and keepalive, 10 s by default), during which verified
# traffic of every kind, an idle connection, an ndnet stream, an rping to
# siw and a Connect must all end with a failure status within the bound
# plus one keepalive interval, flush every request exactly once and leave
# nothing behind; once the path is back each connects again and works.
#
# Each case prints "PASS <case>" or "FAIL <case>: <reasons>"; figures go to
# the results file (default bench/netem-results.txt); the last line is "N
# passed, M failed" and the exit status is 0 only if nothing failed. The
# throughput target (0.9x plain TCP) is reported, not a failure.
#
# Environment:
#   ND_VM_SH          the VM harness (default: ../../shared/interop/vm.sh from here)
#   ND_VM_TIMEOUT     hard limit for the VM run in seconds (default 1500)
#   NETEM_CONDITIONS  the conditions to run (default: all, in the order below)
#   NETEM_PARTITIONS  0 skips the partitions
#   NETEM_BW_SECONDS  seconds per throughput run (default 2)
#   NETEM_COPY_BYTES  the SHA-256 copy's size (default 256M)
#   NETEM_SHA_SECONDS the SHA-256 copy's time limit but on the clean link (default 8)
#   NETEM_OUT         the results file (default bench/netem-results.txt; "" for none)
#   NETEM_STEPS       all (default), or throughput: per condition the throughput
#                     step only
#   NETEM_ALL_BW      1: every nd perf throughput figure on the impaired links too
#   NETEM_GUEST_OUT   keep the guest's output (with its ROW lines) in this file,
#                     and its programs' logs in FILE.logs
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel_watch.sh
. "$here/kernel_watch.sh" # KW_PATTERN
repo=$(cd "$here/.." && pwd)
vmsh=${ND_VM_SH:-$here/../../shared/interop/vm.sh}
vm_timeout=${ND_VM_TIMEOUT:-1500}
out_file=${NETEM_OUT-$repo/bench/netem-results.txt}

all_conditions="clean delay10 delay50 loss0.1 loss1 loss5 reorder dup loss1-delay25 rate100"
conditions=${NETEM_CONDITIONS:-$all_conditions}

passed=0 failed=0
finish() {
	echo "$passed passed, $failed failed"
	((failed == 0))
	exit
}
[[ -x $vmsh ]] || { echo "FAIL all: no VM harness at $vmsh (set ND_VM_SH)"; failed=1; finish; }
[[ $(id -u) == 0 ]] || { echo "FAIL all: vm.sh needs root"; failed=1; finish; }

tmp=$(mktemp -d /tmp/nd-netem-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/out"
echo "building static nd and ndnet-perf from $repo" >&2
(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/bin/nd" ./cmd/nd && CGO_ENABLED=0 go build -o "$tmp/bin/ndnet-perf" ./cmd/ndnet-perf) >&2 ||
	{ echo "FAIL all: go build failed"; failed=1; finish; }

{
	echo '#!/bin/bash'
	printf 'CONDITIONS=%q\n' "$conditions"
	printf 'PARTITIONS=%q\n' "${NETEM_PARTITIONS:-1}"
	printf 'BW_SECONDS=%q\n' "${NETEM_BW_SECONDS:-2}"
	printf 'COPY_BYTES=%q\n' "${NETEM_COPY_BYTES:-256M}"
	printf 'SHA_SECONDS=%q\n' "${NETEM_SHA_SECONDS:-8}"
	printf 'ALL_BW=%q\n' "${NETEM_ALL_BW:-0}"
	printf 'STEPS=%q\n' "${NETEM_STEPS:-all}"
	cat "$here/kernel_watch.sh"
	cat <<'GUEST'
export PATH=/inject/bin:$PATH
SA=10.9.0.1 SB=10.9.0.2
# iproute2's ip by its path: busybox's timeout runs its own applet for a
# bare "ip", which knows no network namespaces.
IP=$(type -P ip)
A="$IP netns exec a" B="$IP netns exec b"
# The provider's defaults (provider/tcp DefaultConfig): a cut path ends a
# connection within UserTimeout (= KeepAlive + KeepAliveCount x
# KeepAliveInterval = 10 s); the check allows one keepalive interval more.
BOUND=11
T=240 # seconds any one program may run
mkdir -p /out
cd /tmp

ip netns add a
ip netns add b
ip link add va netns a type veth peer name vb netns b
ip -n a addr add $SA/24 dev va
ip -n b addr add $SB/24 dev vb
for n in a b; do ip -n $n link set lo up; done
ip -n a link set va up
ip -n b link set vb up
$A rdma link add siwa type siw netdev va
$B rdma link add siwb type siw netdev vb
CC=$($A sysctl -n net.ipv4.tcp_congestion_control)
echo "ROW env kernel=$(uname -r) cc=$CC cpus=$(nproc)"
kw_start

now() { echo "$EPOCHREALTIME"; }
# fsub X Y: X - Y, three decimals.
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# stamped CMD...: run CMD with each line of its output prefixed with the
# time it was read (Unix seconds); CMD's exit status.
stamped() {
	local l
	"$@" 2>&1 | while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
	return "${PIPESTATUS[0]}"
}

qdisc_of() {
	case $1 in
	clean) ;;
	delay10) echo "netem delay 10ms 1ms" ;;
	delay50) echo "netem delay 50ms 5ms" ;;
	loss0.1) echo "netem loss 0.1%" ;;
	loss1) echo "netem loss 1%" ;;
	loss5) echo "netem loss 5%" ;;
	reorder) echo "netem delay 10ms reorder 25%" ;;
	dup) echo "netem duplicate 1%" ;;
	loss1-delay25) echo "netem delay 25ms loss 1%" ;;
	rate100) echo "tbf rate 100mbit burst 64kb latency 50ms" ;;
	partition) echo "netem loss 100%" ;;
	esac
}
# impair COND: both ends of the pair get COND's queueing discipline.
impair() {
	local q
	q=$(qdisc_of "$1")
	tc -n a qdisc del dev va root 2>/dev/null
	tc -n b qdisc del dev vb root 2>/dev/null
	if [[ -n $q ]]; then
		tc -n a qdisc add dev va root $q || echo "note: tc qdisc add $q failed on va"
		tc -n b qdisc add dev vb root $q || echo "note: tc qdisc add $q failed on vb"
	fi
}

# waitport PORT: wait (bounded) until something in b listens on TCP PORT.
waitport() {
	local i
	for i in $(seq 150); do
		$B ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	echo "note: nothing listens on port $1"
	return 1
}
# tailof FILE: the end of a log for a failure report.
tailof() { tail -n 6 "$1" | cut -c1-220 | sed 's/^/    | /'; }
# result NAME REASONS DETAIL LOGS...: the case's verdict.
result() {
	local name=$1 reason=$2 detail=$3 f
	shift 3
	if [[ -z $reason ]]; then
		echo "PASS $name ($detail)"
	else
		echo "FAIL $name ($detail): ${reason%; }"
		for f in "$@"; do
			echo "  $f:"
			tailof "$f"
		done
	fi
}
# stop_after PID SECONDS: wait for PID for SECONDS at most, then kill it;
# its exit status (137 or 143 when it was killed).
stop_after() {
	local i
	for i in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill "$1" 2>/dev/null
	sleep 0.2
	kill -KILL "$1" 2>/dev/null
	wait "$1"
}
# stopall PIDS: end what is left of a case's programs.
stopall() {
	local p
	for p in "$@"; do kill "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null; done
}

PORT=20000
nextport() { PORT=$((PORT + 1)); }

# verified COND CRC SIZES N: nd verify, godirect to godirect.
verified() {
	local cond=$1 crc=$2 sizes=$3 n=$4 name="$1/verify${2:+-crc}" srv cli reason= nsizes want sp
	nextport
	srv=v-srv.log cli=v-cli.log
	timeout $T $B nd verify -s -p $PORT $crc $SB >$srv 2>&1 & sp=$!
	waitport $PORT
	timeout $T $A nd verify -c $crc -sizes "$sizes" -n "$n" -depth 4 $SB:$PORT >$cli 2>&1 || reason+="client exit $?; "
	stop_after $sp 15 || reason+="server exit $?; "
	nsizes=$(tr , '\n' <<<"$sizes" | wc -l)
	want=$((n * nsizes))
	grep -q "client: connection 1 verified $want Sends, $want Writes, $want Reads" $cli || reason+="client did not verify $want of each; "
	grep -q "server: connection 1 verified $want Sends, $want Writes, $want Reads" $srv || reason+="server did not verify $want of each; "
	for f in $srv $cli; do
		grep -Eq 'ended normally after .*: posted ([0-9]+), completed \1:' $f || reason+="$f: not ended normally with every request completed; "
	done
	result "$name" "$reason" "sizes $sizes, $want of each kind" $cli $srv
	[[ -z $reason ]] && echo "ROW $cond verify${crc:+-crc}=pass" || echo "ROW $cond verify${crc:+-crc}=FAIL"
}

# rpings COND: nd rping against the kernel's rping over siw, both roles,
# CRC off and on (on an impaired link: nd the client without CRC and the
# server with it, to keep the run within its time).
rpings() {
	local cond=$1 dir crc size count name srv cli sp reason pings ok=0 all=0
	for dir in nd-client nd-server; do
		for crc in "" -crc; do
			if [[ $cond != clean ]] && [[ $dir == nd-client && -n $crc || $dir == nd-server && -z $crc ]]; then
				continue
			fi
			nextport
			size=65535 count=10
			[[ -n $crc ]] && size=1000 count=30
			name="$cond/rping-$dir${crc}"
			srv=r-srv.log cli=r-cli.log reason=
			if [[ $dir == nd-client ]]; then
				timeout $T $B rping -s -a $SB -p $PORT -C $count -S $size -V >$srv 2>&1 & sp=$!
				waitport $PORT
				timeout $T $A nd rping -c -a $SB -p $PORT -C $count -S $size -V -v $crc >$cli 2>&1 || reason+="nd rping -c exit $?; "
			else
				timeout $T $B nd rping -s -a $SB -p $PORT -C $count -S $size -V $crc >$srv 2>&1 & sp=$!
				waitport $PORT
				timeout $T $A rping -c -a $SB -p $PORT -C $count -S $size -V -v >$cli 2>&1 || reason+="rping -c exit $?; "
			fi
			if [[ -n $reason ]]; then stop_after $sp 5; else wait $sp; fi || reason+="server exit $?; "
			pings=$(grep -c '^ping data: rdma-ping-' $cli)
			((pings == count)) || reason+="$pings of $count pings echoed and verified; "
			result "$name" "$reason" "size $size, $count pings" $cli $srv
			all=$((all + 1))
			[[ -z $reason ]] && ok=$((ok + 1))
		done
	done
	echo "ROW $cond rping=$ok/$all"
}

# rows LOG ITERS: whether LOG has a perftest result row with ITERS iterations.
rows() { grep -Eq "^ *[0-9]+ +$2 +([0-9]|inf|-?nan)" "$1"; }

# perftests COND N: perftest's ib_TEST -R over siw (in a) against nd perf
# TEST -R --server (in b). (perftest's -R server listens on every address,
# and rdma_cm then also tries the siw device of the other namespace, whose
# listen fails: "Unable to perform rdma_server function".)
perftests() {
	local cond=$1 n=$2 test size crc name srv cli sp reason ok=0 all=0
	for spec in "send_bw 1048576 -" "write_bw 65536 -" "read_bw 1048576 -crc"; do
		read -r test size crc <<<"$spec"
		[[ $crc == - ]] && crc=
		nextport
		name="$cond/perftest-$test${crc}"
		srv=p-srv.log cli=p-cli.log reason=
		timeout $T $B nd perf $test -R --server --bind $SB -p $PORT -n $n -s $size $crc >$srv 2>&1 & sp=$!
		waitport $PORT
		timeout $T $A ib_$test -d siwa -R -F -p $PORT -n $n -s $size $SB >$cli 2>&1 || reason+="ib_$test exit $?; "
		stop_after $sp 5 || reason+="nd perf --server exit $?; "
		rows $cli $n || reason+="no row of $n iterations from ib_$test; "
		rows $srv $n || reason+="no row of $n iterations from nd perf --server; "
		result "$name" "$reason" "$n x $size bytes" $cli $srv
		all=$((all + 1))
		[[ -z $reason ]] && ok=$((ok + 1))
	done
	echo "ROW $cond perftest=$ok/$all"
}

# ndnet-perf servers in b, serving until their stdin closes.
mkfifo /tmp/srv-in
$B ndnet-perf -s -transport net-tcp -addr $SB:7000 </tmp/srv-in >/dev/null 2>net-srv.log & srvpids=($!)
stamped $B ndnet-perf -s -transport tcp -addr $SB:7001 </tmp/srv-in >ndnet-srv.log & srvpids+=($!)
$B ndnet-perf -s -transport tcp -spin -1ns -addr $SB:7002 </tmp/srv-in >/dev/null 2>&1 & srvpids+=($!)
exec 3>/tmp/srv-in
waitport 7000
waitport 7001
waitport 7002

# sha COND BYTES SECONDS: the SHA-256-checked ndnet io.Copy.
sha() {
	local cond=$1 reason= line
	line=$(timeout $T $A ndnet-perf -c $SB:7001 -transport tcp -test copy -bytes "$2" -D "$3s" 2>&1) || reason="ndnet-perf exit $?; "
	[[ $line == *"sha256 ok"* ]] || reason+="no matching SHA-256: $line; "
	result "$cond/ndnet-sha256" "$reason" "$(awk '{print $6}' <<<"$line") bytes in $3 s at most"
	echo "ROW $cond sha_bytes=$(awk '{print $6}' <<<"$line") sha=$([[ -z $reason ]] && echo pass || echo FAIL)"
}

# mbps: MB/s (10^6) from ndnet-perf's GB/s line.
gbs() { awk '{printf "%.2f", $4 * 1000}'; }
# perfbw TEST SIZE [FLAGS]: nd perf's BW average (perftest's MB = 2^20 B)
# in MB/s.
perfbw() {
	local test=$1 size=$2 flags=${3:-} sp v
	nextport
	# -w 8: nd perf's default warm-up (256 MiB for a bw test) takes
	# longer than the run's time on an impaired link under TCG.
	timeout 60 $B nd perf $test --server -bind $SB -p $PORT -congestion system -w 8 $flags >/dev/null 2>&1 & sp=$!
	waitport $PORT
	v=$(timeout 60 $A nd perf $test -s $size -D $BW_SECONDS -congestion system -w 8 $flags $SB:$PORT 2>&1 |
		tee -a perfbw-$cond.log | awk -v s=$size '$1 == s && NF >= 5 {printf "%.2f", $4 * 1048576 / 1e6}')
	stop_after $sp 5
	echo "${v:-0}"
}
# throughput COND: one run of each, plain TCP before and after. Both
# "hosts" share the VM's two processors, so nd perf blocks in Notify (-b)
# rather than poll, as ndnet does after its spin; the clean condition
# also measures the polling figures, for comparison.
throughput() {
	local cond=$1 tcp1 tcp2 ndnet s64 s1m w64 w1m more=
	tcp1=$($A ndnet-perf -c $SB:7000 -transport net-tcp -test bw -D ${BW_SECONDS}s 2>/dev/null | gbs)
	ndnet=$($A ndnet-perf -c $SB:7001 -transport tcp -test bw -D ${BW_SECONDS}s 2>/dev/null | gbs)
	# Under TCG each nd perf run costs some 20 s of set-up: an impaired
	# link measures send_bw at 1 MiB and write_bw at 64 KiB only
	# (NETEM_ALL_BW=1 runs all four).
	s64=- w1m=-
	[[ $cond == clean || $ALL_BW == 1 ]] && s64=$(perfbw send_bw 65536 -b)
	s1m=$(perfbw send_bw 1048576 -b)
	w64=$(perfbw write_bw 65536 -b)
	[[ $cond == clean || $ALL_BW == 1 ]] && w1m=$(perfbw write_bw 1048576 -b)
	if [[ $cond == clean ]]; then
		more=" send1m_poll=$(perfbw send_bw 1048576) ndnet_nospin=$($A ndnet-perf -c $SB:7002 -transport tcp -spin -1ns -test bw -D ${BW_SECONDS}s 2>/dev/null | gbs)"
	fi
	tcp2=$($A ndnet-perf -c $SB:7000 -transport net-tcp -test bw -D ${BW_SECONDS}s 2>/dev/null | gbs)
	echo "ROW $cond tcp1=${tcp1:-0} tcp2=${tcp2:-0} ndnet=${ndnet:-0} send64k=$s64 send1m=$s1m write64k=$w64 write1m=$w1m$more"
}

# latency COND N [poll]: nd perf send_lat's median half round trip (us),
# blocking in Notify (or polling).
latency() {
	local cond=$1 n=$2 flags=-b key=lat_us sp v t
	[[ ${3:-} == poll ]] && flags= key=lat_poll_us
	nextport
	timeout 120 $B nd perf send_lat --server -bind $SB -p $PORT -congestion system $flags >/dev/null 2>&1 & sp=$!
	waitport $PORT
	v=$(timeout 120 $A nd perf send_lat -n $n -congestion system $flags $SB:$PORT 2>&1 | awk '$1 == 2 && NF >= 9 {print $5}')
	stop_after $sp 5
	# plain Go TCP's 2-byte ping-pong over the same link (its mean half
	# round trip), the baseline
	t=$(timeout 120 $A ndnet-perf -c $SB:7000 -transport net-tcp -test lat -size 2 -iters $n 2>/dev/null | awk '{print $4}')
	echo "ROW $cond $key=${v:-0} lat_n=$n tcp_lat_us=${t:-0}"
}

# connects COND K: K connections in a row, each set up and used.
connects() {
	local cond=$1 k=$2 sp reason= times
	nextport
	timeout $T $B nd verify -s -p $PORT -conns $k $SB >c-srv.log 2>&1 & sp=$!
	waitport $PORT
	timeout $T $A nd verify -c -conns $k -ops send -sizes 64 -n 1 -depth 1 $SB:$PORT >c-cli.log 2>&1 || reason+="client exit $?; "
	wait $sp || reason+="server exit $?; "
	local ups
	ups=$(grep -c 'client: connection [0-9]* up' c-cli.log)
	((ups == k)) || reason+="$ups of $k connections up; "
	times=$(sed -n 's/.*Connect took \([0-9.]*\) ms/\1/p' c-cli.log | sort -g | awk '{a[NR]=$1} END {if (NR) printf "median %.1f ms, max %.1f ms", a[int((NR+1)/2)], a[NR]}')
	result "$cond/connect-x$k" "$reason" "Connect+CompleteConnect: $times" c-cli.log c-srv.log
	echo "ROW $cond connects=$ups/$k connect_times=\"$times\""
}

# scale COND: how much of the full traffic the condition's link carries in
# the run's time (1 full, 2 half, 4 a quarter).
scale() {
	case $1 in
	loss5 | delay50) echo 2 ;;
	loss1-delay25) echo 4 ;;
	*) echo 1 ;;
	esac
}

# step NAME CMD...: run CMD and report its seconds (ROW COND t_NAME=).
step() {
	local name=$1 s
	shift
	s=$(now)
	"$@"
	echo "ROW $cond t_$name=$(fsub "$(now)" "$s")"
}

# Every size of nd verify's default list (1 B to 1 MiB, both sides of
# the provider's boundaries) on the clean link; the others run the
# extremes and a boundary, to keep the run within its time.
FULL_SIZES=1,3,64,1000,4096,65535,65536,262145,1048576
SHORT_SIZES=1,1000,65536,1048576
for cond in $CONDITIONS; do
	kw_case "$cond"
	start=$(now)
	impair "$cond"
	echo "== $cond: $(qdisc_of "$cond")"
	sc=$(scale "$cond")
	sizes=$SHORT_SIZES
	[[ $cond == clean ]] && sizes=$FULL_SIZES
	if [[ $STEPS == all ]]; then
		step verify verified "$cond" "" $sizes $((4 / sc))
		step verify_crc verified "$cond" -crc $sizes $((4 / sc))
		step rping rpings "$cond"
		# perftest takes 5 iterations at least
		step perftest perftests "$cond" $((16 / sc > 5 ? 16 / sc : 5))
		# 256 MiB where the link carries it in the run's time; elsewhere
		# what SHA_SECONDS carry (the file says how much).
		if [[ $cond == clean ]]; then step sha sha "$cond" "$COPY_BYTES" 300; else step sha sha "$cond" "$COPY_BYTES" "$SHA_SECONDS"; fi
	fi
	step throughput throughput "$cond"
	[[ $STEPS == all ]] || { echo "ROW $cond seconds=$(fsub "$(now)" "$start")"; continue; }
	case $cond in
	clean) step latency latency "$cond" 300 ;;
	delay10) step latency latency "$cond" 100 ;;
	delay50) step latency latency "$cond" 30 ;;
	esac
	case $cond in
	loss5 | delay50) step connect connects "$cond" 20 ;;
	esac
	echo "ROW $cond seconds=$(fsub "$(now)" "$start")"
done
impair clean

# partition NAME SECONDS: cut the path SECONDS after the programs started,
# for SECONDS2, with traffic of every kind running.
if [[ $PARTITIONS == 1 ]]; then
	# --- short: 5 s, every connection survives ---
	kw_case partition-5s
	echo "== partition 5 s"
	pids=()
	base=20500
	for k in 0 1; do
		timeout $T $B nd verify -s -p $((base + k)) $SB >ps-srv$k.log 2>&1 & pids+=($!)
	done
	waitport $((base + 1))
	timeout $T $A nd verify -c -sizes 65536,1000 -n 8 -D 16s $SB:$base >ps-cli0.log 2>&1 & c0=$!
	timeout $T $A nd verify -c -ops idle -D 16s $SB:$((base + 1)) >ps-cli1.log 2>&1 & c1=$!
	timeout $T $A ndnet-perf -c $SB:7001 -transport tcp -test copy -bytes 1G -D 16s >ps-ndnet.log 2>&1 & c2=$!
	timeout $T $B rping -s -a $SB -p $((base + 2)) -C 100000 -S 4096 -V >ps-rsrv.log 2>&1 & rs=$!
	waitport $((base + 2))
	timeout 18 $A nd rping -c -a $SB -p $((base + 2)) -S 4096 -V -v >ps-rcli.log 2>&1 & c3=$!
	sleep 3
	impair partition
	p0=$(now)
	sleep 5
	impair clean
	p1=$(now)
	reason=
	wait $c0 || reason+="verify client exit $?; "
	wait $c1 || reason+="idle client exit $?; "
	wait $c2 || reason+="ndnet copy exit $?; "
	wait $c3
	rc=$?
	((rc == 124)) || reason+="nd rping (stopped after 18 s) exit $rc, want 124; "
	pings_before=$(grep -c '^ping data' ps-rcli.log)
	stopall $rs
	for k in 0 1; do wait ${pids[k]} || reason+="verify server $k exit $?; "; done
	grep -h FAILED ps-*.log | sed 's/^/    | /'
	grep -q FAILED ps-*.log && reason+="a connection failed; "
	grep -q 'sha256 ok' ps-ndnet.log || reason+="ndnet copy: $(tail -n 1 ps-ndnet.log); "
	result partition-5s "$reason" "cut at +3 s for $(fsub "$p1" "$p0") s: verify (all kinds), idle, ndnet copy, rping to siw ($pings_before pings)" ps-cli0.log ps-cli1.log ps-ndnet.log ps-rcli.log
	echo "ROW partition-5s result=$([[ -z $reason ]] && echo pass || echo FAIL) rping_pings=$pings_before"

	# --- long: 20 s, every side ends within the bound, then reconnects ---
	kw_case partition-20s
	echo "== partition 20 s"
	pids=()
	base=20600
	kinds=(send read write idle)
	for k in 0 1 2 3; do
		stamped timeout $T $B nd verify -s -p $((base + k)) -conns 2 -fail-ok $SB >pl-srv$k.log & pids+=($!)
	done
	waitport $((base + 3))
	cpids=()
	for k in 0 1 2 3; do
		stamped timeout $T $A nd verify -c -ops ${kinds[k]} -sizes 65536 -n 8 -D 60s -fail-ok -reconnect 60s $SB:$((base + k)) >pl-cli$k.log & cpids+=($!)
	done
	stamped timeout $T $A ndnet-perf -c $SB:7001 -transport tcp -test copy -bytes 4G -D 60s >pl-ndnet.log & nc=$!
	timeout $T $B rping -s -a $SB -p $((base + 4)) -C 100000 -S 4096 -V >pl-rsrv.log 2>&1 & rs=$!
	waitport $((base + 4))
	stamped timeout 80 $A nd rping -c -a $SB -p $((base + 4)) -S 4096 -V -v >pl-rcli.log & rc_pid=$!
	sleep 4
	impair partition
	p0=$(now)
	sleep 2
	cstart=$(now)
	stamped timeout $T $A nd verify -c -fail-ok -n 1 $SB:$base >pl-connect.log & cc=$!
	sleep 18
	impair clean
	p1=$(now)
	echo "ROW partition-20s cut=$(fsub "$p1" "$p0")"
	reason=
	for k in 0 1 2 3; do
		wait ${cpids[k]} || reason+="verify client ${kinds[k]} exit $?; "
	done
	for k in 0 1 2 3; do
		wait ${pids[k]} || reason+="verify server ${kinds[k]} exit $?; "
	done
	wait $cc || reason+="the Connect in the partition: exit $?; "
	wait $nc
	wait $rc_pid
	rping_rc=$?
	siw_alive=no
	kill -0 $rs 2>/dev/null && siw_alive=yes
	stopall $rs
	for k in 0 1 2 3; do
		for side in srv cli; do
			f=pl-$side$k.log
			line=$(grep 'connection 1 FAILED' $f)
			who="${kinds[k]} $side"
			if [[ -z $line ]]; then
				reason+="$who: no failure report; "
				continue
			fi
			at=$(sed -n 's/.*FAILED at=\([0-9.]*\).*/\1/p' <<<"$line")
			st=$(sed -n 's/.*status=\([A-Z_a-z]*\);.*/\1/p' <<<"$line")
			d=$(fsub "$at" "$p0")
			pc=$(sed -n 's/.*posted \([0-9]*\), completed \([0-9]*\):.*/\1 \2/p' <<<"$line")
			echo "ROW partition-20s side=$who after=$d status=$st counts=\"$pc\" flushed=\"$(sed -n 's/.*completed [0-9]*: //p' <<<"$line")\""
			awk -v d="$d" -v b=$BOUND 'BEGIN { exit !(d >= 0 && d <= b) }' || reason+="$who: failed $d s after the cut, bound $BOUND s; "
			[[ $st == ND_IO_TIMEOUT || $st == ND_CANCELED || $st == none ]] || reason+="$who: status $st; "
			read -r po co <<<"$pc"
			[[ $po == "$co" ]] || reason+="$who: posted $po, completed $co; "
			grep -q "after connection 1: .*nothing left" $f || reason+="$who: something left after connection 1; "
			grep -q 'connection 2 ended normally' $f || reason+="$who: no working connection after the heal; "
		done
	done
	# the Connect made in the partition
	line=$(grep 'Connect FAILED' pl-connect.log)
	at=$(sed -n 's/.*FAILED at=\([0-9.]*\).*/\1/p' <<<"$line")
	st=$(sed -n 's/.*s: \(ND_[A-Z_]*\):.*/\1/p' <<<"$line")
	if [[ -z $line ]]; then
		reason+="the Connect in the partition did not fail; "
	else
		# from the Connect call (the tool's own figure), and from the
		# program's start, which costs seconds under TCG
		d=$(sed -n 's/.*Connect FAILED at=[0-9.]* after \([0-9.]*\) s:.*/\1/p' <<<"$line")
		echo "ROW partition-20s side=connect after=$d from_start=$(fsub "$at" "$cstart") status=$st"
		awk -v d="$d" -v b=$BOUND 'BEGIN { exit !(d <= b) }' || reason+="the Connect in the partition failed after $d s, bound $BOUND s; "
		[[ $st == ND_IO_TIMEOUT ]] || reason+="the Connect in the partition: $st, want ND_IO_TIMEOUT; "
	fi
	# ndnet: both ends see the stream end
	line=$(grep -m1 'copy: ' pl-ndnet.log)
	if [[ -n $line ]]; then
		d=$(fsub "${line%% *}" "$p0")
		echo "ROW partition-20s side=ndnet-client after=$d status=\"$(cut -d' ' -f2- <<<"$line" | cut -c1-160)\""
		awk -v d="$d" -v b=$BOUND 'BEGIN { exit !(d >= 0 && d <= b) }' || reason+="ndnet client: failed $d s after the cut; "
	else
		reason+="the ndnet copy did not fail: $(tail -n 1 pl-ndnet.log); "
	fi
	line=$(grep -m1 'copy: reading' ndnet-srv.log)
	if [[ -n $line ]]; then
		d=$(fsub "${line%% *}" "$p0")
		echo "ROW partition-20s side=ndnet-server after=$d status=\"$(cut -d' ' -f2- <<<"$line" | cut -c1-160)\""
		awk -v d="$d" -v b=$BOUND 'BEGIN { exit !(d >= 0 && d <= b) }' || reason+="ndnet server: failed $d s after the cut; "
	else
		reason+="the ndnet server did not see the stream fail; "
	fi
	# rping to siw: the nd side ends within the bound; siw's side is the kernel's
	line=$(grep -m1 -v '^[0-9.]* ping data' pl-rcli.log)
	last=$(grep '^[0-9.]* ping data' pl-rcli.log | tail -n 1)
	if [[ -n $line ]]; then
		d=$(fsub "${line%% *}" "$p0")
		echo "ROW partition-20s side=rping-nd-client after=$d status=\"$(cut -d' ' -f2- <<<"$line" | cut -c1-160)\" siw_server_still_waiting=$siw_alive"
		awk -v d="$d" -v b=$BOUND 'BEGIN { exit !(d >= 0 && d <= b) }' || reason+="nd rping: failed $d s after the cut; "
	else
		reason+="nd rping (exit $rping_rc) printed no error; "
	fi
	# afterwards: a new ndnet copy and a new rping work
	l2=$(timeout 60 $A ndnet-perf -c $SB:7001 -transport tcp -test copy -bytes 16M 2>&1)
	[[ $l2 == *"sha256 ok"* ]] || reason+="ndnet after the heal: $l2; "
	nextport
	timeout 60 $B rping -s -a $SB -p $PORT -C 10 -S 4096 -V >/dev/null 2>&1 & rs=$!
	waitport $PORT
	timeout 60 $A nd rping -c -a $SB -p $PORT -C 10 -S 4096 -V >/dev/null 2>&1 || reason+="rping after the heal: exit $?; "
	stopall $rs
	result partition-20s "$reason" "cut at +4 s for $(fsub "$p1" "$p0") s; bound $BOUND s" pl-cli0.log pl-srv0.log pl-connect.log pl-ndnet.log pl-rcli.log
fi

exec 3>&-
# The ndnet-perf servers end once their standard input closed (a bare
# wait would also wait for the kernel watch, which never ends).
wait "${srvpids[@]}"
cp ./*.log /out/ 2>/dev/null
exit 0
GUEST
} >"$tmp/guest.sh"

echo "booting the VM: conditions $conditions" >&2
start=$(date +%s)
"$vmsh" -t "$vm_timeout" -l "$tmp/console" -i "$tmp/bin" -o "$tmp/out" -s "$tmp/guest.sh" >"$tmp/guest.out" 2>"$tmp/err"
vmrc=$?
elapsed=$(($(date +%s) - start))
[[ -n ${NETEM_GUEST_OUT:-} ]] && cp "$tmp/guest.out" "$NETEM_GUEST_OUT" && cp -r "$tmp/out" "$NETEM_GUEST_OUT.logs"
kbug=
while IFS= read -r line; do
	case $line in
	"PASS "*) passed=$((passed + 1)) ;;
	"FAIL "*) failed=$((failed + 1)) ;;
	"KERNEL-BUG during "*) kbug=${line#KERNEL-BUG during } ;;
	esac
	[[ $line == "ROW "* ]] || printf '%s\n' "$line"
done <"$tmp/guest.out"
if [[ -n $kbug ]]; then
	echo "FAIL $kbug: the guest kernel hit a BUG or oops (its trace is above)"
	failed=$((failed + 1))
elif ((vmrc != 0)); then
	echo "FAIL vm: vm.sh exited $vmrc after ${elapsed} s; its diagnostics:"
	sed 's/^/    | /' "$tmp/err" | tail -n 20
	failed=$((failed + 1))
fi
echo "the VM run took ${elapsed} s"

# The results file, from the ROW lines.
if [[ -n $out_file ]]; then
	"$here/netem_results.sh" "$tmp/guest.out" "$elapsed" "$(cd "$repo" && git describe --always --dirty 2>/dev/null)" >"$out_file.new" &&
		mv "$out_file.new" "$out_file" && echo "results: $out_file" >&2
fi
finish
