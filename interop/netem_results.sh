#!/usr/bin/env bash
# netem_results.sh GUEST_OUTPUT SECONDS REVISION - the results file of
# netem_test.sh (bench/netem-results.txt) from the ROW lines of a run's
# guest output: correctness, throughput against plain TCP, latency,
# connection set-up and the partitions.
set -euo pipefail
in=$1 seconds=$2 rev=$3
awk -v seconds="$seconds" -v rev="$rev" -v date="$(date -u +%Y-%m-%d)" '
function kv(line, key,    i, n, f, m) {
	# the value of key=... in line (quoted values may hold spaces)
	if (match(line, " " key "=\"[^\"]*\"")) {
		m = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 4)
		return m
	}
	if (match(line, " " key "=[^ ]*")) return substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
	return ""
}
function ratio(x, base) { return base > 0 ? sprintf("%.2fx", x / base) : "-" }
/^FAIL / { fails[++nf] = $0; next }
/^ROW env / { env = $0; next }
/^ROW partition-/ { part[++np] = $0; next }
/^ROW / {
	c = $2
	if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
	for (i = 3; i <= NF; i++) {
		split($i, p, "=")
		if (p[1] != "") v[c, p[1]] = p[2]
	}
	if ($0 ~ / connect_times=/) v[c, "connect_times"] = kv($0, "connect_times")
}
END {
	# the conditions in the order of netem_test.sh, whatever order the input
	# (one run, or the outputs of several runs one after the other) has
	nc2 = 0
	n = split("clean delay10 delay50 loss0.1 loss1 loss5 reorder dup loss1-delay25 rate100", canon, " ")
	for (i = 1; i <= n; i++) if (canon[i] in seen) order2[++nc2] = canon[i]
	for (i = 1; i <= nc; i++) { c = order[i]; known = 0; for (j = 1; j <= n; j++) if (canon[j] == c) known = 1; if (!known) order2[++nc2] = c }
	for (i = 1; i <= nc2; i++) order[i] = order2[i]
	netem["clean"] = "none"
	netem["delay10"] = "delay 10ms 1ms (each way)"
	netem["delay50"] = "delay 50ms 5ms (each way)"
	netem["loss0.1"] = "loss 0.1%"
	netem["loss1"] = "loss 1%"
	netem["loss5"] = "loss 5%"
	netem["reorder"] = "delay 10ms reorder 25%"
	netem["dup"] = "duplicate 1%"
	netem["loss1-delay25"] = "delay 25ms loss 1%"
	netem["rate100"] = "tbf rate 100mbit burst 64kb latency 50ms"
	rtt["delay10"] = 20000; rtt["delay50"] = 100000
	printf "godirect tcp over an impaired link: interop/netem_test.sh, %s, revision %s\n", date, rev
	printf "VM: %s; the run took %s s\n", substr(env, 9), seconds
	printf "Two network namespaces joined by a veth pair, the queueing discipline on both ends.\n"
	printf "The VM runs under TCG (no KVM): every figure is emulation-bound and noisy; compare within a row.\n\n"
	printf "Correctness (every byte checked, every request completed exactly once):\n"
	printf "%-14s %-42s %-7s %-9s %-9s %-9s %s\n", "condition", "netem", "verify", "verify", "rping", "perftest", "ndnet io.Copy"
	printf "%-14s %-42s %-7s %-9s %-9s %-9s %s\n", "", "", "", "crc", "siw", "siw", "SHA-256"
	for (i = 1; i <= nc; i++) {
		c = order[i]
		sha = v[c, "sha"] " (" sprintf("%.0f", v[c, "sha_bytes"] / 1048576) " MiB)"
		printf "%-14s %-42s %-7s %-9s %-9s %-9s %s\n", c, netem[c], v[c, "verify"], v[c, "verify-crc"], v[c, "rping"], v[c, "perftest"], sha
	}
	printf "\nThroughput, MB/s (10^6 B/s), one run each; ratio to plain Go TCP io.Copy (mean of a run before and after); target >= 0.90x:\n"
	printf "%-14s %9s %16s %16s %16s %16s %16s\n", "condition", "TCP", "ndnet io.Copy", "send_bw 64K", "send_bw 1M", "write_bw 64K", "write_bw 1M"
	for (i = 1; i <= nc; i++) {
		c = order[i]
		t = (v[c, "tcp1"] + v[c, "tcp2"]) / 2
		if (t == 0) continue
		line = sprintf("%-14s %9.2f", c, t)
		miss = ""
		n = split("ndnet send64k send1m write64k write1m", k, " ")
		for (j = 1; j <= n; j++) {
			x = v[c, k[j]]
			if (x == "-" || x == "") { line = line sprintf(" %8s %7s", "-", "-"); continue }
			line = line sprintf(" %8.2f %7s", x, ratio(x, t))
			if (t > 0 && x / t < 0.9) miss = miss " " k[j]
		}
		printf "%s%s\n", line, (miss == "" ? "" : "   below 0.90x:" miss)
	}
	printf "\nPlain TCP spread (before / after): "
	for (i = 1; i <= nc; i++) { c = order[i]; if (v[c, "tcp1"] != "") printf "%s %s/%s  ", c, v[c, "tcp1"], v[c, "tcp2"] }
	printf "\n\nLatency, nd perf send_lat, 2 B, median (t_typical):\n"
	printf "%-14s %14s %14s %22s %8s %s\n", "condition", "half RTT us", "RTT ms", "bound: 1.05 x netem + clean", "verdict", "plain TCP ping-pong RTT ms"
	clean = v["clean", "lat_us"] * 2 / 1000
	for (i = 1; i <= nc; i++) {
		c = order[i]
		if (v[c, "lat_us"] == "") continue
		r = v[c, "lat_us"] * 2 / 1000
		b = (c in rtt) ? rtt[c] / 1000 * 1.05 + clean : 0
		printf "%-14s %14s %14.3f %22s %8s %s\n", c, v[c, "lat_us"], r, (b ? sprintf("%.3f ms", b) : "-"), (b ? (r <= b ? "within" : "OVER") : "-"), (v[c, "tcp_lat_us"] == "" ? "-" : sprintf("%.3f", v[c, "tcp_lat_us"] * 2 / 1000))
	}
	printf "\nConnection set-up (Connect + CompleteConnect, each connection then used):\n"
	for (i = 1; i <= nc; i++) { c = order[i]; if (v[c, "connects"] != "") printf "  %-14s %s up, %s\n", c, v[c, "connects"], v[c, "connect_times"] }
	printf "\nPartitions (netem loss 100%% both ways); bound %s s after the cut (UserTimeout 10 s + one keepalive interval):\n", "11"
	for (i = 1; i <= np; i++) {
		line = part[i]
		sub(/^ROW /, "", line)
		printf "  %s\n", line
	}
	printf "\nFailed cases (%d):\n", nf
	for (i = 1; i <= nf; i++) printf "  %s\n", fails[i]
	printf "\nSeconds per condition (and per step: verify, verify crc, rping, perftest, sha, throughput, latency, connect):\n"
	n = split("verify verify_crc rping perftest sha throughput latency connect", st, " ")
	for (i = 1; i <= nc; i++) {
		c = order[i]
		if (v[c, "seconds"] == "") continue
		line = sprintf("  %-14s %8s:", c, v[c, "seconds"])
		for (j = 1; j <= n; j++) line = line sprintf(" %s", (v[c, "t_" st[j]] == "" ? "-" : v[c, "t_" st[j]]))
		printf "%s\n", line
	}
}' "$in"
