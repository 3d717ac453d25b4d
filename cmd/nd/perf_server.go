package main

// The passive side of nd perf: accepts the client's connections (as many
// as its first hello announces) and serves each in a goroutine of its own,
// step by step as the client announces them.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/godirect/nd"
)

// serve implements dataTool: it accepts the client's connections on l and
// serves them until the client is done and has disconnected.
func (c *perfConfig) serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error // the first connection's failure
		h0    perfHello
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		cancel()
	}
	accept := func(i int) error {
		r, err := nextRequest(ctx, a, l)
		if err != nil {
			return err
		}
		h, err := parsePerfHello(r.data)
		if err == nil && i > 0 && (h.test != h0.test || h.qps != h0.qps || h.qp != i || h.maxSize != h0.maxSize) {
			err = fmt.Errorf("connection %d announces connection %d of %d for %s; the first announced %d for %s",
				i, h.qp, h.qps, h.test.name, h0.qps, h0.test.name)
		}
		if err != nil {
			return r.reject(err)
		}
		if i == 0 {
			h0 = h
			fmt.Fprintf(out, "Accepted a connection from %s: %s, %d connection(s), messages of up to %d bytes\n",
				r.peer, h.test.name, h.qps, h.maxSize)
		}
		sv, err := c.newServed(ctx, a, ai, r.conn, h)
		if err != nil {
			return r.reject(err)
		}
		if err := sv.s.accept(ctx, r, perfGreeting.welcome(binary.BigEndian.AppendUint32(nil, uint32(sv.owed)))); err != nil {
			sv.close()
			return err
		}
		sv.owed = 0 // granted in the welcome
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sv.close()
			if err := sv.serve(r.conn); err != nil {
				fail(fmt.Errorf("client %s, connection %d: %w", r.peer, i, err))
			}
		}()
		return nil
	}
	for i := 0; i == 0 || i < h0.qps; i++ {
		if err := accept(i); err != nil {
			fail(err)
			break
		}
	}
	wg.Wait()
	if first != nil {
		return first
	}
	fmt.Fprintf(out, "Served %d connection(s); the client disconnected\n", h0.qps)
	return nil
}

// perfServed is the server's side of one connection.
type perfServed struct {
	ctx      context.Context
	test     *perfTest
	s        *session
	reaper   *reaper // polls, or blocks with -b
	waiter   *reaper // blocks: for the tests in which the server only waits
	recv     *receiveRing
	recvMR   nd.MemoryRegion
	msg      [perfMsgSize]byte // the control message being parsed
	sends    *requestRing      // the replies, echoes and Writes in flight
	replyBuf []byte            // a perfMsgSize slot per entry of sends
	replyMR  nd.MemoryRegion
	win      []byte // the window the client's RDMA targets (RDMA tests); from alloc
	winMR    nd.MemoryRegion
	alloc    windowAlloc
	mw       nd.MemoryWindow
	src      []byte // the source of echoes and of write_lat's Writes
	srcMR    nd.MemoryRegion
	sgl      [1]nd.SGE
	peer     nd.MWDescriptor // write_lat: the client's window
	maxSize  int
	inline   int
	ird      int // the Reads the client may have in flight towards us
	batch    int // credits returned at a time
	owed     int // Receives reposted whose credit is not returned yet
	round    int // write_lat: the round trips so far
	cqMod    int // send_lat: every cqMod-th echo asks for a completion (the client's -Q)
	echoes   int // send_lat: echoes sent in the step
	silent   nd.Result
	pollRoom func() error // sendEcho's poll while the send queue is full
	bindRes  nd.Result
}

// newServed sets up the server's side of the connection on conn for the
// client's hello h: its buffers, window and Receives. owed holds the
// credits to grant in the welcome.
func (c *perfConfig) newServed(ctx context.Context, a nd.Adapter, ai nd.AdapterInfo, conn nd.Connector, h perfHello) (_ *perfServed, err error) {
	rdma := h.test.op != opSend
	recvSize := perfMsgSize
	if rdma {
		if err := checkWindow(ai, h.maxSize); err != nil {
			return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
		}
	} else {
		recvSize = max(h.maxSize, perfMsgSize)
		if err := checkSize(ai, recvSize); err != nil {
			return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
		}
	}
	// send_bw's Receives are its credits; the other tests have at most one
	// message of the client's in flight, and a control message.
	depth := 4
	if h.test == perfTestNamed("send_bw") {
		depth = max(depth, min(2*h.txDepth, 4096))
	}
	limits := nd.EndpointLimits{InboundEntries: depth, OutboundEntries: depth + 1, InboundSGE: 1, OutboundSGE: 1}
	if h.test == perfTestNamed("send_lat") {
		limits.OutboundEntries += perfSilentSlack // silent echoes not yet acknowledged
	}
	if h.test.op == opRead {
		limits.InboundReadLimit = ai.MaxInboundReadLimit
	}
	if err := checkPerfLimits(ai, limits); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := newSession(a, conn, limits)
	if err != nil {
		return nil, err
	}
	sv := &perfServed{
		ctx:     ctx,
		test:    h.test,
		s:       s,
		reaper:  newReaper(ctx, s.cq, c.blocking, 2*depth+1),
		waiter:  newReaper(ctx, s.cq, true, 2*depth+1),
		sends:   newRequestRing(depth),
		maxSize: h.maxSize,
		inline:  s.ep.MaxInlineData(),
		batch:   (depth + 1) / 2,
		owed:    depth,
		alloc:   newWindowAlloc(c.provider.name, c.heap),
	}
	defer func() {
		if err != nil {
			sv.close()
		}
	}()
	var recvBuf []byte
	if recvBuf, sv.recvMR, err = registered(ctx, a, recvSize); err != nil {
		return nil, err
	}
	if sv.replyBuf, sv.replyMR, err = registered(ctx, a, depth*perfMsgSize); err != nil {
		return nil, err
	}
	if h.test.lat && h.test.op != opRead {
		if sv.src, sv.srcMR, err = sv.alloc.registered(ctx, a, h.maxSize); err != nil {
			return nil, err
		}
	}
	if rdma {
		// Zeroed: no round's last byte is 0.
		if sv.win, err = sv.alloc.get(h.maxSize); err != nil {
			return nil, err
		}
		if sv.winMR, err = a.RegisterMemory(ctx, sv.win); err != nil {
			return nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(sv.win), err)
		}
	}
	// The bytes of the client's messages are not looked at, but for the
	// control messages, which arrive while nothing else is in flight: every
	// Receive lands in the same buffer.
	if sv.recv, err = newReceiveRing(s.ep, []nd.SGE{{Buffer: recvBuf, Region: sv.recvMR}}, depth); err != nil {
		return nil, err
	}
	return sv, nil
}

// checkPerfLimits checks endpoint limits against the adapter's.
func checkPerfLimits(ai nd.AdapterInfo, l nd.EndpointLimits) error {
	if l.InboundEntries > ai.MaxInboundRequests || l.OutboundEntries > ai.MaxOutboundRequests ||
		l.InboundEntries+l.OutboundEntries > ai.MaxCQEntries {
		return fmt.Errorf("%d Receives and %d outbound requests: the adapter allows %d, %d and %d completion queue entries (see -t)",
			l.InboundEntries, l.OutboundEntries, ai.MaxInboundRequests, ai.MaxOutboundRequests, ai.MaxCQEntries)
	}
	return nil
}

// close releases the window, the registrations and the session.
func (sv *perfServed) close() {
	if sv.mw != nil {
		sv.mw.Close()
	}
	deregister(sv.ctx, sv.s.adapter, sv.recvMR, sv.replyMR, sv.srcMR, sv.winMR)
	sv.s.close()
	sv.alloc.free(sv.win)
	sv.alloc.free(sv.src)
}

// serve runs the connection: it sends the window, then serves the steps
// until the client's done, and waits for the client to disconnect.
func (sv *perfServed) serve(conn nd.Connector) error {
	var w windowMsg
	if sv.win != nil {
		var err error
		if sv.ird, _, err = readLimits(conn, nd.EndpointLimits{InboundReadLimit: 1 << 30}); err != nil {
			return err
		}
		mw, desc, err := sv.s.bindWindow(&sv.bindRes, sv.winMR, sv.win, nd.FlagAllowRead|nd.FlagAllowWrite)
		if err != nil {
			return err
		}
		sv.mw = mw
		if err := sv.reaper.waitAll(&sv.bindRes); err != nil {
			return fmt.Errorf("binding the window: %w", err)
		}
		w = windowMsg{desc: desc, readLimit: uint32(sv.ird)}
	}
	if err := sv.reply(msgWindow, 0, w); err != nil {
		return err
	}
	for {
		m, err := sv.nextMsg()
		if err != nil {
			return err
		}
		switch m.kind {
		case msgDone:
			if err := conn.NotifyDisconnect(sv.ctx); err != nil {
				return fmt.Errorf("NotifyDisconnect: %w", err)
			}
			return nil
		case msgWindow:
			sv.peer = m.window.desc
			if err := sv.reply(msgReady, 0, windowMsg{}); err != nil {
				return err
			}
		case msgStep:
			if m.value < 1 || m.value > uint64(sv.maxSize) {
				return fmt.Errorf("the client announces messages of %d bytes; it said at most %d", m.value, sv.maxSize)
			}
			if m.cqMod > perfMaxCQMod {
				return fmt.Errorf("the client asks for every %dth echo's completion, at most every %dth", m.cqMod, perfMaxCQMod)
			}
			sv.cqMod, sv.echoes = max(1, int(m.cqMod)), 0
			if err := sv.reply(msgReady, 0, windowMsg{}); err != nil {
				return err
			}
			n, err := sv.step(int(m.value))
			if err != nil {
				return fmt.Errorf("size %d: %w", m.value, err)
			}
			if err := sv.reply(msgEnd, uint64(n), windowMsg{}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the client sent a %s message", perfKindName(m.kind))
		}
	}
}

// nextMsg waits for the client's next control message.
func (sv *perfServed) nextMsg() (perfMsg, error) {
	for {
		done, err := sv.waiter.next()
		if err != nil {
			return perfMsg{}, err
		}
		got := -1
		for _, r := range done {
			switch {
			case sv.sends.owns(r):
				if err := sv.sends.complete(); err != nil {
					return perfMsg{}, fmt.Errorf("a Send completed with %w", err)
				}
			case sv.recv.owns(r) && got < 0:
				n := r.BytesTransferred
				if _, err := sv.recv.complete(sv.msg[:]); err != nil {
					// A Receive that completed but could not be posted
					// again is no matter after the client's last word.
					if r.Status != nd.Success || !isDone(sv.msg[:], n) {
						return perfMsg{}, err
					}
				}
				got = n
				sv.owed++
			case got >= 0 && r.Status.Failed():
				// Receives flushed as the client disconnects after its
				// done message, in the same batch: ignored.
			default:
				return perfMsg{}, errUnexpected
			}
		}
		if got >= 0 {
			return parsePerfMsg(sv.msg[:], got)
		}
	}
}

// reply sends a control message that returns the credits owed, once a
// Send slot is free.
func (sv *perfServed) reply(kind uint32, value uint64, w windowMsg) error {
	if err := sv.waitSlot(); err != nil {
		return err
	}
	return sv.post(kind, value, w)
}

// post sends a control message in the next Send slot, which is free.
func (sv *perfServed) post(kind uint32, value uint64, w windowMsg) error {
	i := sv.sends.slot()
	b := perfMsg{kind: kind, credits: uint32(sv.owed), value: value, window: w}.put(sv.replyBuf[i*perfMsgSize:])
	sv.sgl[0] = nd.SGE{Buffer: b, Region: sv.replyMR}
	if err := sv.s.ep.Send(sv.sends.next(), sv.sgl[:], 0); err != nil {
		return fmt.Errorf("sending a %s message: %w", perfKindName(kind), err)
	}
	sv.sends.posted()
	sv.owed = 0
	return nil
}

// waitSlot reaps outbound completions until a Send slot is free. The
// client sends nothing meanwhile: it waits for what the server is about to
// send.
func (sv *perfServed) waitSlot() error {
	for sv.sends.full() {
		done, err := sv.reaper.next()
		if err != nil {
			return err
		}
		for _, r := range done {
			if !sv.sends.owns(r) {
				return errUnexpected
			}
			if err := sv.sends.complete(); err != nil {
				return fmt.Errorf("a Send or Write completed with %w", err)
			}
		}
	}
	return nil
}
