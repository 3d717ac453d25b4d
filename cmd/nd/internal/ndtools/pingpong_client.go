package ndtools

// The active side of nd pingpong: connects, sends every message, waits for
// its echo, and prints the table.

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// roundTimesKept is how many round trips of a size the client times one by
// one for the median: at 1 byte a quarter second holds about 20,000.
const roundTimesKept = 1 << 16

// pinger is the client's data path.
type pinger struct {
	ep      nd.Endpoint
	reaper  *datapath.Reaper
	recv    *datapath.ReceiveRing
	sendRes nd.Result
	sendBuf []byte
	sendMR  nd.MemoryRegion
	recvBuf []byte
	sgl     []nd.SGE // the Send's scatter/gather list, refilled per size
	sges    int
	inline  int                // the endpoint's MaxInlineData
	times   *timing.RoundTimes // each round trip's time: the rows report the median
}

// Drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out and disconnects.
func (c *pingpongConfig) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	// messages is what the hello announces: every message of ndpingpong's
	// counts, or 0 for a timed sweep, which ends with a message of 0 bytes.
	steps := timing.Schedule(int(c.MaxSize), c.Iters)
	warm := timing.Warmups(c.Iters)
	messages := int64(warm) + timing.TotalIters(steps)
	if d := c.perSize(); d > 0 {
		steps, messages = timing.TimedSweep(int(c.MaxSize), d), 0
	}
	maxSize := steps[len(steps)-1].Size

	limits, err := c.limits(a, maxSize)
	if err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := session.New(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.Close()
	sendBuf, sendMR, err := datapath.Registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	recvBuf, recvMR, err := datapath.Registered(ctx, a, maxSize)
	if err != nil {
		datapath.Deregister(ctx, a, sendMR)
		return err
	}
	defer datapath.Deregister(ctx, a, sendMR, recvMR)

	recvSGL := datapath.SplitSGL(make([]nd.SGE, c.SGEs), recvBuf, recvMR, c.SGEs)
	recv, err := datapath.NewReceiveRing(s.EP, recvSGL, c.Depth)
	if err != nil {
		return err
	}
	if err := s.Dial(ctx, remote, session.PingpongGreeting.Hello(session.Hello{MaxSize: maxSize, Count: messages}), session.PingpongGreeting.CheckWelcome); err != nil {
		return err
	}

	p := &pinger{
		ep:      s.EP,
		reaper:  c.reaper(ctx, s.CQ),
		recv:    recv,
		sendBuf: sendBuf,
		sendMR:  sendMR,
		recvBuf: recvBuf,
		sgl:     make([]nd.SGE, c.SGEs),
		sges:    c.SGEs,
		inline:  s.EP.MaxInlineData(),
		times:   timing.NewRoundTimes(roundTimesKept),
	}
	if err := timing.MeasureSweep(out, warm, steps, 2, 2, p.times, p.rounds); err != nil {
		return err
	}
	if messages == 0 {
		if err := p.end(); err != nil {
			return err
		}
	}
	if err := s.Conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// rounds makes n round trips of size bytes. The Send is inline when size is
// at most the endpoint's MaxInlineData. It allocates nothing unless it
// fails.
func (p *pinger) rounds(size, n int) error {
	sgl := datapath.SendSGL(p.sgl, p.sendBuf[:size], p.sendMR, p.sges, p.inline)
	for i := range n {
		stamp := byte(i)
		p.sendBuf[0] = stamp
		start := timing.Now()
		if err := p.ep.Send(&p.sendRes, sgl, 0); err != nil {
			return fmt.Errorf("iteration %d: Send: %w", i, err)
		}
		if err := p.await(size, stamp); err != nil {
			return fmt.Errorf("iteration %d: %w", i, err)
		}
		p.times.Add(timing.Since(start))
	}
	return nil
}

// await waits for the Send's completion and for the echo, and checks the
// echo's length, its first byte (stamp) and its last.
func (p *pinger) await(size int, stamp byte) error {
	sent, echoed := false, false
	for !sent || !echoed {
		done, err := p.reaper.Next()
		if err != nil {
			return err
		}
		for _, r := range done {
			switch {
			case r == &p.sendRes:
				if err := r.Status.Err(); err != nil {
					return fmt.Errorf("a Send completed with %w", err)
				}
				sent = true
			case p.recv.Owns(r):
				n, err := p.recv.Complete(nil)
				if err != nil {
					return err
				}
				if n != size || p.recvBuf[0] != stamp || p.recvBuf[size-1] != p.sendBuf[size-1] {
					return fmt.Errorf("the echo has %d bytes, first %#02x, last %#02x; want %d, %#02x, %#02x",
						n, p.recvBuf[0], p.recvBuf[max(n, 1)-1], size, stamp, p.sendBuf[size-1])
				}
				echoed = true
			default:
				return datapath.ErrUnexpected
			}
		}
	}
	return nil
}

// end sends the message of 0 bytes that ends a timed sweep and waits for
// its completion.
func (p *pinger) end() error {
	if err := p.ep.Send(&p.sendRes, nil, 0); err != nil {
		return fmt.Errorf("ending the test: Send: %w", err)
	}
	if err := p.reaper.WaitAll(&p.sendRes); err != nil {
		return fmt.Errorf("ending the test: %w", err)
	}
	return nil
}
