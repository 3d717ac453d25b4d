package main

// The passive side of nd pingpong: accepts one connection and echoes every
// message back. Following ND's "active side sends first" rule it only ever
// sends in reply.

import (
	"context"
	"fmt"
	"io"

	"github.com/godirect/nd"
)

// echoer is the server's data path.
type echoer struct {
	ep      nd.Endpoint
	reaper  *reaper
	recv    *receiveRing
	recvBuf []byte
	recvMR  nd.MemoryRegion
	sends   *requestRing
	sgl     []nd.SGE
	sges    int
	inline  int
}

// serve accepts one connection on l, echoes the number of messages the
// client announced (none: until a message of 0 bytes), and waits for the
// client to disconnect.
func (c *pingpongConfig) serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := nextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := pingpongGreeting.parseHello(r.data)
	if err != nil {
		return r.reject(err)
	}
	limits, err := c.limits(a, h.maxSize)
	if err != nil {
		return r.reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	s, err := newSession(a, r.conn, limits)
	if err != nil {
		return r.reject(err)
	}
	defer s.close()
	recvBuf, recvMR, err := registered(ctx, a, h.maxSize)
	if err != nil {
		return r.reject(err)
	}
	defer deregister(ctx, a, recvMR)
	recvSGL := splitSGL(make([]nd.SGE, c.sges), recvBuf, recvMR, c.sges)
	recv, err := newReceiveRing(s.ep, recvSGL, c.depth)
	if err != nil {
		return r.reject(err)
	}
	if err := s.accept(ctx, r, pingpongGreeting.welcome(nil)); err != nil {
		return err
	}
	if h.count == 0 {
		fmt.Fprintf(out, "Accepted a connection from %s: messages of up to %d bytes until one of 0 bytes\n", r.peer, h.maxSize)
	} else {
		fmt.Fprintf(out, "Accepted a connection from %s: %d messages of up to %d bytes\n", r.peer, h.count, h.maxSize)
	}

	e := &echoer{
		ep:      s.ep,
		reaper:  c.reaper(ctx, s.cq),
		recv:    recv,
		recvBuf: recvBuf,
		recvMR:  recvMR,
		sends:   newRequestRing(c.depth),
		sgl:     make([]nd.SGE, c.sges),
		sges:    c.sges,
		inline:  s.ep.MaxInlineData(),
	}
	echoed, err := e.echo(h.count)
	if err != nil {
		return fmt.Errorf("client %s: %w", r.peer, err)
	}
	if err := s.conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.peer, err)
	}
	fmt.Fprintf(out, "Echoed %d messages; %s disconnected\n", echoed, r.peer)
	return nil
}

// echo sends messages back as they arrive, count of them, or with count 0
// until a message of 0 bytes (which it does not echo), and returns the
// number it echoed. It allocates nothing unless it fails.
func (e *echoer) echo(count int64) (echoed int64, err error) {
	for count == 0 || echoed < count {
		done, err := e.reaper.next()
		if err != nil {
			return echoed, fmt.Errorf("after %d messages: %w", echoed, err)
		}
		for _, r := range done {
			switch {
			case e.sends.owns(r):
				if err := e.sends.complete(); err != nil {
					return echoed, fmt.Errorf("message %d: Send completed with %w", echoed, err)
				}
			case e.recv.owns(r):
				n, err := e.recv.complete(nil)
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
				return echoed, errUnexpected
			}
		}
	}
	return echoed, nil
}

// send echoes the n bytes at the start of the receive buffer. The buffer
// may be posted for the next Receive already: the client sends the next
// message only when this one came back.
func (e *echoer) send(n int) error {
	if e.sends.full() {
		return fmt.Errorf("%d echoes are in flight and none completed", e.sends.pending)
	}
	region := e.recvMR
	if n <= e.inline {
		region = nil
	}
	if err := e.ep.Send(e.sends.next(), splitSGL(e.sgl, e.recvBuf[:n], region, e.sges), 0); err != nil {
		return fmt.Errorf("sending %d bytes: %w", n, err)
	}
	e.sends.posted()
	return nil
}
