package main

// The active side of nd pingpong: connects, sends every message, waits for
// its echo, and prints the table.

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
)

// pinger is the client's data path.
type pinger struct {
	ep      nd.Endpoint
	reaper  *reaper
	recv    *receiveRing
	sendRes nd.Result
	sendBuf []byte
	sendMR  nd.MemoryRegion
	recvBuf []byte
	sgl     []nd.SGE // the Send's scatter/gather list, refilled per size
	sges    int
	inline  int // the endpoint's MaxInlineData
}

// drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out and disconnects.
func (c *pingpongConfig) drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	// messages is what the hello announces: every message of ndpingpong's
	// counts, or 0 for a timed sweep, which ends with a message of 0 bytes.
	steps := schedule(int(c.maxSize), c.iters)
	warm := warmups(c.iters)
	messages := int64(warm) + totalIters(steps)
	if d := c.perSize(); d > 0 {
		steps, messages = timedSweep(int(c.maxSize), d), 0
	}
	maxSize := steps[len(steps)-1].size

	limits, err := c.limits(a, maxSize)
	if err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := newSession(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.close()
	sendBuf, sendMR, err := registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	recvBuf, recvMR, err := registered(ctx, a, maxSize)
	if err != nil {
		deregister(ctx, a, sendMR)
		return err
	}
	defer deregister(ctx, a, sendMR, recvMR)

	recvSGL := splitSGL(make([]nd.SGE, c.sges), recvBuf, recvMR, c.sges)
	recv, err := newReceiveRing(s.ep, recvSGL, c.depth)
	if err != nil {
		return err
	}
	if err := s.dial(ctx, remote, pingpongGreeting.hello(hello{maxSize: maxSize, count: messages}), pingpongGreeting.checkWelcome); err != nil {
		return err
	}

	p := &pinger{
		ep:      s.ep,
		reaper:  c.reaper(ctx, s.cq),
		recv:    recv,
		sendBuf: sendBuf,
		sendMR:  sendMR,
		recvBuf: recvBuf,
		sgl:     make([]nd.SGE, c.sges),
		sges:    c.sges,
		inline:  s.ep.MaxInlineData(),
	}
	if err := measureSweep(out, warm, steps, 2, 2, p.rounds); err != nil {
		return err
	}
	if messages == 0 {
		if err := p.end(); err != nil {
			return err
		}
	}
	if err := s.conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// rounds makes n round trips of size bytes. The Send is inline when size is
// at most the endpoint's MaxInlineData. It allocates nothing unless it
// fails.
func (p *pinger) rounds(size, n int) error {
	region := p.sendMR
	if size <= p.inline {
		region = nil
	}
	sgl := splitSGL(p.sgl, p.sendBuf[:size], region, p.sges)
	for i := range n {
		stamp := byte(i)
		p.sendBuf[0] = stamp
		if err := p.ep.Send(&p.sendRes, sgl, 0); err != nil {
			return fmt.Errorf("iteration %d: Send: %w", i, err)
		}
		if err := p.await(size, stamp); err != nil {
			return fmt.Errorf("iteration %d: %w", i, err)
		}
	}
	return nil
}

// await waits for the Send's completion and for the echo, and checks the
// echo's length, its first byte (stamp) and its last.
func (p *pinger) await(size int, stamp byte) error {
	sent, echoed := false, false
	for !sent || !echoed {
		done, err := p.reaper.next()
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
			case p.recv.owns(r):
				n, err := p.recv.complete(nil)
				if err != nil {
					return err
				}
				if n != size || p.recvBuf[0] != stamp || p.recvBuf[size-1] != p.sendBuf[size-1] {
					return fmt.Errorf("the echo has %d bytes, first %#02x, last %#02x; want %d, %#02x, %#02x",
						n, p.recvBuf[0], p.recvBuf[max(n, 1)-1], size, stamp, p.sendBuf[size-1])
				}
				echoed = true
			default:
				return errUnexpected
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
	if err := p.reaper.waitAll(&p.sendRes); err != nil {
		return fmt.Errorf("ending the test: %w", err)
	}
	return nil
}
