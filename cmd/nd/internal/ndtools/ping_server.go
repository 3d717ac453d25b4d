package ndtools

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
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// sink is the server's data path.
type sink struct {
	ep       nd.Endpoint
	reaper   *datapath.Reaper
	recv     *datapath.ReceiveRing
	replies  *datapath.RequestRing // the reply Sends in flight
	replyBuf []byte                // a pingReplySize slot per reply in flight
	replyMR  nd.MemoryRegion
	sgl      [1]nd.SGE // the reply's scatter/gather list
	batch    int       // credits returned at a time, half of those granted
	owed     int       // messages received whose credit is not returned yet
	syncs    uint32    // syncs received and not acknowledged yet
}

// Serve accepts one connection on l, takes the number of messages the
// client announced, and waits for the client to disconnect.
func (c *pingConfig) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := session.PingGreeting.ParseHello(r.Data)
	if err != nil {
		return r.Reject(err)
	}
	// One Receive more than the credits granted, as ndping does, so that
	// the queue has room to spare.
	depth := max(c.Depth, 2)
	credits := depth - 1
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return r.Reject(err)
	}
	limits := nd.EndpointLimits{
		InboundEntries:  depth,
		OutboundEntries: depth,
		InboundSGE:      c.SGEs,
		OutboundSGE:     1,
	}
	if err := c.CheckQueues(ai, limits); err != nil {
		return r.Reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	if err := session.CheckSize(ai, h.MaxSize); err != nil {
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
	replyBuf, replyMR, err := datapath.Registered(ctx, a, depth*pingReplySize)
	if err != nil {
		datapath.Deregister(ctx, a, recvMR)
		return r.Reject(err)
	}
	defer datapath.Deregister(ctx, a, recvMR, replyMR)
	// The messages' bytes are not looked at: every Receive lands in the
	// same buffer.
	recv, err := datapath.NewReceiveRing(s.EP, datapath.SplitSGL(make([]nd.SGE, c.SGEs), recvBuf, recvMR, c.SGEs), depth)
	if err != nil {
		return r.Reject(err)
	}
	if err := s.Accept(ctx, r, session.PingGreeting.Welcome(binary.BigEndian.AppendUint32(nil, uint32(credits)))); err != nil {
		return err
	}
	fmt.Fprintf(out, "Accepted a connection from %s: %d messages of up to %d bytes, %d credits\n", r.Peer, h.Count, h.MaxSize, credits)

	k := &sink{
		ep:       s.EP,
		reaper:   datapath.NewReaper(ctx, s.CQ, c.Blocking, 2*depth),
		recv:     recv,
		replies:  datapath.NewRequestRing(depth),
		replyBuf: replyBuf,
		replyMR:  replyMR,
		batch:    (credits + 1) / 2,
	}
	if err := k.receive(h.Count); err != nil {
		return fmt.Errorf("client %s: %w", r.Peer, err)
	}
	if err := s.Conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.Peer, err)
	}
	fmt.Fprintf(out, "Received %d messages; %s disconnected\n", h.Count, r.Peer)
	return nil
}

// receive takes count messages, reposting each Receive at once, and replies
// whenever batch credits are owed or a sync (a zero-byte message) arrived.
// A reply waits while every reply slot is in flight. It allocates nothing
// unless it fails.
func (k *sink) receive(count int64) error {
	for got := int64(0); got < count; {
		done, err := k.reaper.Next()
		if err != nil {
			return fmt.Errorf("after %d messages: %w", got, err)
		}
		for _, r := range done {
			switch {
			case k.replies.Owns(r):
				if err := k.replies.Complete(); err != nil {
					return fmt.Errorf("after %d messages: the reply's Send completed with %w", got, err)
				}
			case k.recv.Owns(r):
				n, err := k.recv.Complete(nil)
				if err != nil {
					return fmt.Errorf("message %d: %w", got, err)
				}
				got++
				k.owed++
				if n == 0 {
					k.syncs++
				}
			default:
				return datapath.ErrUnexpected
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
	if k.syncs == 0 && k.owed < k.batch || k.replies.Full() {
		return nil
	}
	i := k.replies.Slot()
	b := k.replyBuf[i*pingReplySize : (i+1)*pingReplySize]
	pingReply{credits: uint32(k.owed), syncs: k.syncs}.put(b)
	k.sgl[0] = nd.SGE{Buffer: b, Region: k.replyMR}
	if err := k.ep.Send(k.replies.Next(), k.sgl[:], 0); err != nil {
		return fmt.Errorf("sending a reply: %w", err)
	}
	k.replies.Posted()
	k.owed, k.syncs = 0, 0
	return nil
}
