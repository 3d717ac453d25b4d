#!/usr/bin/env bash
# siw_test.sh - interop test of `nd rping` against rdma-core's rping, and of
# `nd perf send_bw|write_bw|read_bw -R` against perftest 6.06's ib_*_bw -R,
# over the Linux kernel's soft-iWARP (siw), in the throw-away VM of
# ../../shared/interop/vm.sh (see README.md beside this script).
#
# It builds a static nd binary, boots the VM once, and runs every case of the
# table below in it, over siw0 (192.0.2.1 on dummy0, the VM's default links):
#
#   nd-client  `nd rping -c -V` against `rping -s`
#   nd-server  `rping -c -V` against `nd rping -s -V`
#   perf-nd-client-*  `nd perf TEST_bw -R` against `ib_TEST_bw -R -d siw0`
#   perf-nd-server-*  `ib_TEST_bw -R -d siw0` against `nd perf TEST_bw -R --server`
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
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel_watch.sh
. "$here/kernel_watch.sh" # KW_PATTERN
repo=$(cd "$here/.." && pwd)
vmsh=${ND_VM_SH:-$here/../../shared/interop/vm.sh}
vm_timeout=${ND_VM_TIMEOUT:-600}

# The cases: NAME DIRECTION SIZE COUNT CRC [TEST]. SIZE "-" and a NAME ending
# in "-defaults" run rping's defaults (size 64, port 7174) without -S and -p.
# Sizes stay within rping's limits (26 to 65535). The perf-* directions run
# perftest 6.06's -R protocol (iwarp.md section 8) for TEST (send, write or
# read), COUNT iterations of SIZE bytes:
#   perf-client  `nd perf TEST_bw -R ... 192.0.2.1` against `ib_TEST_bw -R -d siw0`
#   perf-server  `ib_TEST_bw -R -d siw0 ... 192.0.2.1` against `nd perf TEST_bw -R --server`
cases=(
	"nd-client-defaults       nd-client -     10  off"
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
	"nd-server-26x3           nd-server 26    3   off"
	"nd-server-1000x100       nd-server 1000  100 off"
	"nd-server-65000x20       nd-server 65000 20  off"
	"nd-server-65535x5        nd-server 65535 5   off"
	"nd-server-crc-64x10      nd-server 64    10  on"
	"nd-server-crc-26x3       nd-server 26    3   on"
	"nd-server-crc-1000x100   nd-server 1000  100 on"
	"nd-server-crc-65000x20   nd-server 65000 20  on"
	"nd-server-crc-65535x5    nd-server 65535 5   on"
	"perf-nd-client-send-4096x200     perf-client 4096  200  off send"
	"perf-nd-client-send-1024x1500    perf-client 1024  1500 off send"
	"perf-nd-client-write-65536x100   perf-client 65536 100  off write"
	"perf-nd-client-read-65536x100    perf-client 65536 100  off read"
	"perf-nd-client-crc-read-4096x200 perf-client 4096  200  on  read"
	"perf-nd-server-send-4096x200     perf-server 4096  200  off send"
	"perf-nd-server-send-1024x1500    perf-server 1024  1500 off send"
	"perf-nd-server-write-65536x100   perf-server 65536 100  off write"
	"perf-nd-server-read-65536x100    perf-server 65536 100  off read"
	"perf-nd-server-crc-send-4096x200 perf-server 4096  200  on  send"
)
if [[ -n ${ND_CASES:-} ]]; then
	selected=()
	for c in "${cases[@]}"; do
		read -r name _ <<<"$c"
		[[ $name =~ $ND_CASES ]] && selected+=("$c")
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
	cat "$here/kernel_watch.sh"
	cat <<'GUEST'
ADDR=192.0.2.1
T=120 # seconds per program
cd /tmp

# MPA frames only (payload starting "MPA "), to tell whether CRC was agreed.
PO='((tcp[12:1] & 0xf0) >> 2)'
MPA="tcp[$PO:4] = 0x4d504120"
REPLY_CRC="$MPA and tcp[$PO+7:2] = 0x5265 and tcp[$PO+9:1] = 0x70 and (tcp[$PO+16:1] & 0x40) != 0"
REPLY="$MPA and tcp[$PO+7:2] = 0x5265 and tcp[$PO+9:1] = 0x70"
tcpdump -Z root -i lo -s 128 -U -w /tmp/mpa.pcap "$MPA" 2>/tmp/tcpdump.log & tdpid=$!
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

# tailof FILE: the end of a log, indented and cut short, for a failure report.
tailof() { tail -n 5 "$1" | cut -c1-160 | sed 's/^/    | /'; }

# count FILTER: MPA frames captured so far that match FILTER.
count() { tcpdump -Z root -r /tmp/mpa.pcap -nn "$1" 2>/dev/null | wc -l; }

# perfcase: one perftest -R case (perf-client or perf-server); the variables
# of the loop below name it.
perfcase() {
	local port=$((18600 + idx)) srv cli srv_rc cli_rc spid replies creplies reason i
	local pt=(-R -p "$port" -n "$count" -s "$size")
	local ndcrc=()
	[[ $crc == on ]] && ndcrc=(-crc)
	local replies0 creplies0
	replies0=$(count "tcp src port $port and $REPLY")
	creplies0=$(count "tcp src port $port and $REPLY_CRC")
	rm -f srv.log cli.log
	if [[ $dir == perf-client ]]; then
		srv="ib_${test}_bw -R"; cli="nd perf ${test}_bw -R"
		timeout $T ib_${test}_bw -d siw0 "${pt[@]}" >srv.log 2>&1 & spid=$!
		waitport "$port" || echo "note: $name: no listener on port $port seen, trying anyway"
		timeout $T /inject/nd perf ${test}_bw "${pt[@]}" "${ndcrc[@]}" $ADDR >cli.log 2>&1
		cli_rc=$?
	else
		srv="nd perf ${test}_bw -R --server"; cli="ib_${test}_bw -R"
		timeout $T /inject/nd perf ${test}_bw --server --bind $ADDR "${pt[@]}" "${ndcrc[@]}" >srv.log 2>&1 & spid=$!
		waitport "$port" || echo "note: $name: no listener on port $port seen, trying anyway"
		timeout $T ib_${test}_bw -d siw0 "${pt[@]}" $ADDR >cli.log 2>&1
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
		((replies < 2)) || break
	done
	creplies=$(($(count "tcp src port $port and $REPLY_CRC") - creplies0))
	reason=
	((cli_rc == 0)) || reason+="$cli exit $cli_rc; "
	((srv_rc == 0)) || reason+="$srv exit $srv_rc; "
	# Both print the bandwidth row: #bytes, then #iterations.
	grep -Eq "^ *$size +$count +[0-9]" cli.log || reason+="no result row for $size bytes x $count from $cli; "
	grep -Eq "^ *$size +$count +[0-9]" srv.log || reason+="no result row for $size bytes x $count from $srv; "
	if ((replies != 2)); then
		reason+="$replies MPA replies seen on port $port, want 2 (control and data); "
	elif [[ $crc == on && $creplies != 2 ]]; then
		reason+="CRC asked for but $((2 - creplies)) MPA replies have no C flag; "
	elif [[ $crc == off && $creplies != 0 ]]; then
		reason+="an MPA reply has the C flag although nobody asked for CRC; "
	fi
	if [[ -z $reason ]]; then
		echo "PASS $name ($cli -> $srv, ${test}_bw, size $size, $count iterations, crc $crc)"
	else
		echo "FAIL $name ($cli -> $srv, ${test}_bw, size $size, $count iterations, crc $crc): ${reason%; }"
		echo "  client ($cli):"; tailof cli.log
		echo "  server ($srv):"; tailof srv.log
		echo "  kernel (siw):"; dmesg | grep -i siw | tail -n 6 | sed 's/^/    | /'
	fi
}

idx=0
for c in "${CASES[@]}"; do
	read -r name dir size count crc test <<<"$c"
	idx=$((idx + 1))
	kw_case "$name"
	if [[ $dir == perf-* ]]; then
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
		timeout $T /inject/nd rping -c -a $ADDR "${pargs[@]}" "${args[@]}" -v -V "${ndcrc[@]}" >cli.log 2>&1
		crc_rc=$?
		pings=$(grep -c '^ping data: rdma-ping-' cli.log)
	else
		srv="nd rping -s"; cli="rping -c"
		timeout $T /inject/nd rping -s -a $ADDR "${pargs[@]}" "${args[@]}" -V "${ndcrc[@]}" >srv.log 2>&1 & spid=$!
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
