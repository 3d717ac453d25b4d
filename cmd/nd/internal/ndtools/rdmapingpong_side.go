package ndtools

// One side of nd rdmapingpong: its buffers and window, the exchange of
// windows, and the round trips.

import (
	"context"
	"fmt"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// rdmaPonger is one side of nd rdmapingpong.
type rdmaPonger struct {
	ctx      context.Context
	s        *session.Session
	reaper   *datapath.Reaper
	sendBuf  []byte // the source of this side's Writes
	sendMR   nd.MemoryRegion
	recvBuf  []byte // the peer writes here, through mw; from datapath.WordAligned
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
	ctrlPeer = datapath.WindowMsgSize
	ctrlLast = 2 * datapath.WindowMsgSize
	ctrlSize = ctrlLast + 8
)

// newPonger sets up one side for messages of up to maxSize bytes: on conn
// for the server, on a new connector for the client (conn nil). Its two
// Receives are posted.
func (c *rdmapingpongConfig) newPonger(ctx context.Context, a nd.Adapter, conn nd.Connector, maxSize int) (_ *rdmaPonger, err error) {
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return nil, err
	}
	if err := datapath.CheckWindow(ai, maxSize); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// Two Receives; a Bind and a Send, later a Write and the final Send.
	limits := nd.EndpointLimits{InboundEntries: 2, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: c.SGEs}
	if err := c.CheckQueues(ai, limits); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := session.New(a, conn, limits)
	if err != nil {
		return nil, err
	}
	p := &rdmaPonger{
		ctx:    ctx,
		s:      s,
		reaper: datapath.NewReaper(ctx, s.CQ, c.Blocking, 4),
		sgl:    make([]nd.SGE, c.SGEs),
		sges:   c.SGEs,
		inline: s.EP.MaxInlineData(),
	}
	defer func() {
		if err != nil {
			p.close(ctx)
		}
	}()
	if p.sendBuf, p.sendMR, err = datapath.Registered(ctx, a, maxSize); err != nil {
		return nil, err
	}
	// Zeroed: no round's last byte is 0.
	p.recvBuf = datapath.WordAligned(maxSize)
	if p.recvMR, err = a.RegisterMemory(ctx, p.recvBuf); err != nil {
		return nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(p.recvBuf), err)
	}
	if p.ctrl, p.ctrlMR, err = datapath.Registered(ctx, a, ctrlSize); err != nil {
		return nil, err
	}
	if err := s.EP.Receive(&p.peerRes, []nd.SGE{{Buffer: p.ctrl[ctrlPeer:ctrlLast], Region: p.ctrlMR}}); err != nil {
		return nil, fmt.Errorf("posting Receive: %w", err)
	}
	if err := s.EP.Receive(&p.lastRes, []nd.SGE{{Buffer: p.ctrl[ctrlLast:], Region: p.ctrlMR}}); err != nil {
		return nil, fmt.Errorf("posting Receive: %w", err)
	}
	return p, nil
}

// close releases the window, the registrations and the session.
func (p *rdmaPonger) close(ctx context.Context) {
	if p.mw != nil {
		p.mw.Close()
	}
	datapath.Deregister(ctx, p.s.Adapter, p.sendMR, p.recvMR, p.ctrlMR)
	p.s.Close()
}

// exchange binds this side's window over recvBuf and swaps window messages
// with the peer; the active side sends first, the passive side answers.
func (p *rdmaPonger) exchange(active bool, maxSize int) error {
	bind := func() error {
		mw, desc, err := p.s.BindWindow(&p.bindRes, p.recvMR, p.recvBuf, nd.FlagAllowWrite)
		if err != nil {
			return err
		}
		p.mw = mw
		msg := datapath.WindowMsg{Desc: desc}.Put(p.ctrl[ctrlMine:])
		if err := p.s.EP.Send(&p.sendRes, []nd.SGE{{Buffer: msg, Region: p.ctrlMR}}, 0); err != nil {
			return fmt.Errorf("sending the window: %w", err)
		}
		return nil
	}
	if active {
		if err := bind(); err != nil {
			return err
		}
		if err := p.reaper.WaitAll(&p.bindRes, &p.sendRes, &p.peerRes); err != nil {
			return fmt.Errorf("exchanging windows: %w", err)
		}
	} else {
		if err := p.reaper.WaitAll(&p.peerRes); err != nil {
			return fmt.Errorf("waiting for the client's window: %w", err)
		}
		if err := bind(); err != nil {
			return err
		}
		if err := p.reaper.WaitAll(&p.bindRes, &p.sendRes); err != nil {
			return fmt.Errorf("sending the window: %w", err)
		}
	}
	win, err := datapath.ParseWindowMsg(p.ctrl[ctrlPeer : ctrlPeer+p.peerRes.BytesTransferred])
	if err != nil {
		return err
	}
	if win.Desc.Length < uint64(maxSize) {
		return fmt.Errorf("the peer's window has %d bytes, want %d", win.Desc.Length, maxSize)
	}
	p.remote = win.Desc
	return nil
}

// rounds makes n round trips of size bytes, counting rounds in *k. The
// active side writes first and waits for the answer; the passive side waits
// for the message and answers it. A Write is inline when size is at most
// the endpoint's MaxInlineData. It allocates nothing unless it fails.
func (p *rdmaPonger) rounds(size, n int, k *int, active bool) error {
	sgl := datapath.SendSGL(p.sgl, p.sendBuf[:size], p.sendMR, p.sges, p.inline)
	last := size - 1
	for i := range n {
		mine, want := datapath.Stamps(*k)
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
		if err := p.s.EP.Write(&p.writeRes, sgl, p.remote, 0, 0); err != nil {
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
// every datapath.YieldEvery spins, so that a failed Write or the end of the
// connection stops it, and at ctx every datapath.CheckEvery spins.
func (p *rdmaPonger) await(i int, want byte) error {
	var pace datapath.Pacer
	for spins := 1; ; spins++ {
		if datapath.LoadByte(p.recvBuf, i) == want {
			return nil
		}
		if pace.Idle(); spins%datapath.YieldEvery != 0 {
			continue
		}
		if err := p.handle(p.reaper.Poll()); err != nil {
			return err
		}
		if p.finished {
			return fmt.Errorf("the peer ended the test early")
		}
		if spins%datapath.CheckEvery == 0 {
			if err := p.ctx.Err(); err != nil {
				return fmt.Errorf("waiting for the peer's Write: %w", err)
			}
		}
	}
}

// waitWrite waits for the Write in flight, if any, to complete.
func (p *rdmaPonger) waitWrite() error {
	for p.writing {
		done, err := p.reaper.Next()
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
			return datapath.ErrUnexpected
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
		if err := p.s.EP.Send(&p.sendRes, nil, 0); err != nil {
			return fmt.Errorf("sending the final message: %w", err)
		}
		if err := p.reaper.WaitAll(&p.sendRes); err != nil {
			return fmt.Errorf("the final message: %w", err)
		}
		return nil
	}
	for !p.finished {
		done, err := p.reaper.Next()
		if err != nil {
			return fmt.Errorf("waiting for the final message: %w", err)
		}
		if err := p.handle(done); err != nil {
			return err
		}
	}
	return nil
}
