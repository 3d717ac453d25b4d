# kernel_watch.sh - guest-side watch for a kernel BUG or oops, included by
# siw_test.sh and verbs_test.sh in the script they run in the VM (it is not
# run on its own).
#
# kw_start starts a watcher in the background that reads the kernel log
# twice a second. When a new "kernel BUG at", "BUG:", "Oops", "general
# protection fault", "Unable to handle kernel" or "Kernel panic" line
# appears it prints
#
#   KERNEL-BUG during <what kw_case named last>
#       | <the kernel log from the first such line on>
#
# kills every process the test script started (the case stops at once), and
# then the script itself, whose exit status is then 137. A process stuck in
# the kernel cannot be killed: if the script has not ended after 3 seconds
# the watcher powers the VM off (the host script still has the lines above).
# The host scripts turn the KERNEL-BUG line into a failure of that case.

KW_PATTERN='kernel BUG at|BUG: |Oops|general protection fault|Unable to handle kernel|Kernel panic'

# kw_case NAME: what runs from now on, for the report. A script that knows
# better defines kw_name (prints the name of what runs) and kw_context
# (prints what the report should show of its output so far) instead.
kw_case() { printf '%s\n' "$1" >/tmp/kw.case; }

# kw_kill_tree PID: kills PID's descendants, leaving out the watcher.
kw_kill_tree() {
	local c
	for c in $(ps -o pid= --ppid "$1"); do
		[[ $c == "$KW_WATCHER" ]] && continue
		kw_kill_tree "$c"
		kill -KILL "$c" 2>/dev/null
	done
}

# kw_watch MAIN: the watcher's loop; MAIN is the test script's pid.
kw_watch() {
	local main=$1 base n i
	KW_WATCHER=$BASHPID
	base=$(dmesg | grep -cE "$KW_PATTERN")
	while sleep 0.5; do
		n=$(dmesg | grep -cE "$KW_PATTERN")
		((n > base)) || continue
		sleep 1 # the rest of the trace
		if declare -F kw_name >/dev/null; then
			echo "KERNEL-BUG during $(kw_name)"
		else
			echo "KERNEL-BUG during $(cat /tmp/kw.case 2>/dev/null)"
		fi
		dmesg | awk -v pat="$KW_PATTERN" 'n < '"$base"' && $0 ~ pat {n++; next} n >= '"$base"' && (found || $0 ~ pat) {found = 1; print "    | " $0}' | head -n 120
		kw_kill_tree "$main"
		kill -KILL "$main" 2>/dev/null
		if declare -F kw_context >/dev/null; then kw_context; fi
		for i in $(seq 30); do
			kill -0 "$main" 2>/dev/null || exit 0
			sleep 0.1
		done
		echo "KERNEL-BUG: the test script did not end (a process is stuck in the kernel): powering the VM off"
		sleep 1
		poweroff -f
	done
}

# kw_start: starts the watcher for this script.
kw_start() {
	kw_case "(before the first case)"
	kw_watch $$ &
}
