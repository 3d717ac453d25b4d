package ndtools

// The passive side of nd pingpong: accepts one connection and echoes every
// message back. Following ND's "active side sends first" rule it only ever
// sends in reply.

import (
	"context"
	"fmt"
	"io"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// echoer is the server's data path.
type echoer struct {
	ep      nd.Endpoint
	reaper  *datapath.Reaper
	recv    *datapath.ReceiveRing
	recvBuf []byte
	recvMR  nd.MemoryRegion
	sends   *datapath.RequestRing
	sgl     []nd.SGE
	sges    int
	inline  int
}

// Serve accepts one connection on l, echoes the number of messages the
// client announced (none: until a message of 0 bytes), and waits for the
// client to disconnect.
func (c *pingpongConfig) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := session.PingpongGreeting.ParseHello(r.Data)
	if err != nil {
		return r.Reject(err)
	}
	limits, err := c.limits(a, h.MaxSize)
	if err != nil {
		return r.Reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	s, err := session.New(a, r.Conn, limits)
	if err != nil {
		return r.Reject(err)
	}
	defer s.Close()
	recvBuf, recvMR, err := datapath.Registered(ctx, a, h.MaxSize)
	if err != nil {
		return r.Reject(err)
	}
	defer datapath.Deregister(ctx, a, recvMR)
	recvSGL := datapath.SplitSGL(make([]nd.SGE, c.SGEs), recvBuf, recvMR, c.SGEs)
	recv, err := datapath.NewReceiveRing(s.EP, recvSGL, c.Depth)
	if err != nil {
		return r.Reject(err)
	}
	if err := s.Accept(ctx, r, session.PingpongGreeting.Welcome(nil)); err != nil {
		return err
	}
	if h.Count == 0 {
		fmt.Fprintf(out, "Accepted a connection from %s: messages of up to %d bytes until one of 0 bytes\n", r.Peer, h.MaxSize)
	} else {
		fmt.Fprintf(out, "Accepted a connection from %s: %d messages of up to %d bytes\n", r.Peer, h.Count, h.MaxSize)
	}

	e := &echoer{
		ep:      s.EP,
		reaper:  c.reaper(ctx, s.CQ),
		recv:    recv,
		recvBuf: recvBuf,
		recvMR:  recvMR,
		sends:   datapath.NewRequestRing(c.Depth),
		sgl:     make([]nd.SGE, c.SGEs),
		sges:    c.SGEs,
		inline:  s.EP.MaxInlineData(),
	}
	echoed, err := e.echo(h.Count)
	if err != nil {
		return fmt.Errorf("client %s: %w", r.Peer, err)
	}
	if err := s.Conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.Peer, err)
	}
	fmt.Fprintf(out, "Echoed %d messages; %s disconnected\n", echoed, r.Peer)
	return nil
}

// echo sends messages back as they arrive, count of them, or with count 0
// until a message of 0 bytes (which it does not echo), and returns the
// number it echoed. It allocates nothing unless it fails.
func (e *echoer) echo(count int64) (echoed int64, err error) {
	for count == 0 || echoed < count {
		done, err := e.reaper.Next()
		if err != nil {
			return echoed, fmt.Errorf("after %d messages: %w", echoed, err)
		}
		for _, r := range done {
			switch {
			case e.sends.Owns(r):
				if err := e.sends.Complete(); err != nil {
					return echoed, fmt.Errorf("message %d: Send completed with %w", echoed, err)
				}
			case e.recv.Owns(r):
				n, err := e.recv.Complete(nil)
				if err != nil {
					return echoed, fmt.Errorf("message %d: %w", echoed, err)
				}
				if n == 0 && count == 0 {
					return echoed, nil
				}
				if err := e.send(n); err != nil {
					return echoed, fmt.Errorf("message %d: %w", echoed, err)
				}
				echoed++
			default:
				return echoed, datapath.ErrUnexpected
			}
		}
	}
	return echoed, nil
}

// send echoes the n bytes at the start of the receive buffer. The buffer
// may be posted for the next Receive already: the client sends the next
// message only when this one came back.
func (e *echoer) send(n int) error {
	if e.sends.Full() {
		return fmt.Errorf("%d echoes are in flight and none completed", e.sends.Pending)
	}
	region := e.recvMR
	if n <= e.inline {
		region = nil
	}
	if err := e.ep.Send(e.sends.Next(), datapath.SplitSGL(e.sgl, e.recvBuf[:n], region, e.sges), 0); err != nil {
		return fmt.Errorf("sending %d bytes: %w", n, err)
	}
	e.sends.Posted()
	return nil
}
