#!/usr/bin/env bash
# siw_test.sh - interop test of `nd rping` against rdma-core's rping, and of
# `nd perf TEST -R` against perftest 6.06's ib_TEST -R for its six tests
# (send_bw, send_lat, write_bw, write_lat, read_bw, read_lat), over the Linux
# kernel's soft-iWARP (siw), in the throw-away VM of
# ../../shared/interop/vm.sh (see README.md beside this script).
#
# It builds a static nd binary, boots the VM once, and runs every case of the
# table below in it, over siw0 (192.0.2.1 on dummy0, the VM's default links):
#
#   nd-client  `nd rping -c -V` against `rping -s`
#   nd-server  `rping -c -V` against `nd rping -s -V`
#   perf-nd-client-*  `nd perf TEST -R` against `ib_TEST -R -d siw0`
#   perf-nd-server-*  `ib_TEST -R -d siw0` against `nd perf TEST -R --server`
#
# for several ping sizes and counts, with MPA CRC off and on. With CRC on, the
# nd side asks for it (-crc): as the initiator its MPA Request carries C and
# siw's responder echoes it; as the responder it sets C in its Reply, which
# siw's initiator obeys. A case passes when both programs exit 0, the side
# that prints the echoed data (-v) printed one line per ping, and the MPA
# Reply on the wire has the C flag exactly when CRC was asked for.
#
# Each case prints "PASS <case>" or "FAIL <case>: <reason>"; the last line is
# "N passed, M failed", and the exit status is 0 only if nothing failed.
#
# Environment:
#   ND_VM_SH       the VM harness (default: ../../shared/interop/vm.sh from here)
#   ND_VM_TIMEOUT  hard limit for the VM run in seconds (default 600)
#   ND_BIN         use this static nd binary instead of building one
#   ND_CASES       run only the cases whose name matches this extended regexp
#   ND_REPEAT      run each case this many times in a row (default 1)
#   ND_WIRE        if set, capture every TCP segment on the VM's loopback and
#                  print a failed case's segments of at most 400 bytes
#                  (tcpdump -X, first 3000 lines)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel_watch.sh
. "$here/kernel_watch.sh" # KW_PATTERN
repo=$(cd "$here/.." && pwd)
vmsh=${ND_VM_SH:-$here/../../shared/interop/vm.sh}
vm_timeout=${ND_VM_TIMEOUT:-1500}

# The cases. rping: NAME DIRECTION SIZE COUNT CRC. SIZE "-" and a NAME
# ending in "-defaults" run rping's defaults (size 64, port 7174) without -S
# and -p. Sizes stay within rping's limits (23 to 65535). perftest: NAME
# DIRECTION TEST CRC ARGS..., where the perf-* directions run perftest
# 6.06's -R protocol (iwarp.md section 8) for TEST with ARGS given to both
# sides (perftest sends neither side's parameters to the other):
#   perf-client  `nd perf TEST -R ARGS 192.0.2.1` against `ib_TEST -R -d siw0 ARGS`
#   perf-server  `ib_TEST -R -d siw0 ARGS 192.0.2.1` against `nd perf TEST -R --server ARGS`
# ARGS give -n or -D, and -s or -a, so that the rows to expect are known.
cases=(
	"nd-client-defaults       nd-client -     10  off"
	"nd-client-23x3           nd-client 23    3   off"
	"nd-client-26x3           nd-client 26    3   off"
	"nd-client-1000x100       nd-client 1000  100 off"
	"nd-client-65000x20       nd-client 65000 20  off"
	"nd-client-65535x5        nd-client 65535 5   off"
	"nd-client-crc-64x10      nd-client 64    10  on"
	"nd-client-crc-26x3       nd-client 26    3   on"
	"nd-client-crc-1000x100   nd-client 1000  100 on"
	"nd-client-crc-65000x20   nd-client 65000 20  on"
	"nd-client-crc-65535x5    nd-client 65535 5   on"
	"nd-server-defaults       nd-server -     10  off"
	"nd-server-23x3           nd-server 23    3   off"
	"nd-server-26x3           nd-server 26    3   off"
	"nd-server-1000x100       nd-server 1000  100 off"
	"nd-server-65000x20       nd-server 65000 20  off"
	"nd-server-65535x5        nd-server 65535 5   off"
	"nd-server-crc-64x10      nd-server 64    10  on"
	"nd-server-crc-26x3       nd-server 26    3   on"
	"nd-server-crc-1000x100   nd-server 1000  100 on"
	"nd-server-crc-65000x20   nd-server 65000 20  on"
	"nd-server-crc-65535x5    nd-server 65535 5   on"
	"perf-nd-client-send-4096x200         perf-client send_bw   off -n 200 -s 4096"
	"perf-nd-client-send-1024x1500        perf-client send_bw   off -n 1500 -s 1024"
	"perf-nd-client-write-65536x100       perf-client write_bw  off -n 100 -s 65536"
	"perf-nd-client-read-65536x100        perf-client read_bw   off -n 100 -s 65536"
	"perf-nd-client-crc-read-4096x200     perf-client read_bw   on  -n 200 -s 4096"
	"perf-nd-client-send_lat-2x1000       perf-client send_lat  off -n 1000 -s 2"
	"perf-nd-client-write_lat-2x1000      perf-client write_lat off -n 1000 -s 2"
	"perf-nd-client-read_lat-64x500       perf-client read_lat  off -n 500 -s 64"
	"perf-nd-client-crc-write_lat-4096x300 perf-client write_lat on  -n 300 -s 4096"
	"perf-nd-client-send_bw-all           perf-client send_bw   off -a -n 10"
	"perf-nd-client-write_bw-all          perf-client write_bw  off -a -n 5"
	"perf-nd-client-read_bw-all           perf-client read_bw   off -a -n 5"
	"perf-nd-client-send_lat-all          perf-client send_lat  off -a -n 5"
	"perf-nd-client-write_lat-all         perf-client write_lat off -a -n 5"
	"perf-nd-client-read_lat-all          perf-client read_lat  off -a -n 5"
	"perf-nd-client-send_bw-q3-t16        perf-client send_bw   off -q 3 -t 16 -n 400 -s 4096"
	"perf-nd-client-write_bw-q4-t8        perf-client write_bw  off -q 4 -t 8 -n 100 -s 65536"
	"perf-nd-client-read_bw-q2-o2         perf-client read_bw   off -q 2 -o 2 -t 8 -n 100 -s 16384"
	"perf-nd-client-send_lat-t4-Q2         perf-client send_lat  off -t 4 -Q 2 -n 300 -s 64"
	"perf-nd-client-read_lat-o1           perf-client read_lat  off -o 1 -n 300 -s 64"
	"perf-nd-client-send_bw-D3            perf-client send_bw   off -D 3 -s 4096"
	"perf-nd-client-write_bw-D3           perf-client write_bw  off -D 3 -s 65536"
	"perf-nd-client-read_bw-D3            perf-client read_bw   off -D 3 -s 65536"
	"perf-nd-client-send_lat-D3           perf-client send_lat  off -D 3 -s 8"
	"perf-nd-client-write_lat-D3          perf-client write_lat off -D 3 -s 8"
	"perf-nd-client-read_lat-D3           perf-client read_lat  off -D 3 -s 8"
	"perf-nd-server-send-4096x200         perf-server send_bw   off -n 200 -s 4096"
	"perf-nd-server-send-1024x1500        perf-server send_bw   off -n 1500 -s 1024"
	"perf-nd-server-write-65536x100       perf-server write_bw  off -n 100 -s 65536"
	"perf-nd-server-read-65536x100        perf-server read_bw   off -n 100 -s 65536"
	"perf-nd-server-crc-send-4096x200     perf-server send_bw   on  -n 200 -s 4096"
	"perf-nd-server-send_lat-2x1000       perf-server send_lat  off -n 1000 -s 2"
	"perf-nd-server-write_lat-2x1000      perf-server write_lat off -n 1000 -s 2"
	"perf-nd-server-read_lat-64x500       perf-server read_lat  off -n 500 -s 64"
	"perf-nd-server-crc-send_lat-4096x300 perf-server send_lat  on  -n 300 -s 4096"
	"perf-nd-server-send_bw-all           perf-server send_bw   off -a -n 10"
	"perf-nd-server-write_bw-all          perf-server write_bw  off -a -n 5"
	"perf-nd-server-read_bw-all           perf-server read_bw   off -a -n 5"
	"perf-nd-server-send_lat-all          perf-server send_lat  off -a -n 5"
	"perf-nd-server-write_lat-all         perf-server write_lat off -a -n 5"
	"perf-nd-server-read_lat-all          perf-server read_lat  off -a -n 5"
	"perf-nd-server-send_bw-t16           perf-server send_bw   off -t 16 -n 400 -s 4096"
	"perf-nd-server-write_bw-t8           perf-server write_bw  off -t 8 -n 100 -s 65536"
	"perf-nd-server-read_bw-o2-t8         perf-server read_bw   off -o 2 -t 8 -n 100 -s 16384"
	"perf-nd-server-send_bw-q3-t16        perf-server send_bw   off -q 3 -t 16 -n 400 -s 4096"
	"perf-nd-server-write_bw-q4-t8        perf-server write_bw  off -q 4 -t 8 -n 100 -s 65536"
	"perf-nd-server-read_bw-q2-o2         perf-server read_bw   off -q 2 -o 2 -t 8 -n 100 -s 16384"
	"perf-nd-server-send_lat-t4-Q2         perf-server send_lat  off -t 4 -Q 2 -n 300 -s 64"
	"perf-nd-server-read_lat-o1           perf-server read_lat  off -o 1 -n 300 -s 64"
	"perf-nd-server-send_bw-D3            perf-server send_bw   off -D 3 -s 4096"
	"perf-nd-server-write_bw-D3           perf-server write_bw  off -D 3 -s 65536"
	"perf-nd-server-read_bw-D3            perf-server read_bw   off -D 3 -s 65536"
	"perf-nd-server-send_lat-D3           perf-server send_lat  off -D 3 -s 8"
	"perf-nd-server-write_lat-D3          perf-server write_lat off -D 3 -s 8"
	"perf-nd-server-read_lat-D3           perf-server read_lat  off -D 3 -s 8"
	# write_lat's server writes first, to an initiator that asked for no
	# ready-to-receive frame (siw's defaults): counts from perftest's least (5) up.
	"perf-nd-server-write_lat-8x5         perf-server write_lat off -n 5 -s 8"
	"perf-nd-server-write_lat-1x6         perf-server write_lat off -n 6 -s 1"
	"perf-nd-server-write_lat-64x5000     perf-server write_lat off -n 5000 -s 64"
	"perf-nd-server-crc-write_lat-8x200   perf-server write_lat on  -n 200 -s 8"
)
# Every test in both roles at sizes 1, 2, 8, 64, 4096 and 65536.
for test in send_bw write_bw read_bw send_lat write_lat read_lat; do
	for dir in perf-client perf-server; do
		for size in 1 2 8 64 4096 65536; do
			iters=200
			[[ $test == *_bw ]] && iters=100
			cases+=("${dir/perf-/perf-nd-}-$test-${size}x$iters $dir $test off -n $iters -s $size")
		done
	done
done
if [[ -n ${ND_CASES:-} ]]; then
	selected=()
	for c in "${cases[@]}"; do
		read -r name _ <<<"$c"
		[[ $name =~ $ND_CASES ]] && selected+=("$c")
	done
	cases=("${selected[@]}")
fi
# ND_REPEAT=N runs each case N times in a row (each time on a port of its own).
if ((${ND_REPEAT:-1} > 1)); then
	selected=()
	for c in "${cases[@]}"; do
		for ((r = 0; r < ND_REPEAT; r++)); do selected+=("$c"); done
	done
	cases=("${selected[@]}")
fi

passed=0 failed=0
# finish prints the summary line and exits.
finish() {
	echo "$passed passed, $failed failed"
	((failed == 0))
	exit
}
# fail_all fails every case with reason $1 (nothing could run).
fail_all() {
	local c name
	for c in "${cases[@]}"; do
		read -r name _ <<<"$c"
		echo "FAIL $name: $1"
		failed=$((failed + 1))
	done
	finish
}

if ((${#cases[@]} == 0)); then
	echo "no case matches ND_CASES=${ND_CASES:-}" >&2
	echo "0 passed, 0 failed"
	exit 2
fi
[[ -x $vmsh ]] || fail_all "no VM harness at $vmsh (set ND_VM_SH)"
[[ $(id -u) == 0 ]] || fail_all "vm.sh needs root"

tmp=$(mktemp -d /tmp/nd-siw-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [[ -n ${ND_BIN:-} ]]; then
	cp "$ND_BIN" "$tmp/nd" || fail_all "cannot copy ND_BIN=$ND_BIN"
else
	echo "building a static nd from $repo" >&2
	(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/nd" ./cmd/nd) >&2 || fail_all "go build ./cmd/nd failed"
fi

# The guest script: the case table, then the runner.
{
	echo '#!/bin/bash'
	echo 'CASES=('
	for c in "${cases[@]}"; do printf '  %q\n' "$c"; done
	echo ')'
	printf 'WIRE=%q\n' "${ND_WIRE:-}"
	cat "$here/kernel_watch.sh"
	cat <<'GUEST'
ADDR=192.0.2.1
T=300 # seconds per program (a bound for a hang: -a cases on a busy host take minutes)
# nd ends 10 s before its peer would, with SIGQUIT: Go then prints every
# goroutine's stack, which shows where a hung case waited (stacks below).
NDTO="timeout -s QUIT -k 5 $((T - 10))"
cd /tmp

# MPA frames only (payload starting "MPA "), to tell whether CRC was agreed.
PO='((tcp[12:1] & 0xf0) >> 2)'
MPA="tcp[$PO:4] = 0x4d504120"
REPLY_CRC="$MPA and tcp[$PO+7:2] = 0x5265 and tcp[$PO+9:1] = 0x70 and (tcp[$PO+16:1] & 0x40) != 0"
REPLY="$MPA and tcp[$PO+7:2] = 0x5265 and tcp[$PO+9:1] = 0x70"
tcpdump -Z root -i lo -s 128 -U -w /tmp/mpa.pcap "$MPA" 2>/tmp/tcpdump.log & tdpid=$!
if [[ -n $WIRE ]]; then
	tcpdump -Z root -i lo -s 256 -U -w /tmp/wire.pcap tcp 2>/tmp/wire.log &
	for i in $(seq 50); do grep -q listening /tmp/wire.log && break; sleep 0.1; done
fi
for i in $(seq 50); do grep -q listening /tmp/tcpdump.log && break; sleep 0.1; done
kw_start

# waitport PORT: wait (bounded) until something listens on TCP PORT.
waitport() {
	local i
	for i in $(seq 100); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# tailof FILE: the end of a log, indented and cut short, for a failure
# report; for an nd that timed out, the goroutines and godirect frames of
# the stack dump SIGQUIT made it print instead.
tailof() {
	if grep -q '^goroutine [0-9]' "$1"; then
		grep -E '^goroutine [0-9]|^main\.|github.com/godirect/nd' "$1" | grep -v '^\s*/' | head -n 80 | cut -c1-160 | sed 's/^/    | /'
	else
		tail -n 5 "$1" | cut -c1-160 | sed 's/^/    | /'
	fi
}

# count FILTER: MPA frames captured so far that match FILTER.
count() { tcpdump -Z root -r /tmp/mpa.pcap -nn "$1" 2>/dev/null | wc -l; }

# perfargs: what the case's ARGS (the array args) make each side print:
# sets sizes (the row sizes), iters (a regexp of the #iterations column of
# the client's rows) and q.
perfargs() {
	local i n=1000 s=2 all= dur=
	q=1
	[[ $test == *_bw ]] && { n=5000; s=65536; }
	for ((i = 0; i < ${#args[@]}; i++)); do
		case ${args[i]} in
		-a) all=1 ;;
		-n) n=${args[i + 1]} ;;
		-s) s=${args[i + 1]} ;;
		-D) dur=${args[i + 1]} ;;
		-q) q=${args[i + 1]} ;;
		esac
	done
	sizes=$s
	[[ -n $all ]] && sizes=$(for ((i = 1; i < 24; i++)); do echo $((1 << i)); done)
	if [[ -n $dur ]]; then
		iters='[0-9]+'
	elif [[ $test == *_bw ]]; then
		iters=$((n * q)) # perftest counts the iterations of every connection
	else
		iters=$n
	fi
}

# rowsmissing LOG SIZES: the sizes of SIZES with no result row in LOG.
rowsmissing() {
	local z miss=
	for z in $2; do
		# (perftest prints inf or nan when its clock reading failed)
		grep -Eq "^ *$z +$iters +([0-9]|inf|-?nan)" "$1" || miss+="$z "
	done
	echo "${miss% }"
}

# perfcase: one perftest -R case (perf-client or perf-server); the variables
# of the loop below name it.
perfcase() {
	local port=$((18600 + idx)) srv cli srv_rc cli_rc spid replies creplies reason i sizes iters q
	local ndcrc=() srvsizes miss
	perfargs
	[[ $crc == on ]] && ndcrc=(-crc)
	local replies0 creplies0
	replies0=$(count "tcp src port $port and $REPLY")
	creplies0=$(count "tcp src port $port and $REPLY_CRC")
	rm -f srv.log cli.log
	if [[ $dir == perf-client ]]; then
		srv="ib_$test -R"; cli="nd perf $test -R"
		timeout $T ib_$test -d siw0 -R -F -p "$port" "${args[@]}" >srv.log 2>&1 & spid=$!
		waitport "$port" || echo "note: $name: no listener on port $port seen, trying anyway"
		$NDTO /inject/nd perf $test -R -p "$port" "${args[@]}" "${ndcrc[@]}" $ADDR >cli.log 2>&1
		cli_rc=$?
	else
		srv="nd perf $test -R --server"; cli="ib_$test -R"
		$NDTO /inject/nd perf $test -R --server --bind $ADDR -p "$port" "${args[@]}" "${ndcrc[@]}" >srv.log 2>&1 & spid=$!
		waitport "$port" || echo "note: $name: no listener on port $port seen, trying anyway"
		timeout $T ib_$test -d siw0 -R -F -p "$port" "${args[@]}" $ADDR >cli.log 2>&1
		cli_rc=$?
	fi
	if ((cli_rc != 0)); then
		for i in $(seq 50); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
		kill $spid 2>/dev/null
	fi
	wait $spid; srv_rc=$?
	for i in 1 2 3 4 5; do # let tcpdump write the last MPA frame
		sleep 0.2
		replies=$(($(count "tcp src port $port and $REPLY") - replies0))
		((replies < q + 1)) || break
	done
	creplies=$(($(count "tcp src port $port and $REPLY_CRC") - creplies0))
	reason=
	((cli_rc == 0)) || reason+="$cli exit $cli_rc; "
	((srv_rc == 0)) || reason+="$srv exit $srv_rc; "
	# The client prints a row per size. The server: send_bw, send_lat and
	# write_lat theirs too, write_bw and read_bw the client's report of
	# its last size, read_lat none.
	miss=$(rowsmissing cli.log "$sizes")
	[[ -z $miss ]] || reason+="no result row with $iters iterations for size(s) $miss from $cli; "
	case $test in
	write_bw | read_bw) srvsizes=$(echo "$sizes" | tail -n 1) ;;
	read_lat) srvsizes= ;;
	*) srvsizes=$sizes ;;
	esac
	miss=$(rowsmissing srv.log "$srvsizes")
	[[ -z $miss ]] || reason+="no result row with $iters iterations for size(s) $miss from $srv; "
	if ((replies != q + 1)); then
		reason+="$replies MPA replies seen on port $port, want $((q + 1)) (control and $q data); "
	elif [[ $crc == on && $creplies != "$replies" ]]; then
		reason+="CRC asked for but $((replies - creplies)) MPA replies have no C flag; "
	elif [[ $crc == off && $creplies != 0 ]]; then
		reason+="an MPA reply has the C flag although nobody asked for CRC; "
	fi
	if [[ -z $reason ]]; then
		echo "PASS $name ($cli -> $srv, ${args[*]}, crc $crc)"
	else
		echo "FAIL $name ($cli -> $srv, ${args[*]}, crc $crc): ${reason%; }"
		echo "  client ($cli):"; tailof cli.log
		echo "  server ($srv):"; tailof srv.log
		echo "  kernel (siw):"; dmesg | grep -i siw | tail -n 6 | sed 's/^/    | /'
		if [[ -n $WIRE ]]; then
			echo "  wire (port $port):"
			# Bulk data segments are left out (their headers are enough
			# to follow the stream): every segment of at most 400 bytes,
			# with its bytes.
			tcpdump -Z root -r /tmp/wire.pcap -nn -X "tcp port $port and less 400" 2>/dev/null | head -n 3000 | sed 's/^/    | /'
		fi
	fi
}

idx=0
for c in "${CASES[@]}"; do
	read -r name dir size count crc <<<"$c"
	idx=$((idx + 1))
	kw_case "$name"
	if [[ $dir == perf-* ]]; then
		read -r name dir test crc rest <<<"$c"
		read -r -a args <<<"$rest"
		perfcase
		continue
	fi
	port=$((7300 + idx))
	pargs=(-p "$port")
	[[ $name == *-defaults ]] && { pargs=(); port=7174; }
	args=(-C "$count")
	if [[ $size != - ]]; then args+=(-S "$size"); else size=64; fi
	replies0=$(count "tcp src port $port and $REPLY")
	creplies0=$(count "tcp src port $port and $REPLY_CRC")
	ndcrc=()
	[[ $crc == on ]] && ndcrc=(-crc)
	rm -f srv.log cli.log
	if [[ $dir == nd-client ]]; then
		srv="rping -s"; cli="nd rping -c"
		timeout $T rping -s -a $ADDR "${pargs[@]}" "${args[@]}" -v >srv.log 2>&1 & spid=$!
		waitport "${port}" || echo "note: $name: no listener on port $port seen, trying anyway"
		$NDTO /inject/nd rping -c -a $ADDR "${pargs[@]}" "${args[@]}" -v -V "${ndcrc[@]}" >cli.log 2>&1
		crc_rc=$?
		pings=$(grep -c '^ping data: rdma-ping-' cli.log)
	else
		srv="nd rping -s"; cli="rping -c"
		$NDTO /inject/nd rping -s -a $ADDR "${pargs[@]}" "${args[@]}" -V "${ndcrc[@]}" >srv.log 2>&1 & spid=$!
		waitport "${port}" || echo "note: $name: no listener on port $port seen, trying anyway"
		timeout $T rping -c -a $ADDR "${pargs[@]}" "${args[@]}" -v -V >cli.log 2>&1
		crc_rc=$?
		pings=$(grep -c '^ping data: rdma-ping-' cli.log)
	fi
	if ((crc_rc != 0)); then
		# A server whose client failed may wait for a connection forever.
		for i in $(seq 50); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
		kill $spid 2>/dev/null
	fi
	wait $spid; src=$?
	for i in 1 2 3 4 5; do # let tcpdump write the last MPA frame
		sleep 0.2
		replies=$(($(count "tcp src port $port and $REPLY") - replies0))
		((replies == 0)) || break
	done
	creplies=$(($(count "tcp src port $port and $REPLY_CRC") - creplies0))
	reason=
	((crc_rc == 0)) || reason+="$cli exit $crc_rc; "
	((src == 0)) || reason+="$srv exit $src; "
	((pings == count)) || reason+="$pings of $count pings echoed; "
	if ((replies != 1)); then
		reason+="$replies MPA replies seen on port $port, want 1; "
	elif [[ $crc == on && $creplies != 1 ]]; then
		reason+="CRC asked for but the MPA reply has no C flag; "
	elif [[ $crc == off && $creplies != 0 ]]; then
		reason+="the MPA reply has the C flag although nobody asked for CRC; "
	fi
	if [[ -z $reason ]]; then
		echo "PASS $name ($cli -> $srv, size $size, $count pings, crc $crc)"
	else
		echo "FAIL $name ($cli -> $srv, size $size, $count pings, crc $crc): ${reason%; }"
		echo "  client ($cli):"; tailof cli.log
		echo "  server ($srv):"; tailof srv.log
	fi
done
kill $tdpid 2>/dev/null
wait $tdpid 2>/dev/null
exit 0
GUEST
} >"$tmp/guest.sh"

echo "booting the VM: ${#cases[@]} cases" >&2
"$vmsh" -t "$vm_timeout" -l "$tmp/console" -i "$tmp/nd" -s "$tmp/guest.sh" >"$tmp/out" 2>"$tmp/err"
vmrc=$?
# Guest output: everything but the result lines is context for failures.
kbug=
while IFS= read -r line; do
	case $line in
	"PASS "*) passed=$((passed + 1)) ;;
	"FAIL "*) failed=$((failed + 1)) ;;
	"KERNEL-BUG during "*) kbug=${line#KERNEL-BUG during } ;;
	esac
	printf '%s\n' "$line"
done <"$tmp/out"
results=$((passed + failed))
# A BUG the guest could not report (the kernel stopped): the console has it.
if [[ -z $kbug ]] && grep -qE "$KW_PATTERN" "$tmp/console" 2>/dev/null; then
	kbug="(unknown: the guest did not report it)"
	echo "KERNEL-BUG in the guest console:"
	grep -E -A 40 "$KW_PATTERN" "$tmp/console" | head -n 80 | sed 's/^/    | /'
fi
if [[ -n $kbug ]]; then
	# The case in progress is the first without a result.
	for c in "${cases[@]:results}"; do
		read -r name _ <<<"$c"
		if [[ $name == "$kbug" ]]; then
			echo "FAIL $name: the guest kernel hit a BUG or oops during this case (its trace is above)"
		else
			echo "FAIL $name: not run (the guest kernel hit a BUG or oops during $kbug)"
		fi
		failed=$((failed + 1))
	done
elif ((vmrc != 0 || results != ${#cases[@]})); then
	echo "vm.sh exited $vmrc after $results of ${#cases[@]} cases; its diagnostics:"
	sed 's/^/    | /' "$tmp/err" | tail -n 20
	for c in "${cases[@]:results}"; do
		read -r name _ <<<"$c"
		echo "FAIL $name: not run (vm.sh exit $vmrc)"
		failed=$((failed + 1))
	done
fi
finish
