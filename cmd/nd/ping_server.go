package main

// The passive side of nd ping: keeps Receives posted, grants the client
// credits for them, and returns credits and acknowledges syncs as messages
// arrive. Following ND's "active side sends first" rule it only ever sends
// in reply.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/godirect/nd"
)

// sink is the server's data path.
type sink struct {
	ep       nd.Endpoint
	reaper   *reaper
	recv     *receiveRing
	replies  *requestRing // the reply Sends in flight
	replyBuf []byte       // a pingReplySize slot per reply in flight
	replyMR  nd.MemoryRegion
	sgl      [1]nd.SGE // the reply's scatter/gather list
	batch    int       // credits returned at a time, half of those granted
	owed     int       // messages received whose credit is not returned yet
	syncs    uint32    // syncs received and not acknowledged yet
}

// serve accepts one connection on l, takes the number of messages the
// client announced, and waits for the client to disconnect.
func (c *pingConfig) serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := nextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := pingGreeting.parseHello(r.data)
	if err != nil {
		return r.reject(err)
	}
	// One Receive more than the credits granted, as ndping does, so that
	// the queue has room to spare.
	depth := max(c.depth, 2)
	credits := depth - 1
	ai, err := queryAdapter(a)
	if err != nil {
		return r.reject(err)
	}
	limits := nd.EndpointLimits{
		InboundEntries:  depth,
		OutboundEntries: depth,
		InboundSGE:      c.sges,
		OutboundSGE:     1,
	}
	if err := c.checkQueues(ai, limits); err != nil {
		return r.reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	if err := checkSize(ai, h.maxSize); err != nil {
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
	replyBuf, replyMR, err := registered(ctx, a, depth*pingReplySize)
	if err != nil {
		deregister(ctx, a, recvMR)
		return r.reject(err)
	}
	defer deregister(ctx, a, recvMR, replyMR)
	// The messages' bytes are not looked at: every Receive lands in the
	// same buffer.
	recv, err := newReceiveRing(s.ep, splitSGL(make([]nd.SGE, c.sges), recvBuf, recvMR, c.sges), depth)
	if err != nil {
		return r.reject(err)
	}
	if err := s.accept(ctx, r, pingGreeting.welcome(binary.BigEndian.AppendUint32(nil, uint32(credits)))); err != nil {
		return err
	}
	fmt.Fprintf(out, "Accepted a connection from %s: %d messages of up to %d bytes, %d credits\n", r.peer, h.count, h.maxSize, credits)

	k := &sink{
		ep:       s.ep,
		reaper:   newReaper(ctx, s.cq, c.blocking, 2*depth),
		recv:     recv,
		replies:  newRequestRing(depth),
		replyBuf: replyBuf,
		replyMR:  replyMR,
		batch:    (credits + 1) / 2,
	}
	if err := k.receive(h.count); err != nil {
		return fmt.Errorf("client %s: %w", r.peer, err)
	}
	if err := s.conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.peer, err)
	}
	fmt.Fprintf(out, "Received %d messages; %s disconnected\n", h.count, r.peer)
	return nil
}

// receive takes count messages, reposting each Receive at once, and replies
// whenever batch credits are owed or a sync (a zero-byte message) arrived.
// A reply waits while every reply slot is in flight. It allocates nothing
// unless it fails.
func (k *sink) receive(count int64) error {
	for got := int64(0); got < count; {
		done, err := k.reaper.next()
		if err != nil {
			return fmt.Errorf("after %d messages: %w", got, err)
		}
		for _, r := range done {
			switch {
			case k.replies.owns(r):
				if err := k.replies.complete(); err != nil {
					return fmt.Errorf("after %d messages: the reply's Send completed with %w", got, err)
				}
			case k.recv.owns(r):
				n, err := k.recv.complete(nil)
				if err != nil {
					return fmt.Errorf("message %d: %w", got, err)
				}
				got++
				k.owed++
				if n == 0 {
					k.syncs++
				}
			default:
				return errUnexpected
			}
		}
		if err := k.reply(); err != nil {
			return fmt.Errorf("after %d messages: %w", got, err)
		}
	}
	return nil
}

// reply sends the credits owed and the acknowledgement of a sync, if either
// is due and a reply slot is free.
func (k *sink) reply() error {
	if k.syncs == 0 && k.owed < k.batch || k.replies.full() {
		return nil
	}
	i := k.replies.slot()
	b := k.replyBuf[i*pingReplySize : (i+1)*pingReplySize]
	pingReply{credits: uint32(k.owed), syncs: k.syncs}.put(b)
	k.sgl[0] = nd.SGE{Buffer: b, Region: k.replyMR}
	if err := k.ep.Send(k.replies.next(), k.sgl[:], 0); err != nil {
		return fmt.Errorf("sending a reply: %w", err)
	}
	k.replies.posted()
	k.owed, k.syncs = 0, 0
	return nil
}
