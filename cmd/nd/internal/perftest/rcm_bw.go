package perftest

// nd perf -R's bandwidth tests: the client's stream of Sends, Writes or
// Reads on every connection, and the send_bw server's Receives and credit
// Writes.

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// stream runs the client's traffic of one size on every connection: up to
// the tx depth (read_bw: the Reads allowed) in flight on each, send_bw
// within the server's credits where it writes them, for the iterations or
// the duration. It
// returns the report of the size.
func (s *rcmSide) stream(ctx context.Context, size int) (rcmReport, error) {
	for _, c := range s.conns {
		c.scnt, c.ccnt = 0, 0
		c.sgl[0] = nd.SGE{Buffer: c.src[:size], Region: c.srcMR}
		c.rdesc = nd.MWDescriptor{Base: c.remote.vaddr, Length: uint64(size), Token: c.remote.rkey}
		if s.credits {
			c.resetCredit()
		}
	}
	clock := newRcmClock(s.dur)
	start := timing.Now()
	if clock != nil {
		clock.begin()
	}
	total, more := 0, true
	done := ctx.Done()
	var pace datapath.Pacer
	for spins := 1; ; spins++ {
		if more && clock.tick(total) {
			more = false
		}
		busy, pending, left := false, false, false
		for _, c := range s.conns {
			depth := len(c.results)
			if s.test.op == opRead {
				depth = min(depth, c.ord)
			}
			for more && (s.iters == 0 || c.scnt < s.iters) && c.scnt-c.ccnt < depth &&
				(!s.credits || c.scnt+1-c.creditCount() < s.rxd) {
				res := &c.results[c.scnt%len(c.results)]
				if c.posted != nil {
					c.posted[c.scnt] = int64(timing.Since(start))
				}
				var err error
				switch s.test.op {
				case opSend:
					err = c.s.EP.Send(res, c.sgl[:], 0)
				case opWrite:
					err = c.s.EP.Write(res, c.sgl[:], c.rdesc, 0, 0)
				case opRead:
					err = c.s.EP.Read(res, c.sgl[:], c.rdesc, 0, 0)
				}
				if err != nil {
					return rcmReport{}, fmt.Errorf("posting request %d: %w", c.scnt, err)
				}
				c.scnt++
				busy = true
			}
			if c.scnt > c.ccnt {
				for _, r := range c.reaper.Poll() {
					if c.scnt == c.ccnt || r != &c.results[c.ccnt%len(c.results)] {
						return rcmReport{}, datapath.ErrUnexpected
					}
					if err := r.Status.Err(); err != nil {
						return rcmReport{}, fmt.Errorf("request %d completed with %w", c.ccnt, err)
					}
					if c.completed != nil {
						c.completed[c.ccnt] = int64(timing.Since(start))
					}
					c.ccnt++
					total++
					busy = true
				}
			}
			pending = pending || c.scnt > c.ccnt
			left = left || (s.iters > 0 && c.scnt < s.iters)
		}
		if !pending && (!more || !left && s.iters > 0) {
			break
		}
		if !busy {
			pace.Idle()
			if spins%datapath.CheckEvery == 0 {
				select {
				case <-done:
					return rcmReport{}, fmt.Errorf("after %d requests: %w", total, ctx.Err())
				default:
				}
			}
		}
	}
	end := timing.Now()
	if clock != nil {
		n, d := clock.sample()
		return bwReport(size, n, d, 0), nil
	}
	peak := 0.0
	for _, c := range s.conns {
		peak += peakRate(c.posted, c.completed, s.iters)
	}
	return bwReport(size, total, end.Sub(start), peak), nil
}

// bwReport is the report of n messages of size bytes in d, with peak
// messages per second (0: none measured).
func bwReport(size, n int, d time.Duration, peak float64) rcmReport {
	r := rcmReport{size: uint64(size), iters: uint64(n)}
	secs := d.Seconds()
	if secs <= 0 || n == 0 {
		return r
	}
	rate := float64(n) / secs
	if peak > 0 {
		peak = max(peak, rate)
	}
	r.peak, r.average = bandwidthUnits(peak*float64(size), false), bandwidthUnits(rate*float64(size), false)
	r.mRate = rate / 1e6
	return r
}

// topUpReceives posts Receives on every connection until rx_depth are
// posted, each over the whole receive buffer, and starts the size's count.
func (s *rcmSide) topUpReceives() error {
	for _, c := range s.conns {
		buf, mr := c.src, c.srcMR
		if s.test.Lat {
			buf, mr = c.win, c.winMR
		}
		c.rsgl[0] = nd.SGE{Buffer: buf[:s.maxSize], Region: mr}
		c.rcnt = 0
		for c.rPosted-c.rDone < len(c.recvs) {
			if err := c.postReceive(); err != nil {
				return err
			}
		}
		c.rposted = len(c.recvs)
	}
	return nil
}

// postReceive posts the next Receive of the ring.
func (c *rcmConn) postReceive() error {
	if err := c.s.EP.Receive(&c.recvs[c.rPosted%len(c.recvs)], c.rsgl[:]); err != nil {
		return fmt.Errorf("posting Receive %d: %w", c.rPosted, err)
	}
	c.rPosted++
	return nil
}

// isReceive reports whether r is the Receive the connection waits for.
func (c *rcmConn) isReceive(r *nd.Result) bool {
	return c.rPosted > c.rDone && r == &c.recvs[c.rDone%len(c.recvs)]
}

// received takes the completed Receive r of size bytes and reposts one
// while the size needs more (iters 0: always).
func (c *rcmConn) received(r *nd.Result, size, iters int) error {
	if err := r.Status.Err(); err != nil {
		return fmt.Errorf("receive %d completed with %w", c.rcnt, err)
	}
	if r.BytesTransferred != size {
		return fmt.Errorf("a Send of %d bytes, want %d (-s)", r.BytesTransferred, size)
	}
	c.rDone++
	c.rcnt++
	if iters == 0 || c.rposted < iters {
		c.rposted++
		return c.postReceive()
	}
	return nil
}

// serveSends takes the client's Sends of one size on every connection and,
// where s.credits, RDMA-Writes the count received on a connection to the
// client's credit word every rx_depth/3 Receives, as perftest's
// run_iter_bw_server does over iWARP (which has no receiver-not-ready
// retry). It returns the server's own report of the size.
func (s *rcmSide) serveSends(ctx context.Context, size int) (rcmReport, error) {
	creditEvery := max(1, s.rxd/3)
	owed := make([]int, len(s.conns)) // the count to write, -1 for none
	for i, c := range s.conns {
		c.wPosted, c.wDone = 0, 0
		c.rdesc = nd.MWDescriptor{Base: c.remote.vaddr, Length: 4, Token: c.remote.rkey}
		owed[i] = -1
	}
	clock := newRcmClock(s.dur)
	var start timing.Instant
	total := 0
	done := ctx.Done()
	var pace datapath.Pacer
	for spins := 1; ; spins++ {
		ended := total > 0 && clock.tick(total)
		busy, left := false, false
		for i, c := range s.conns {
			if owed[i] >= 0 && c.wPosted-c.wDone < rcmCreditSlots && !ended {
				slot := c.wPosted % rcmCreditSlots
				src := c.credit[4*slot : 4*slot+4]
				binary.LittleEndian.PutUint32(src, uint32(owed[i]))
				c.wsgl[0] = nd.SGE{Buffer: src, Region: c.credMR}
				if err := c.s.EP.Write(&c.writes[slot], c.wsgl[:], c.rdesc, 0, 0); err != nil {
					return rcmReport{}, fmt.Errorf("posting a credit Write: %w", err)
				}
				c.wPosted++
				owed[i] = -1
			}
			for _, r := range c.reaper.Poll() {
				busy = true
				switch {
				case c.isReceive(r) && !ended:
					if err := c.received(r, size, s.iters); err != nil {
						return rcmReport{}, err
					}
					if total == 0 {
						start = timing.Now()
						if clock != nil {
							clock.begin()
						}
					}
					total++
					if s.credits && (c.rcnt%s.rxd)%creditEvery == 0 {
						owed[i] = c.rcnt
					}
				case c.isReceive(r):
					// A Send after the end, in a Receive still posted.
					c.rDone++
				case c.wPosted > c.wDone && r == &c.writes[c.wDone%rcmCreditSlots]:
					if err := r.Status.Err(); err != nil {
						return rcmReport{}, fmt.Errorf("a credit Write completed with %w", err)
					}
					c.wDone++
				default:
					return rcmReport{}, datapath.ErrUnexpected
				}
			}
			left = left || c.wPosted > c.wDone || (!ended && (owed[i] >= 0 || (s.iters > 0 && c.rcnt < s.iters) || s.iters == 0))
		}
		if !left {
			break
		}
		if !busy {
			pace.Idle()
			if spins%datapath.CheckEvery == 0 {
				select {
				case <-done:
					return rcmReport{}, fmt.Errorf("after %d Sends: %w", total, ctx.Err())
				default:
				}
			}
		}
	}
	if clock != nil {
		n, d := clock.sample()
		return bwReport(size, n, d, 0), nil
	}
	return bwReport(size, total, timing.Since(start), 0), nil
}
