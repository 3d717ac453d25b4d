package main

// One side of nd rdmapingpong: its buffers and window, the exchange of
// windows, and the round trips.

import (
	"context"
	"fmt"

	"github.com/godirect/nd"
)

// rdmaPonger is one side of nd rdmapingpong.
type rdmaPonger struct {
	ctx      context.Context
	s        *session
	reaper   *reaper
	sendBuf  []byte // the source of this side's Writes
	sendMR   nd.MemoryRegion
	recvBuf  []byte // the peer writes here, through mw; from wordAligned
	recvMR   nd.MemoryRegion
	ctrl     []byte // this side's window message, the peer's, and the final message
	ctrlMR   nd.MemoryRegion
	mw       nd.MemoryWindow
	remote   nd.MWDescriptor // the peer's window
	sgl      []nd.SGE
	sges     int
	inline   int
	writeRes nd.Result
	writing  bool // the Write is in flight
	// peerRes receives the peer's window message. lastRes is a Receive that
	// completes with the client's final message on the server, and only
	// when the connection ends on the client: while it is posted, a peer
	// that goes away shows up on the completion queue.
	bindRes, sendRes, peerRes, lastRes nd.Result
	finished                           bool // lastRes completed with success
}

// The layout of ctrl: this side's window message, the peer's, and room for
// the final message (which is empty).
const (
	ctrlMine = 0
	ctrlPeer = windowMsgSize
	ctrlLast = 2 * windowMsgSize
	ctrlSize = ctrlLast + 8
)

// newPonger sets up one side for messages of up to maxSize bytes: on conn
// for the server, on a new connector for the client (conn nil). Its two
// Receives are posted.
func (c *rdmapingpongConfig) newPonger(ctx context.Context, a nd.Adapter, conn nd.Connector, maxSize int) (_ *rdmaPonger, err error) {
	ai, err := queryAdapter(a)
	if err != nil {
		return nil, err
	}
	if err := checkWindow(ai, maxSize); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// Two Receives; a Bind and a Send, later a Write and the final Send.
	limits := nd.EndpointLimits{InboundEntries: 2, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: c.sges}
	if err := c.checkQueues(ai, limits); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := newSession(a, conn, limits)
	if err != nil {
		return nil, err
	}
	p := &rdmaPonger{
		ctx:    ctx,
		s:      s,
		reaper: newReaper(ctx, s.cq, c.blocking, 4),
		sgl:    make([]nd.SGE, c.sges),
		sges:   c.sges,
		inline: s.ep.MaxInlineData(),
	}
	defer func() {
		if err != nil {
			p.close(ctx)
		}
	}()
	if p.sendBuf, p.sendMR, err = registered(ctx, a, maxSize); err != nil {
		return nil, err
	}
	// Zeroed: no round's last byte is 0.
	p.recvBuf = wordAligned(maxSize)
	if p.recvMR, err = a.RegisterMemory(ctx, p.recvBuf); err != nil {
		return nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(p.recvBuf), err)
	}
	if p.ctrl, p.ctrlMR, err = registered(ctx, a, ctrlSize); err != nil {
		return nil, err
	}
	if err := s.ep.Receive(&p.peerRes, []nd.SGE{{Buffer: p.ctrl[ctrlPeer:ctrlLast], Region: p.ctrlMR}}); err != nil {
		return nil, fmt.Errorf("posting Receive: %w", err)
	}
	if err := s.ep.Receive(&p.lastRes, []nd.SGE{{Buffer: p.ctrl[ctrlLast:], Region: p.ctrlMR}}); err != nil {
		return nil, fmt.Errorf("posting Receive: %w", err)
	}
	return p, nil
}

// close releases the window, the registrations and the session.
func (p *rdmaPonger) close(ctx context.Context) {
	if p.mw != nil {
		p.mw.Close()
	}
	deregister(ctx, p.s.adapter, p.sendMR, p.recvMR, p.ctrlMR)
	p.s.close()
}

// exchange binds this side's window over recvBuf and swaps window messages
// with the peer; the active side sends first, the passive side answers.
func (p *rdmaPonger) exchange(active bool, maxSize int) error {
	bind := func() error {
		mw, desc, err := p.s.bindWindow(&p.bindRes, p.recvMR, p.recvBuf, nd.FlagAllowWrite)
		if err != nil {
			return err
		}
		p.mw = mw
		msg := windowMsg{desc: desc}.put(p.ctrl[ctrlMine:])
		if err := p.s.ep.Send(&p.sendRes, []nd.SGE{{Buffer: msg, Region: p.ctrlMR}}, 0); err != nil {
			return fmt.Errorf("sending the window: %w", err)
		}
		return nil
	}
	if active {
		if err := bind(); err != nil {
			return err
		}
		if err := p.reaper.waitAll(&p.bindRes, &p.sendRes, &p.peerRes); err != nil {
			return fmt.Errorf("exchanging windows: %w", err)
		}
	} else {
		if err := p.reaper.waitAll(&p.peerRes); err != nil {
			return fmt.Errorf("waiting for the client's window: %w", err)
		}
		if err := bind(); err != nil {
			return err
		}
		if err := p.reaper.waitAll(&p.bindRes, &p.sendRes); err != nil {
			return fmt.Errorf("sending the window: %w", err)
		}
	}
	win, err := parseWindowMsg(p.ctrl[ctrlPeer : ctrlPeer+p.peerRes.BytesTransferred])
	if err != nil {
		return err
	}
	if win.desc.Length < uint64(maxSize) {
		return fmt.Errorf("the peer's window has %d bytes, want %d", win.desc.Length, maxSize)
	}
	p.remote = win.desc
	return nil
}

// stamps returns the last bytes of round k: the client's message ends in
// ping, the server's in pong. Consecutive rounds differ, and neither is 0,
// so a byte left from an earlier round or never written is never mistaken
// for this round's (the sizes only grow, so a new size's last byte was
// never written before).
func stamps(k int) (ping, pong byte) {
	ping = byte(k%127)*2 + 1
	return ping, ping + 1
}

// rounds makes n round trips of size bytes, counting rounds in *k. The
// active side writes first and waits for the answer; the passive side waits
// for the message and answers it. A Write is inline when size is at most
// the endpoint's MaxInlineData. It allocates nothing unless it fails.
func (p *rdmaPonger) rounds(size, n int, k *int, active bool) error {
	region := p.sendMR
	if size <= p.inline {
		region = nil
	}
	sgl := splitSGL(p.sgl, p.sendBuf[:size], region, p.sges)
	last := size - 1
	for i := range n {
		mine, want := stamps(*k)
		if !active {
			want, mine = mine, want
			if err := p.await(last, want); err != nil {
				return fmt.Errorf("round trip %d: %w", i, err)
			}
		}
		// The send buffer is the Write's source until it completes.
		if err := p.waitWrite(); err != nil {
			return fmt.Errorf("round trip %d: %w", i, err)
		}
		p.sendBuf[last] = mine
		if err := p.s.ep.Write(&p.writeRes, sgl, p.remote, 0, 0); err != nil {
			return fmt.Errorf("round trip %d: Write: %w", i, err)
		}
		p.writing = true
		if active {
			if err := p.await(last, want); err != nil {
				return fmt.Errorf("round trip %d: %w", i, err)
			}
		}
		*k++
	}
	return nil
}

// await spins until recvBuf[i] is want. It looks at the completion queue
// every yieldEvery spins, so that a failed Write or the end of the
// connection stops it, and at ctx every checkEvery spins.
func (p *rdmaPonger) await(i int, want byte) error {
	var pace pacer
	for spins := 1; ; spins++ {
		if loadByte(p.recvBuf, i) == want {
			return nil
		}
		if pace.idle(); spins%yieldEvery != 0 {
			continue
		}
		if err := p.handle(p.reaper.poll()); err != nil {
			return err
		}
		if p.finished {
			return fmt.Errorf("the peer ended the test early")
		}
		if spins%checkEvery == 0 {
			if err := p.ctx.Err(); err != nil {
				return fmt.Errorf("waiting for the peer's Write: %w", err)
			}
		}
	}
}

// waitWrite waits for the Write in flight, if any, to complete.
func (p *rdmaPonger) waitWrite() error {
	for p.writing {
		done, err := p.reaper.next()
		if err != nil {
			return err
		}
		if err := p.handle(done); err != nil {
			return err
		}
	}
	return nil
}

// handle takes completions: the Write's, and lastRes's.
func (p *rdmaPonger) handle(done []*nd.Result) error {
	for _, r := range done {
		switch r {
		case &p.writeRes:
			if err := r.Status.Err(); err != nil {
				return fmt.Errorf("RDMA Write completed with %w", err)
			}
			p.writing = false
		case &p.lastRes:
			if err := r.Status.Err(); err != nil {
				return fmt.Errorf("the connection ended: %w", err)
			}
			p.finished = true
		default:
			return errUnexpected
		}
	}
	return nil
}

// finish ends the test once the last round trip is done: the active side
// sends the final message, the passive side waits for it.
func (p *rdmaPonger) finish(active bool) error {
	if err := p.waitWrite(); err != nil {
		return err
	}
	if active {
		if err := p.s.ep.Send(&p.sendRes, nil, 0); err != nil {
			return fmt.Errorf("sending the final message: %w", err)
		}
		if err := p.reaper.waitAll(&p.sendRes); err != nil {
			return fmt.Errorf("the final message: %w", err)
		}
		return nil
	}
	for !p.finished {
		done, err := p.reaper.next()
		if err != nil {
			return fmt.Errorf("waiting for the final message: %w", err)
		}
		if err := p.handle(done); err != nil {
			return err
		}
	}
	return nil
}
