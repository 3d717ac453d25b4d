package perftest

// nd perf -R's latency tests, on the first data connection as perftest
// (the others are set up and stay idle): send_lat's Send ping-pong,
// write_lat's RDMA Write ping-pong polling the last byte, read_lat's RDMA
// Reads one at a time. Each records when it posted each request; the
// iterations' times are the differences.

import (
	"context"
	"fmt"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// latRun is the state of one size of a latency test.
type latRun struct {
	s      *rcmSide
	ctx    context.Context
	size   int
	clock  *rcmClock
	start  timing.Instant
	stamps []int64 // when each request was posted (by iterations)
	pace   datapath.Pacer
	spins  int
}

// newLatRun prepares a size on the first connection.
func (s *rcmSide) newLatRun(ctx context.Context, size int, stamps []int64) *latRun {
	c := s.conns[0]
	for _, x := range s.conns {
		x.scnt, x.ccnt, x.arrived = 0, 0, 0
	}
	if c.src != nil {
		c.sgl[0] = nd.SGE{Buffer: c.src[:size], Region: c.srcMR}
	}
	c.rdesc = nd.MWDescriptor{Base: c.remote.vaddr, Length: uint64(size), Token: c.remote.rkey}
	lr := &latRun{s: s, ctx: ctx, size: size, clock: newRcmClock(s.dur), stamps: stamps}
	lr.start = timing.Now()
	if lr.clock != nil {
		lr.clock.begin()
	}
	return lr
}

// stamp records the post of request i.
func (lr *latRun) stamp(i int) {
	if i < len(lr.stamps) {
		lr.stamps[i] = int64(timing.Since(lr.start))
	}
}

// poll takes what completed on every connection: Receives (send_lat,
// counted as arrived on their connection and reposted) and the first
// connection's signaled requests.
func (lr *latRun) poll() error {
	s := lr.s
	for i, c := range s.conns {
		for _, r := range c.reaper.Poll() {
			switch {
			case c.recvs != nil && c.isReceive(r):
				if err := c.received(r, lr.size, s.iters); err != nil {
					return err
				}
				c.arrived++
			case i == 0 && c.scnt > c.ccnt && r == &c.results[c.ccnt%len(c.results)]:
				if err := r.Status.Err(); err != nil {
					return fmt.Errorf("request %d completed with %w", c.ccnt, err)
				}
				c.ccnt++
			case r == &c.silent:
				return fmt.Errorf("an unsignaled Send completed with %w", r.Status.Err())
			default:
				return datapath.ErrUnexpected
			}
		}
	}
	return nil
}

// idle is one empty turn of a waiting loop: it yields now and then and
// checks the context.
func (lr *latRun) idle(what string) error {
	lr.spins++
	lr.pace.Idle()
	if lr.spins%datapath.CheckEvery == 0 {
		if err := lr.ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// waitDone waits until every signaled request of the first connection
// completed.
func (lr *latRun) waitDone(count int) error {
	c := lr.s.conns[0]
	for c.ccnt < c.scnt {
		if err := lr.poll(); err != nil {
			return err
		}
		if c.ccnt == c.scnt {
			break
		}
		if lr.clock.tick(count) {
			return nil
		}
		if err := lr.idle("waiting for a completion"); err != nil {
			return err
		}
	}
	return nil
}

// pingPong is send_lat: the client Sends first, each side answers each
// message with one, every cq_mod-th Send (and the last) signaled.
func (s *rcmSide) pingPong(ctx context.Context, size int, stamps []int64) (*latRun, int, error) {
	lr := s.newLatRun(ctx, size, stamps)
	c := s.conns[0]
	scnt, rcnt := 0, 0
	poll := lr.poll
	for scnt < s.iters || rcnt < s.iters || s.iters == 0 {
		if (rcnt < s.iters || s.iters == 0) && !(scnt == 0 && !s.server) {
			for {
				if err := lr.poll(); err != nil {
					return nil, 0, err
				}
				if x := s.arrival(); x != nil {
					x.arrived--
					rcnt++
					break
				}
				if lr.clock.tick(rcnt) {
					return lr, rcnt, nil
				}
				if err := lr.idle(fmt.Sprintf("waiting for message %d", rcnt+1)); err != nil {
					return nil, 0, err
				}
			}
		}
		if lr.clock.tick(rcnt) {
			return lr, rcnt, nil
		}
		if scnt < s.iters || s.iters == 0 {
			lr.stamp(scnt)
			scnt++
			signaled := scnt%s.cqMod == 0 || scnt == s.iters
			res, flags := &c.silent, nd.FlagSilentSuccess
			if signaled {
				res, flags = &c.results[c.scnt%len(c.results)], 0
			}
			if err := datapath.SendWhenRoom(ctx, c.s.EP, res, c.sgl[:], flags, poll); err != nil {
				return nil, 0, fmt.Errorf("send %d: %w", scnt, err)
			}
			if signaled {
				c.scnt++
				if err := lr.waitDone(rcnt); err != nil {
					return nil, 0, err
				}
			}
		}
	}
	return lr, rcnt, nil
}

// arrival returns a connection with a message not yet taken, or nil.
func (s *rcmSide) arrival() *rcmConn {
	for _, c := range s.conns {
		if c.arrived > 0 {
			return c
		}
	}
	return nil
}

// writePingPong is write_lat: each side RDMA-Writes a message whose last
// byte counts its Writes and polls the last byte of its own window for the
// peer's count; the server writes first.
func (s *rcmSide) writePingPong(ctx context.Context, size int, stamps []int64) (*latRun, int, error) {
	lr := s.newLatRun(ctx, size, stamps)
	c := s.conns[0]
	last := size - 1
	scnt, rcnt := 0, 0
	n := s.iters
	for scnt < n || c.ccnt < n || rcnt < n || n == 0 {
		if (rcnt < n || n == 0) && !(scnt < 1 && s.server) {
			rcnt++
			want := byte(rcnt)
			for spins := 1; datapath.LoadByte(c.win, last) != want; spins++ {
				if spins%datapath.YieldEvery == 0 {
					if err := lr.poll(); err != nil {
						return nil, 0, err
					}
				}
				if lr.clock.tick(c.ccnt) {
					return lr, c.ccnt, nil
				}
				if err := lr.idle(fmt.Sprintf("waiting for the peer's Write %d", rcnt)); err != nil {
					return nil, 0, err
				}
			}
		}
		if scnt < n || n == 0 {
			lr.stamp(scnt)
			scnt++
			c.src[last] = byte(scnt)
			if err := c.s.EP.Write(&c.results[c.scnt%len(c.results)], c.sgl[:], c.rdesc, 0, 0); err != nil {
				return nil, 0, fmt.Errorf("write %d: %w", scnt, err)
			}
			c.scnt++
		}
		if lr.clock.tick(c.ccnt) {
			return lr, c.ccnt, nil
		}
		if err := lr.waitDone(c.ccnt); err != nil {
			return nil, 0, err
		}
	}
	return lr, c.ccnt, nil
}

// readLoop is read_lat's client: one RDMA Read at a time.
func (s *rcmSide) readLoop(ctx context.Context, size int, stamps []int64) (*latRun, int, error) {
	lr := s.newLatRun(ctx, size, stamps)
	c := s.conns[0]
	for scnt := 0; scnt < s.iters || s.iters == 0; {
		lr.stamp(scnt)
		scnt++
		if err := c.s.EP.Read(&c.results[c.scnt%len(c.results)], c.sgl[:], c.rdesc, 0, 0); err != nil {
			return nil, 0, fmt.Errorf("read %d: %w", scnt, err)
		}
		c.scnt++
		if lr.clock.tick(c.ccnt) {
			return lr, c.ccnt, nil
		}
		if err := lr.waitDone(c.ccnt); err != nil {
			return nil, 0, err
		}
	}
	return lr, c.ccnt, nil
}

// latency runs one size of the latency test and returns its row.
func (s *rcmSide) latency(ctx context.Context, size int, stamps []int64) (rcmLatRow, error) {
	var lr *latRun
	var err error
	switch s.test.op {
	case opSend:
		lr, _, err = s.pingPong(ctx, size, stamps)
	case opWrite:
		lr, _, err = s.writePingPong(ctx, size, stamps)
	default:
		lr, _, err = s.readLoop(ctx, size, stamps)
	}
	if err != nil {
		return rcmLatRow{}, err
	}
	rtt := 2.0
	if s.test.op == opRead {
		rtt = 1
	}
	if lr.clock != nil {
		n, d := lr.clock.sample()
		return rcmDurationRow(size, n, d, rtt), nil
	}
	return rcmIterationsRow(size, stamps[:s.iters], rtt), nil
}
