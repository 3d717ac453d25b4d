#!/usr/bin/env bash
# verbs_test.sh - runs provider/verbs's tests on real kernel RDMA devices in
# the throw-away VM of ../../shared/interop/vm.sh (soft-iWARP siw0 on
# 192.0.2.1, Soft-RoCE rxe0 on 192.0.2.2), and prints one line per case and
# "N passed, M failed" at the end. See docs/verbs.md.
#
# It builds the test binary on the host (cgo, -tags verbs: needs
# libibverbs-dev and librdmacm-dev), boots the VM once and runs in it:
#
#   1. TestConformance/<device>/...: the whole ndtest suite over siw0 and
#      over rxe0, and TestDataPath/<device>/...: zero allocations per
#      operation and the bytes moved;
#   2. TestMixed/siw0/{verbs-active,tcp-active}/... (one process per role):
#      ndtest's Connection,
#      Send, Receive, Read, Write and Memory cases between provider/verbs on
#      siw0 and provider/tcp on the same address, in both roles.
#
# Cases a device cannot do are skipped by the test binary, which prints a
# "SKIP-RULE pattern: reason" line for each; they are listed as SKIP here and
# counted in neither number.
#
# Environment:
#   ND_VM_SH       the VM harness (default: ../../shared/interop/vm.sh from here)
#   ND_VM_TIMEOUT  hard limit for the VM run in seconds (default 1500)
#   ND_TEST_BIN    use this test binary instead of building one
#   ND_CASES       run only these -test.run patterns, blank-separated, one
#                  test process each (instead of the runs above)
#   VERBS_NO_SKIPS=1  run the device-limited cases too
#   ND_TCP_LOG=1   provider/tcp in TestMixed logs its Terminates to stderr
#   ND_ALLOC_TRACE=1  TestDataPath logs the test process's top allocation sites
#   ND_OUT         also copy the VM's raw output (go test -v) to this file
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel_watch.sh
. "$here/kernel_watch.sh" # KW_PATTERN
repo=$(cd "$here/.." && pwd)
vmsh=${ND_VM_SH:-$here/../../shared/interop/vm.sh}
vm_timeout=${ND_VM_TIMEOUT:-1500}

passed=0 failed=0
finish() {
	echo "$passed passed, $failed failed"
	((failed == 0 && passed > 0))
	exit
}
fail_all() {
	echo "FAIL all: $1"
	failed=$((failed + 1))
	finish
}

[[ -x $vmsh ]] || fail_all "no VM harness at $vmsh (set ND_VM_SH)"
[[ $(id -u) == 0 ]] || fail_all "vm.sh needs root"

tmp=$(mktemp -d /tmp/nd-verbs-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [[ -n ${ND_TEST_BIN:-} ]]; then
	cp "$ND_TEST_BIN" "$tmp/verbs.test" || fail_all "cannot copy ND_TEST_BIN=$ND_TEST_BIN"
else
	echo "building the verbs test binary from $repo" >&2
	(cd "$repo" && CGO_ENABLED=1 go test -c -tags verbs -o "$tmp/verbs.test" ./provider/verbs/) >&2 ||
		fail_all "go test -c -tags verbs failed (apt-get install libibverbs-dev librdmacm-dev)"
fi

runs=("TestConformance|TestDataPath|TestRNRRetry" "TestMixed/.*/verbs-active/(Connection|Send|Receive|Read|Write|Memory)/" "TestMixed/.*/tcp-active/(Connection|Send|Receive|Read|Write|Memory)/")
# shellcheck disable=SC2206 # ND_CASES is a list of patterns without blanks
[[ -n ${ND_CASES:-} ]] && runs=($ND_CASES)
{
	echo '#!/bin/bash'
	echo 'RUNS=('
	for r in "${runs[@]}"; do printf '  %q\n' "$r"; done
	echo ')'
	[[ -n ${VERBS_NO_SKIPS:-} ]] && echo 'export VERBS_NO_SKIPS=1'
	[[ -n ${ND_TCP_LOG:-} ]] && echo 'export ND_TCP_LOG=1'
	[[ -n ${ND_ALLOC_TRACE:-} ]] && echo 'export ND_ALLOC_TRACE=1'
	cat "$here/kernel_watch.sh"
	cat <<'GUEST'
cd /tmp
ulimit -l unlimited
# The test running when the kernel stops, and what it printed.
kw_name() {
	local t
	t=$(grep -E '^\s*=== (RUN|CONT) ' /tmp/runset.out 2>/dev/null | tail -n 1 | awk '{print $3}')
	echo "${t:-$(cat /tmp/kw.case)}"
}
kw_context() {
	echo "=== KERNEL-BUG the test binary's last output:"
	tail -n 30 /tmp/runset.out | sed 's/^/    | /'
}
kw_start
echo "guest: $(uname -r); devices: $(ibv_devices | awk 'NR>2{printf "%s ", $1}')"
for r in "${RUNS[@]}"; do
	echo "=== RUNSET $r"
	kw_case "runset $r"
	: >/tmp/runset.out
	t=600; [[ $r == TestMixed* ]] && t=360
	# The binary runs in the background and is waited for with a deadline:
	# a thread stuck in the kernel (rdma_disconnect on a siw id whose peer
	# went away mid-handshake did that once) makes it unkillable, and then
	# the remaining runsets still run and the output so far is reported.
	/inject/verbs.test -test.run "$r" -test.v -test.count 1 -test.timeout ${t}s >/tmp/runset.out 2>&1 &
	pid=$!
	for ((i = 0; i < t + 30; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] && break
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; then
		kill -9 "$pid" 2>/dev/null
		cat /tmp/runset.out
		echo "=== RUNSET-HUNG the test binary did not exit within $((t + 30))s (kernel stacks:)"
		for task in /proc/$pid/task/*; do cat "$task/stack" 2>/dev/null | head -n 8; done
		echo "=== RUNSET-EXIT 124"
	elif kill -0 "$pid" 2>/dev/null; then
		# A zombie whose last thread is stuck in the kernel: wait would
		# never return.
		cat /tmp/runset.out
		echo "=== RUNSET-HUNG the test binary exited but a thread is stuck in the kernel (kernel stacks:)"
		for task in /proc/$pid/task/*; do cat "$task/stack" 2>/dev/null | head -n 8; done
		echo "=== RUNSET-EXIT 124"
	else
		wait "$pid"
		rc=$?
		cat /tmp/runset.out
		echo "=== RUNSET-EXIT $rc"
	fi
done
GUEST
} >"$tmp/guest.sh"

echo "booting the VM" >&2
"$vmsh" -t "$vm_timeout" -l "$tmp/console" -i "$tmp/verbs.test" -s "$tmp/guest.sh" >"$tmp/out" 2>"$tmp/err"
vmrc=$?
[[ -n ${ND_OUT:-} ]] && cp "$tmp/out" "$ND_OUT"

# Leaf cases: a --- line whose name is no other's prefix.
grep -E '^\s*--- (PASS|FAIL|SKIP): ' "$tmp/out" | sed -E 's/^\s*--- (PASS|FAIL|SKIP): ([^ ]+).*/\1 \2/' >"$tmp/results"
awk '{print $2}' "$tmp/results" | sort -u >"$tmp/names"
while read -r res name; do
	if grep -q -F "$name/" "$tmp/names"; then continue; fi
	case $res in
	PASS) passed=$((passed + 1)); echo "PASS $name" ;;
	FAIL) failed=$((failed + 1)); echo "FAIL $name" ;;
	SKIP) echo "SKIP $name" ;;
	esac
done <"$tmp/results"
grep -E '^SKIP-RULE ' "$tmp/out" | sort -u | sed 's/^SKIP-RULE /SKIP (rule) /'
if ((failed > 0)); then
	echo "failure messages:"
	grep -E '^\s+[a-z_]+\.go:[0-9]+: ' "$tmp/out" | grep -v -E 'device .* on |granted inline|sender.s Send completed with|more than the suite allocates' | sed 's/^\s*/    | /' | head -n 60
fi
grep -E '^(panic|fatal error|=== RUNSET-EXIT [^0]|=== RUNSET-HUNG|guest:)' "$tmp/out"
if grep -q -E '^=== RUNSET-HUNG' "$tmp/out"; then
	grep -A 40 -E '^=== RUNSET-HUNG' "$tmp/out" | sed 's/^/    | /' | head -n 40
	failed=$((failed + 1))
fi
if grep -q -E '^(panic:|fatal error)' "$tmp/out"; then
	grep -A 25 -E '^(panic:|fatal error)' "$tmp/out" | sed 's/^/    | /' | head -n 40
	failed=$((failed + 1))
fi
# A run-set whose test binary exited non-zero with no failure of its own
# said (a signal in C code prints no "panic:"): the test running then fails,
# and the tests after it did not run.
while IFS=$'\x1f' read -r name rc what; do
	echo "FAIL ${name:-(before its first test)}: the test binary exited $rc during it (${what:-no failure printed}); the tests after it in its run-set did not run"
	grep -m 1 -A 20 -E '^SIG[A-Z]+: ' "$tmp/out" | sed 's/^/    | /'
	failed=$((failed + 1))
done < <(awk '
	/^=== RUNSET / { last = ""; said = 0; what = ""; next }
	/^[[:space:]]*=== (RUN|CONT) / { last = $3 }
	/--- FAIL|^(panic:|fatal error)|^=== RUNSET-HUNG|^KERNEL-BUG/ { said = 1 }
	/^SIG[A-Z]+: / && what == "" { what = $0 }
	/^=== RUNSET-EXIT / { if ($3 != "0" && !said) printf "%s\x1f%s\x1f%s\n", last, $3, what }
' "$tmp/out")
kbug=$(grep -m 1 -E '^KERNEL-BUG during ' "$tmp/out" | sed 's/^KERNEL-BUG during //')
if [[ -z $kbug ]] && grep -qE "$KW_PATTERN" "$tmp/console" 2>/dev/null; then
	kbug="(unknown: the guest did not report it)"
	echo "KERNEL-BUG in the guest console:"
	grep -E -A 40 "$KW_PATTERN" "$tmp/console" | head -n 80 | sed 's/^/    | /'
fi
if [[ -n $kbug ]]; then
	sed -n '/^KERNEL-BUG/,$p' "$tmp/out" | head -n 160
	echo "FAIL $kbug: the guest kernel hit a BUG or oops during this test (its trace is above); the tests after it did not run"
	failed=$((failed + 1))
elif ((vmrc != 0)); then
	echo "vm.sh exited $vmrc; its diagnostics:"
	sed 's/^/    | /' "$tmp/err" | tail -n 20
	failed=$((failed + 1))
fi
finish
