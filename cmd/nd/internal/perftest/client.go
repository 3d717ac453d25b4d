package perftest

// The active side of one nd perf connection: its set-up, its control
// messages and the completions it takes. client_step.go has the timed
// loops, run.go drives the connections through the sizes.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// perfReplySlots is the number of Receives the client keeps posted for the
// server's messages: at most two credit messages and one answer are ever
// on their way (see nd ping's replies), or one echo.
const perfReplySlots = 4

// perfConn is the client's side of one connection. Its completions come
// from the side's one completion queue (q), which hands each one to its
// connection by its Result.
type perfConn struct {
	ctx       context.Context
	test      *perfTest
	qp        int // the connection's index among -q
	s         *session.Session
	q         *perfCQ
	replies   *datapath.ReceiveRing // the server's messages, each slot its own buffer
	replyMR   nd.MemoryRegion
	reply     [perfMsgSize]byte // the message being parsed
	answer    perfMsg           // the last answer (not a credit message) not yet taken
	answered  bool
	credits   int // Sends the server has Receives posted for
	ctrl      []byte
	ctrlMR    nd.MemoryRegion
	ctrlRes   nd.Result // the control message's or the end marker's Send
	ctrlBusy  bool
	buf       []byte // the source of Sends and Writes, the sink of Reads
	bufMR     nd.MemoryRegion
	win       []byte // write_lat: the window the server Writes into; from alloc
	winMR     nd.MemoryRegion
	alloc     datapath.WindowAlloc
	mw        nd.MemoryWindow
	bindRes   nd.Result
	bound     bool                  // bindRes completed
	ord       int                   // the outbound read limit the connection negotiated
	remote    nd.MWDescriptor       // the server's window
	ops       *datapath.RequestRing // the data requests in flight
	sgl       [1]nd.SGE
	msg       []nd.SGE // the step's scatter/gather list, over sgl
	inline    int
	echoSize  int // send_lat: the size of the echoes due, 0 outside a step
	echoes    int // send_lat: echoes arrived and not yet taken
	pings     int // send_lat: the step's Sends so far
	cqMod     int // send_lat: every cqMod-th Send asks for a completion
	silentRes nd.Result
	pollRoom  func() error   // ping's poll while the send queue is full
	round     int            // write_lat: the round trips so far
	postedAt  timing.Instant // lat: the clock right after the iteration's post
	sent      int            // bw: the step's requests posted
	more      bool           // bw: more requests are to be posted in the step
	streaming bool           // bw: requests of the step are to be posted or completed
	posted    []int64
	completed []int64 // bw: when each request was posted and completed, ns after start
	start     timing.Instant
	end       timing.Instant
	n         int // the step's requests completed
}

// clientLimits returns the limits of each of the client's endpoints for
// messages of up to maxSize bytes, checked against the adapter's.
func (c *Config) clientLimits(a nd.Adapter, ai nd.AdapterInfo, maxSize int) (nd.EndpointLimits, error) {
	op := c.Test.op
	var err error
	if op == opSend {
		err = session.CheckSize(ai, max(maxSize, perfMsgSize))
	} else {
		err = datapath.CheckWindow(ai, maxSize)
	}
	if err != nil {
		return nd.EndpointLimits{}, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// The data requests, a control message or the end marker, and a Bind;
	// send_lat's silent Sends stay in the queue until the server's side
	// acknowledges them.
	limits := nd.EndpointLimits{InboundEntries: perfReplySlots, OutboundEntries: c.TxDepth + 2, InboundSGE: 1, OutboundSGE: 1}
	if op == opSend && c.Test.Lat {
		limits.OutboundEntries += perfSilentSlack
	}
	if op == opRead {
		limits.OutboundReadLimit = min(c.TxDepth, ai.MaxOutboundReadLimit)
		if limits.OutboundReadLimit < 1 {
			return nd.EndpointLimits{}, fmt.Errorf("adapter %s allows no RDMA Reads in flight", a.Address())
		}
	}
	if err := checkPerfLimits(ai, limits); err != nil {
		return nd.EndpointLimits{}, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	return limits, nil
}

// dialConn connects connection qp of the test from adapter a, its
// endpoint of limits attached to q, to the server at remote, for messages
// of up to maxSize bytes. exchange completes the set-up.
func (c *Config) dialConn(ctx context.Context, a nd.Adapter, q *perfCQ, limits nd.EndpointLimits, remote netip.AddrPort, qp, maxSize int) (_ *perfConn, err error) {
	s, err := session.NewWithSRQ(a, nil, q.cq, limits, c.useSRQ)
	if err != nil {
		return nil, err
	}
	pc := &perfConn{
		ctx:    ctx,
		test:   c.Test,
		qp:     qp,
		s:      s,
		q:      q,
		inline: s.EP.MaxInlineData(),
		alloc:  datapath.NewWindowAlloc(c.Provider.Name, c.heap),
		cqMod:  c.CQMod,
	}
	defer func() {
		if err != nil {
			pc.close()
		}
	}()
	if err := pc.setUp(ctx, a, maxSize, c.Iters, c.duration > 0); err != nil {
		return nil, err
	}
	var credits int
	checkWelcome := func(b []byte) error {
		if err := perfGreeting.CheckWelcome(b); err != nil {
			return err
		}
		if len(b) < session.WelcomeSize+4 {
			return fmt.Errorf("the server's welcome has no credits (private data %q)", b)
		}
		credits = int(binary.BigEndian.Uint32(b[session.WelcomeSize:]))
		return nil
	}
	h := perfHello{test: c.Test, qp: qp, qps: c.QPs, txDepth: c.TxDepth, maxSize: maxSize, useSRQ: c.useSRQ}
	if err := s.Dial(ctx, remote, h.wire(), checkWelcome); err != nil {
		return nil, err
	}
	pc.credits = credits
	if _, pc.ord, err = session.ReadLimits(s.Conn, limits); err != nil {
		return nil, err
	}
	return pc, nil
}

// index implements perfOwner.
func (pc *perfConn) index() int { return pc.qp }

// setUp registers the connection's buffers, posts its Receives, records
// its Results with the completion queue and sizes its records: per request
// with iters for a bw test (the lat tests' are the side's).
func (pc *perfConn) setUp(ctx context.Context, a nd.Adapter, maxSize, iters int, timed bool) (err error) {
	if pc.buf, pc.bufMR, err = pc.alloc.Registered(ctx, a, maxSize); err != nil {
		return err
	}
	if pc.ctrl, pc.ctrlMR, err = datapath.Registered(ctx, a, perfMsgSize); err != nil {
		return err
	}
	slot := perfMsgSize
	if pc.test.op == opSend && pc.test.Lat {
		slot = max(slot, maxSize) // the echoes land here too
	}
	var replyBuf []byte
	if replyBuf, pc.replyMR, err = datapath.Registered(ctx, a, perfReplySlots*slot); err != nil {
		return err
	}
	pc.q.own(pc, &pc.ctrlRes, &pc.silentRes, &pc.bindRes)
	if pc.replies, err = datapath.NewReceiveSlots(pc.s.Receiver(), replyBuf, pc.replyMR, perfReplySlots); err != nil {
		return err
	}
	pc.q.ownAll(pc, pc.replies.Results)
	if pc.test.op == opWrite && pc.test.Lat {
		// Zeroed: no round's last byte is 0.
		if pc.win, err = pc.alloc.Get(maxSize); err != nil {
			return err
		}
		if pc.winMR, err = a.RegisterMemory(ctx, pc.win); err != nil {
			return fmt.Errorf("RegisterMemory of %d bytes: %w", len(pc.win), err)
		}
	}
	if !pc.test.Lat && !timed {
		pc.posted, pc.completed = make([]int64, iters), make([]int64, iters)
	}
	return nil
}

// exchange takes the server's window and, for write_lat, sends the
// client's; it sizes the pipeline: txDepth requests, and for read_bw no
// more than the connection's and the server's read limits allow.
func (pc *perfConn) exchange(maxSize, txDepth int) error {
	ord := pc.ord
	m, err := pc.await(msgWindow)
	if err != nil {
		return fmt.Errorf("waiting for the server's window: %w", err)
	}
	depth := txDepth
	if pc.test.op != opSend {
		pc.remote = m.window.Desc
		if pc.remote.Length < uint64(maxSize) {
			return fmt.Errorf("the server's window has %d bytes, want %d", pc.remote.Length, maxSize)
		}
	}
	if pc.test.op == opRead {
		depth = min(depth, ord, int(m.window.ReadLimit))
		if depth < 1 {
			return fmt.Errorf("the connection allows no RDMA Reads (outbound read limit %d, the server's %d)", ord, m.window.ReadLimit)
		}
	}
	pc.ops = datapath.NewRequestRing(depth)
	pc.q.ownAll(pc, pc.ops.Results)
	if pc.win == nil {
		return nil
	}
	mw, desc, err := pc.s.BindWindow(&pc.bindRes, pc.winMR, pc.win, nd.FlagAllowWrite)
	if err != nil {
		return err
	}
	pc.mw = mw
	for !pc.bound {
		if err := pc.take(); err != nil {
			return fmt.Errorf("binding the window: %w", err)
		}
	}
	if err := pc.send(perfMsg{kind: msgWindow, window: datapath.WindowMsg{Desc: desc}}); err != nil {
		return err
	}
	if _, err := pc.await(msgReady); err != nil {
		return fmt.Errorf("sending the window: %w", err)
	}
	return nil
}

// close releases the window, the registrations and the session.
func (pc *perfConn) close() {
	if pc.mw != nil {
		pc.mw.Close()
	}
	datapath.Deregister(pc.ctx, pc.s.Adapter, pc.bufMR, pc.ctrlMR, pc.replyMR, pc.winMR)
	pc.s.Close()
	pc.alloc.Free(pc.win)
	pc.alloc.Free(pc.buf)
}

// send sends a control message; a message of kind 0 is the end marker, a
// zero-byte Send. It waits for the previous one's completion and for a credit.
func (pc *perfConn) send(m perfMsg) error {
	for pc.ctrlBusy || pc.credits == 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	var sgl []nd.SGE
	if m.kind != 0 {
		pc.sgl[0] = nd.SGE{Buffer: m.put(pc.ctrl), Region: pc.ctrlMR}
		sgl = pc.sgl[:]
	}
	if err := pc.s.EP.Send(&pc.ctrlRes, sgl, 0); err != nil {
		return fmt.Errorf("sending a %s message: %w", perfKindName(m.kind), err)
	}
	pc.ctrlBusy = true
	pc.credits--
	return nil
}

// await waits for the server's next answer, which must be of kind.
func (pc *perfConn) await(kind uint32) (perfMsg, error) {
	for !pc.answered {
		if err := pc.take(); err != nil {
			return perfMsg{}, err
		}
	}
	pc.answered = false
	if pc.answer.kind != kind {
		return perfMsg{}, fmt.Errorf("the server sent a %s message, want %s", perfKindName(pc.answer.kind), perfKindName(kind))
	}
	return pc.answer, nil
}

// take waits for completions of the side's completion queue and hands
// each to its connection, this one's or another's.
func (pc *perfConn) take() error { return pc.q.take() }

// complete implements perfOwner: it takes a completion of the
// connection's: a data request's, the control Send's, the Bind's, or a
// server's message. It allocates nothing unless it fails.
func (pc *perfConn) complete(r *nd.Result) error {
	switch {
	case pc.ops != nil && pc.ops.Owns(r):
		if err := pc.ops.Complete(); err != nil {
			return fmt.Errorf("request %d completed with %w", pc.n, err)
		}
		if pc.n < len(pc.completed) {
			pc.completed[pc.n] = int64(timing.Since(pc.start))
		}
		pc.n++
	case r == &pc.silentRes:
		// Silent Sends complete only when they fail.
		return fmt.Errorf("a Send completed with %w", r.Status.Err())
	case r == &pc.ctrlRes:
		if err := r.Status.Err(); err != nil {
			return fmt.Errorf("a control message's Send completed with %w", err)
		}
		pc.ctrlBusy = false
	case r == &pc.bindRes:
		if err := r.Status.Err(); err != nil {
			return fmt.Errorf("the Bind completed with %w", err)
		}
		pc.bound = true
	case pc.replies.Owns(r) && pc.echoSize > 0:
		// Reposted after the next ping went (ping): the server has
		// one echo in flight, and the other slots stay posted.
		n, err := pc.replies.Take(nil)
		if err != nil {
			return err
		}
		if n != pc.echoSize {
			return fmt.Errorf("an echo of %d bytes, want %d", n, pc.echoSize)
		}
		pc.echoes++
		pc.credits++
	case pc.replies.Owns(r):
		n, err := pc.replies.Complete(pc.reply[:])
		if err != nil {
			return err
		}
		m, err := parsePerfMsg(pc.reply[:], n)
		if err != nil {
			return err
		}
		pc.credits += int(m.credits)
		if m.kind == msgCredit {
			return nil
		}
		if pc.answered {
			return fmt.Errorf("a %s message before the %s message was taken", perfKindName(m.kind), perfKindName(pc.answer.kind))
		}
		pc.answer, pc.answered = m, true
	default:
		return datapath.ErrUnexpected
	}
	return nil
}
