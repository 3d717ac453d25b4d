package ndtools

// The active side of nd rdmaping: receives the server's window, streams
// RDMA Writes or Reads against it, and sends the final message.

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

// rdmaStreamer is the client's data path.
type rdmaStreamer struct {
	ep     nd.Endpoint
	reaper *datapath.Reaper
	ops    *datapath.RequestRing // the Writes or Reads in flight
	read   bool
	remote nd.MWDescriptor
	buf    []byte // the source of Writes, the sink of Reads
	mr     nd.MemoryRegion
	sgl    []nd.SGE
	sges   int
	inline int
}

// Drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out, sends the final message and
// disconnects.
func (c *rdmapingConfig) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := timing.Sweep(int(c.MaxSize), timing.OneWayIterations, c.Iters)
	warm := timing.Warmups(c.Iters)
	maxSize := steps[len(steps)-1].Size
	op := uint64(rdmaOpWrite)
	if c.read {
		op = rdmaOpRead
	}

	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	if err := datapath.CheckWindow(ai, maxSize); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// A Receive for the window; the pipeline and the final Send outbound.
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: c.Depth + 1, InboundSGE: 1, OutboundSGE: c.SGEs}
	if c.read {
		limits.OutboundReadLimit = min(c.Depth, ai.MaxOutboundReadLimit)
		if limits.OutboundReadLimit < 1 {
			return fmt.Errorf("adapter %s allows no RDMA Reads in flight", a.Address())
		}
	}
	if err := c.CheckQueues(ai, limits); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := session.New(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.Close()
	buf, mr, err := datapath.Registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	defer datapath.Deregister(ctx, a, mr)
	ctrl, ctrlMR, err := datapath.Registered(ctx, a, datapath.WindowMsgSize)
	if err != nil {
		return err
	}
	defer datapath.Deregister(ctx, a, ctrlMR)
	var winRes, doneRes nd.Result
	if err := s.EP.Receive(&winRes, []nd.SGE{{Buffer: ctrl, Region: ctrlMR}}); err != nil {
		return fmt.Errorf("posting Receive: %w", err)
	}
	if err := s.Dial(ctx, remote, session.RdmapingGreeting.Hello(session.Hello{MaxSize: maxSize, Arg: op}), session.RdmapingGreeting.CheckWelcome); err != nil {
		return err
	}
	_, ord, err := session.ReadLimits(s.Conn, limits)
	if err != nil {
		return err
	}
	rp := datapath.NewReaper(ctx, s.CQ, c.Blocking, c.Depth+1)
	if err := rp.WaitAll(&winRes); err != nil {
		return fmt.Errorf("waiting for the server's window: %w", err)
	}
	win, err := datapath.ParseWindowMsg(ctrl[:winRes.BytesTransferred])
	if err != nil {
		return err
	}
	if win.Desc.Length < uint64(maxSize) {
		return fmt.Errorf("the server's window has %d bytes, want %d", win.Desc.Length, maxSize)
	}
	depth := c.Depth
	if c.read {
		// ndrping: no more Reads in flight than both sides allow.
		depth = min(depth, ord, int(win.ReadLimit))
		if depth < 1 {
			return fmt.Errorf("the connection allows no RDMA Reads (outbound read limit %d, the server's %d)", ord, win.ReadLimit)
		}
	}

	st := &rdmaStreamer{
		ep:     s.EP,
		reaper: rp,
		ops:    datapath.NewRequestRing(depth),
		read:   c.read,
		remote: win.Desc,
		buf:    buf,
		mr:     mr,
		sgl:    make([]nd.SGE, c.SGEs),
		sges:   c.SGEs,
		inline: s.EP.MaxInlineData(),
	}
	if err := timing.MeasureSweep(out, warm, steps, 1, 1, nil, st.stream); err != nil {
		return err
	}
	if err := s.EP.Send(&doneRes, nil, 0); err != nil {
		return fmt.Errorf("sending the final message: %w", err)
	}
	if err := rp.WaitAll(&doneRes); err != nil {
		return fmt.Errorf("the final message: %w", err)
	}
	if err := s.Conn.Disconnect(ctx); err != nil {
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
	sgl := datapath.SplitSGL(st.sgl, st.buf[:size], region, st.sges)
	posted := 0
	for posted < n || st.ops.Pending > 0 {
		for posted < n && !st.ops.Full() {
			var err error
			if st.read {
				err = st.ep.Read(st.ops.Next(), sgl, st.remote, 0, 0)
			} else {
				err = st.ep.Write(st.ops.Next(), sgl, st.remote, 0, 0)
			}
			if err != nil {
				return fmt.Errorf("request %d: %w", posted, err)
			}
			st.ops.Posted()
			posted++
		}
		done, err := st.reaper.Next()
		if err != nil {
			return fmt.Errorf("after %d requests: %w", posted, err)
		}
		for _, r := range done {
			if !st.ops.Owns(r) {
				return datapath.ErrUnexpected
			}
			if err := st.ops.Complete(); err != nil {
				return fmt.Errorf("after %d requests: completed with %w", posted, err)
			}
		}
	}
	return nil
}
