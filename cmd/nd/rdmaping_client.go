package main

// The active side of nd rdmaping: receives the server's window, streams
// RDMA Writes or Reads against it, and sends the final message.

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
)

// rdmaStreamer is the client's data path.
type rdmaStreamer struct {
	ep     nd.Endpoint
	reaper *reaper
	ops    *requestRing // the Writes or Reads in flight
	read   bool
	remote nd.MWDescriptor
	buf    []byte // the source of Writes, the sink of Reads
	mr     nd.MemoryRegion
	sgl    []nd.SGE
	sges   int
	inline int
}

// drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out, sends the final message and
// disconnects.
func (c *rdmapingConfig) drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := sweep(int(c.maxSize), oneWayIterations, c.iters)
	warm := warmups(c.iters)
	maxSize := steps[len(steps)-1].size
	op := uint64(rdmaOpWrite)
	if c.read {
		op = rdmaOpRead
	}

	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	if err := checkWindow(ai, maxSize); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// A Receive for the window; the pipeline and the final Send outbound.
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: c.depth + 1, InboundSGE: 1, OutboundSGE: c.sges}
	if c.read {
		limits.OutboundReadLimit = min(c.depth, ai.MaxOutboundReadLimit)
		if limits.OutboundReadLimit < 1 {
			return fmt.Errorf("adapter %s allows no RDMA Reads in flight", a.Address())
		}
	}
	if err := c.checkQueues(ai, limits); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := newSession(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.close()
	buf, mr, err := registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	defer deregister(ctx, a, mr)
	ctrl, ctrlMR, err := registered(ctx, a, windowMsgSize)
	if err != nil {
		return err
	}
	defer deregister(ctx, a, ctrlMR)
	var winRes, doneRes nd.Result
	if err := s.ep.Receive(&winRes, []nd.SGE{{Buffer: ctrl, Region: ctrlMR}}); err != nil {
		return fmt.Errorf("posting Receive: %w", err)
	}
	if err := s.dial(ctx, remote, rdmapingGreeting.hello(hello{maxSize: maxSize, arg: op}), rdmapingGreeting.checkWelcome); err != nil {
		return err
	}
	_, ord, err := readLimits(s.conn, limits)
	if err != nil {
		return err
	}
	rp := newReaper(ctx, s.cq, c.blocking, c.depth+1)
	if err := rp.waitAll(&winRes); err != nil {
		return fmt.Errorf("waiting for the server's window: %w", err)
	}
	win, err := parseWindowMsg(ctrl[:winRes.BytesTransferred])
	if err != nil {
		return err
	}
	if win.desc.Length < uint64(maxSize) {
		return fmt.Errorf("the server's window has %d bytes, want %d", win.desc.Length, maxSize)
	}
	depth := c.depth
	if c.read {
		// ndrping: no more Reads in flight than both sides allow.
		depth = min(depth, ord, int(win.readLimit))
		if depth < 1 {
			return fmt.Errorf("the connection allows no RDMA Reads (outbound read limit %d, the server's %d)", ord, win.readLimit)
		}
	}

	st := &rdmaStreamer{
		ep:     s.ep,
		reaper: rp,
		ops:    newRequestRing(depth),
		read:   c.read,
		remote: win.desc,
		buf:    buf,
		mr:     mr,
		sgl:    make([]nd.SGE, c.sges),
		sges:   c.sges,
		inline: s.ep.MaxInlineData(),
	}
	if err := measureSweep(out, warm, steps, 1, 1, st.stream); err != nil {
		return err
	}
	if err := s.ep.Send(&doneRes, nil, 0); err != nil {
		return fmt.Errorf("sending the final message: %w", err)
	}
	if err := rp.waitAll(&doneRes); err != nil {
		return fmt.Errorf("the final message: %w", err)
	}
	if err := s.conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// stream makes n transfers of size bytes at the start of the server's
// window, keeping as many in flight as the ring holds, and returns when all
// completed. Writes are inline when size is at most the endpoint's
// MaxInlineData. It allocates nothing unless it fails.
func (st *rdmaStreamer) stream(size, n int) error {
	region := st.mr
	if !st.read && size <= st.inline {
		region = nil
	}
	sgl := splitSGL(st.sgl, st.buf[:size], region, st.sges)
	posted := 0
	for posted < n || st.ops.pending > 0 {
		for posted < n && !st.ops.full() {
			var err error
			if st.read {
				err = st.ep.Read(st.ops.next(), sgl, st.remote, 0, 0)
			} else {
				err = st.ep.Write(st.ops.next(), sgl, st.remote, 0, 0)
			}
			if err != nil {
				return fmt.Errorf("request %d: %w", posted, err)
			}
			st.ops.posted()
			posted++
		}
		done, err := st.reaper.next()
		if err != nil {
			return fmt.Errorf("after %d requests: %w", posted, err)
		}
		for _, r := range done {
			if !st.ops.owns(r) {
				return errUnexpected
			}
			if err := st.ops.complete(); err != nil {
				return fmt.Errorf("after %d requests: completed with %w", posted, err)
			}
		}
	}
	return nil
}
