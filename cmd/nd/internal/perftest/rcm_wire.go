package perftest

// nd perf -R: what perftest 6.06's rdma_cm protocol puts on its control
// connection (as perftest's src/perftest_communication.c writes it), and
// the constants of the protocol.

import (
	"encoding/binary"
	"time"
)

const (
	rcmVersion      = "6.06" // the perftest version nd perf -R claims
	rcmVersionSize  = 16     // sizeof(user_param.version)
	rcmMinVersion   = 5.70   // perftest refuses older peers
	rcmWideVersion  = 6.28   // from this version on pingpong_dest has 64 bytes
	rcmDestSize     = 56     // sizeof(struct pingpong_dest) in 6.06
	rcmWideDestSize = 64     // and in 6.28 and later
	rcmRecvSize     = 512    // our control Receive: at least any message a perftest sends
	rcmCacheLine    = 64     // the cache line size we announce
	rcmMTU          = "3"    // IBV_MTU_1024 as text, what siw reports
	rcmMaxRxDepth   = 512    // perftest's rx_depth default for the Send tests
	rcmReportFields = 5      // xchg_bw_reports: size, iters, peak, average, message rate
	rcmCreditSlots  = 8      // credit Writes in flight per connection on the send_bw server
	rcmConnectTries = 10     // perftest retries a refused data connection 10 times
	rcmConnectPause = 100 * time.Millisecond
	rcmLatTail      = 2 // the latency tests leave out this many of the slowest iterations
)

// rcmDest is perftest's struct pingpong_dest.
type rcmDest struct {
	lid, outReads, qpn, psn uint32
	rkey                    uint32
	vaddr                   uint64
	gid                     [16]byte
	srqn, gidIndex          uint32
}

// put writes d into b in 6.06's 56-byte layout, or with wide in 6.28's
// 64-byte one (tail_markers_vaddr at 32 pushes the gid and the rest back),
// and returns the written part.
func (d rcmDest) put(b []byte, wide bool) []byte {
	n := rcmDestSize
	if wide {
		n = rcmWideDestSize
	}
	b = b[:n]
	clear(b)
	be := binary.BigEndian
	be.PutUint32(b[0:], d.lid)
	be.PutUint32(b[4:], d.outReads)
	be.PutUint32(b[8:], d.qpn)
	be.PutUint32(b[12:], d.psn)
	be.PutUint32(b[16:], d.rkey)
	be.PutUint64(b[24:], d.vaddr)
	g := 32
	if wide {
		g = 40
	}
	copy(b[g:g+16], d.gid[:])
	be.PutUint32(b[g+16:], d.srqn)
	be.PutUint32(b[g+20:], d.gidIndex)
	return b
}

// parseRcmDest reads a pingpong_dest in the layout put writes; b holds at
// least that layout's size.
func parseRcmDest(b []byte, wide bool) rcmDest {
	be := binary.BigEndian
	d := rcmDest{
		lid: be.Uint32(b[0:]), outReads: be.Uint32(b[4:]), qpn: be.Uint32(b[8:]), psn: be.Uint32(b[12:]),
		rkey: be.Uint32(b[16:]), vaddr: be.Uint64(b[24:]),
	}
	g := 32
	if wide {
		g = 40
	}
	copy(d.gid[:], b[g:g+16])
	d.srqn, d.gidIndex = be.Uint32(b[g+16:]), be.Uint32(b[g+20:])
	return d
}

// rcmReport is perftest's bw_report_data as xchg_bw_reports sends it:
// bandwidths in MB/sec, the message rate in Mpps.
type rcmReport struct {
	size, iters          uint64
	peak, average, mRate float64
}

// rcmRxDepth is the Receives perftest keeps posted per connection in the
// Send tests for iters iterations (0: by time) of one size (all: -a): 512,
// at most iters, and made even when one size runs by iterations.
func rcmRxDepth(iters int, all bool) int {
	if iters == 0 {
		return rcmMaxRxDepth
	}
	d := min(rcmMaxRxDepth, iters)
	if d%2 == 1 && !all {
		d++
	}
	return d
}
