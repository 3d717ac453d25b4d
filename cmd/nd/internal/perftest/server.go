package perftest

// The passive side of nd perf: accepts the client's connections (as many
// as its first hello announces), all attached to one completion queue, and
// serves them from one goroutine: each completion goes to its connection,
// which answers the client's control messages and, in a step, takes its
// messages (send_bw), echoes them (send_lat) or waits for the end marker;
// write_lat's Writes are answered by spinning on the window of the
// connection whose turn it is (server_step.go).

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// perfServer is the server's side of a run.
type perfServer struct {
	ctx      context.Context
	test     *perfTest
	peer     netip.AddrPort // the client's address
	q        *perfCQ
	conns    []*perfServed
	owing    []*perfServed // connections with an echo or a reply waiting for room
	done     int           // connections whose client said done
	stepping int           // connections in a step
	pongs    bool          // write_lat: the server answers Writes
	rr       int           // write_lat: the connection whose Write comes next
}

// Serve implements session.DataTool: it accepts the client's connections on l and
// serves them until the client is done and has disconnected.
func (c *Config) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	srv := &perfServer{ctx: ctx}
	defer srv.close()
	var (
		h0     perfHello
		limits nd.EndpointLimits
	)
	accept := func(i int) error {
		r, err := session.NextRequest(ctx, a, l)
		if err != nil {
			return err
		}
		h, err := parsePerfHello(r.Data)
		if err == nil && i > 0 && (h.test != h0.test || h.qps != h0.qps || h.qp != i || h.maxSize != h0.maxSize || h.txDepth != h0.txDepth) {
			err = fmt.Errorf("connection %d announces connection %d of %d for %s; the first announced %d for %s",
				i, h.qp, h.qps, h.test.Name, h0.qps, h0.test.Name)
		}
		if err != nil {
			return r.Reject(err)
		}
		if i == 0 {
			h0 = h
			fmt.Fprintf(out, "Accepted a connection from %s: %s, %d connection(s), messages of up to %d bytes\n",
				r.Peer, h.test.Name, h.qps, h.maxSize)
			srv.test, srv.peer = h.test, r.Peer
			srv.pongs = h.test.op == opWrite && h.test.Lat
			srv.conns, srv.owing = make([]*perfServed, 0, h.qps), make([]*perfServed, 0, h.qps)
			if limits, err = servedLimits(a, ai, h); err == nil {
				srv.q, err = newPerfCQ(ctx, a, ai, limits, h.qps, c.Blocking)
			}
			if err != nil {
				return r.Reject(err)
			}
		}
		sv, err := c.newServed(ctx, a, srv, i, r.Conn, h, limits)
		if err != nil {
			return r.Reject(err)
		}
		if err := sv.s.Accept(ctx, r, perfGreeting.Welcome(binary.BigEndian.AppendUint32(nil, uint32(sv.owed)))); err != nil {
			sv.close()
			return err
		}
		sv.owed = 0 // granted in the welcome
		srv.conns = append(srv.conns, sv)
		return nil
	}
	for i := 0; i == 0 || i < h0.qps; i++ {
		if err := accept(i); err != nil {
			return err
		}
	}
	if err := srv.run(); err != nil {
		return fmt.Errorf("client %s: %w", srv.peer, err)
	}
	for i, sv := range srv.conns {
		if err := sv.s.Conn.NotifyDisconnect(ctx); err != nil {
			return fmt.Errorf("client %s, connection %d: NotifyDisconnect: %w", srv.peer, i, err)
		}
	}
	fmt.Fprintf(out, "Served %d connection(s); the client disconnected\n", h0.qps)
	return nil
}

// close releases the connections, then the completion queue.
func (srv *perfServer) close() {
	for _, sv := range srv.conns {
		sv.close()
	}
	if srv.q != nil {
		srv.q.close()
	}
}

// perfServed is the server's side of one connection.
type perfServed struct {
	ctx      context.Context
	srv      *perfServer
	qp       int // the connection's index
	test     *perfTest
	s        *session.Session
	recv     *datapath.ReceiveRing
	recvMR   nd.MemoryRegion
	msg      [perfMsgSize]byte     // the control message being parsed
	sends    *datapath.RequestRing // the replies, echoes and Writes in flight
	replyBuf []byte                // a perfMsgSize slot per entry of sends
	replyMR  nd.MemoryRegion
	win      []byte // the window the client's RDMA targets (RDMA tests); from alloc
	winMR    nd.MemoryRegion
	alloc    datapath.WindowAlloc
	mw       nd.MemoryWindow
	desc     nd.MWDescriptor // the window's, once bound
	src      []byte          // the source of echoes and of write_lat's Writes
	srcMR    nd.MemoryRegion
	sgl      [1]nd.SGE // the control messages'
	dataSGL  [1]nd.SGE
	data     []nd.SGE        // the step's echo or Write, over dataSGL
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
	bindRes  nd.Result

	size   int   // the step's message size
	inStep bool  // between the step message and the end marker
	got    int64 // the step's messages received or answered
	done   bool  // the client said done

	// What waits for room in the send queue (perfServer.owing).
	echoOwed    int // send_lat: echoes to send
	replyOwed   bool
	replyKind   uint32
	replyValue  uint64
	replyWindow datapath.WindowMsg
	listed      bool // in perfServer.owing
}

// servedLimits returns the limits of the server's endpoints for the
// client's hello h, checked against the adapter's.
func servedLimits(a nd.Adapter, ai nd.AdapterInfo, h perfHello) (nd.EndpointLimits, error) {
	if h.test.op != opSend {
		if err := datapath.CheckWindow(ai, h.maxSize); err != nil {
			return nd.EndpointLimits{}, fmt.Errorf("adapter %s: %w", a.Address(), err)
		}
	} else if err := session.CheckSize(ai, max(h.maxSize, perfMsgSize)); err != nil {
		return nd.EndpointLimits{}, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	// send_bw's Receives are its credits; the other tests have at most one
	// message of the client's in flight, and a control message.
	depth := 4
	if h.test == TestNamed("send_bw") {
		depth = max(depth, min(2*h.txDepth, 4096))
	}
	limits := nd.EndpointLimits{InboundEntries: depth, OutboundEntries: depth + 1, InboundSGE: 1, OutboundSGE: 1}
	if h.test == TestNamed("send_lat") {
		limits.OutboundEntries += perfSilentSlack // silent echoes not yet acknowledged
	}
	if h.test.op == opRead {
		limits.InboundReadLimit = ai.MaxInboundReadLimit
	}
	if err := checkPerfLimits(ai, limits); err != nil {
		return nd.EndpointLimits{}, fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	return limits, nil
}

// newServed sets up the server's side of connection qp on conn for the
// client's hello h, its endpoint of limits attached to srv's completion
// queue: its buffers, window and Receives. owed holds the credits to grant
// in the welcome.
func (c *Config) newServed(ctx context.Context, a nd.Adapter, srv *perfServer, qp int, conn nd.Connector, h perfHello, limits nd.EndpointLimits) (_ *perfServed, err error) {
	recvSize := perfMsgSize
	if h.test.op == opSend {
		recvSize = max(h.maxSize, perfMsgSize)
	}
	depth := limits.InboundEntries
	s, err := session.NewWithSRQ(a, conn, srv.q.cq, limits, h.useSRQ)
	if err != nil {
		return nil, err
	}
	sv := &perfServed{
		ctx:     ctx,
		srv:     srv,
		qp:      qp,
		test:    h.test,
		s:       s,
		sends:   datapath.NewRequestRing(depth),
		maxSize: h.maxSize,
		inline:  s.EP.MaxInlineData(),
		batch:   (depth + 1) / 2,
		owed:    depth,
		alloc:   datapath.NewWindowAlloc(c.Provider.Name, c.heap),
	}
	defer func() {
		if err != nil {
			sv.close()
		}
	}()
	var recvBuf []byte
	if recvBuf, sv.recvMR, err = datapath.Registered(ctx, a, recvSize); err != nil {
		return nil, err
	}
	if sv.replyBuf, sv.replyMR, err = datapath.Registered(ctx, a, depth*perfMsgSize); err != nil {
		return nil, err
	}
	if h.test.Lat && h.test.op != opRead {
		if sv.src, sv.srcMR, err = sv.alloc.Registered(ctx, a, h.maxSize); err != nil {
			return nil, err
		}
	}
	if h.test.op != opSend {
		// Zeroed: no round's last byte is 0.
		if sv.win, err = sv.alloc.Get(h.maxSize); err != nil {
			return nil, err
		}
		if sv.winMR, err = a.RegisterMemory(ctx, sv.win); err != nil {
			return nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(sv.win), err)
		}
	}
	srv.q.own(sv, &sv.silent, &sv.bindRes)
	srv.q.ownAll(sv, sv.sends.Results)
	// The bytes of the client's messages are not looked at, but for the
	// control messages, which arrive while nothing else is in flight: every
	// Receive lands in the same buffer.
	if sv.recv, err = datapath.NewReceiveRing(s.Receiver(), []nd.SGE{{Buffer: recvBuf, Region: sv.recvMR}}, depth); err != nil {
		return nil, err
	}
	srv.q.ownAll(sv, sv.recv.Results)
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
	datapath.Deregister(sv.ctx, sv.s.Adapter, sv.recvMR, sv.replyMR, sv.srcMR, sv.winMR)
	sv.s.Close()
	sv.alloc.Free(sv.win)
	sv.alloc.Free(sv.src)
}

// index implements perfOwner.
func (sv *perfServed) index() int { return sv.qp }

// start sends the connection's window, once bound (the Bind's completion
// sends it, see complete), or an empty one for send tests.
func (sv *perfServed) start() error {
	if sv.win == nil {
		return sv.reply(msgWindow, 0, datapath.WindowMsg{})
	}
	var err error
	if sv.ird, _, err = session.ReadLimits(sv.s.Conn, nd.EndpointLimits{InboundReadLimit: 1 << 30}); err != nil {
		return err
	}
	if sv.mw, sv.desc, err = sv.s.BindWindow(&sv.bindRes, sv.winMR, sv.win, nd.FlagAllowRead|nd.FlagAllowWrite); err != nil {
		return err
	}
	return nil
}

// complete implements perfOwner: it takes a completion of the
// connection's. It allocates nothing unless it fails.
func (sv *perfServed) complete(r *nd.Result) error {
	switch {
	case sv.sends.Owns(r):
		if err := sv.sends.Complete(); err != nil {
			return fmt.Errorf("a Send or Write completed with %w", err)
		}
		return sv.returnCredits()
	case r == &sv.silent:
		// Silent echoes complete only when they fail.
		return fmt.Errorf("an echo's Send completed with %w", r.Status.Err())
	case r == &sv.bindRes:
		if err := r.Status.Err(); err != nil {
			return fmt.Errorf("binding the window: %w", err)
		}
		return sv.reply(msgWindow, 0, datapath.WindowMsg{Desc: sv.desc, ReadLimit: uint32(sv.ird)})
	case sv.done && r.Status.Failed():
		// Receives flushed as the client disconnects after its done
		// message: ignored.
		return nil
	case sv.recv.Owns(r) && sv.inStep:
		return sv.stepMessage(r)
	case sv.recv.Owns(r) && !sv.done:
		return sv.control(r)
	default:
		return datapath.ErrUnexpected
	}
}

// control takes the client's control message of r.
func (sv *perfServed) control(r *nd.Result) error {
	n := r.BytesTransferred
	if _, err := sv.recv.Take(sv.msg[:]); err != nil {
		return err
	}
	sv.owed++
	m, err := parsePerfMsg(sv.msg[:], n)
	if err != nil {
		return err
	}
	// A Receive that cannot be posted again is no matter after the
	// client's last word.
	if err := sv.recv.Repost(); err != nil && m.kind != msgDone {
		return err
	}
	switch m.kind {
	case msgDone:
		sv.done = true
		sv.srv.done++
		return nil
	case msgWindow:
		sv.peer = m.window.Desc
		return sv.reply(msgReady, 0, datapath.WindowMsg{})
	case msgStep:
		if m.value < 1 || m.value > uint64(sv.maxSize) {
			return fmt.Errorf("the client announces messages of %d bytes; it said at most %d", m.value, sv.maxSize)
		}
		if m.cqMod > perfMaxCQMod {
			return fmt.Errorf("the client asks for every %dth echo's completion, at most every %dth", m.cqMod, perfMaxCQMod)
		}
		sv.cqMod, sv.echoes = max(1, int(m.cqMod)), 0
		sv.size, sv.got, sv.inStep = int(m.value), 0, true
		sv.srv.stepping++
		sv.srv.rr = 0 // write_lat's rounds start at connection 0
		if sv.src != nil {
			region := sv.srcMR
			if sv.size <= sv.inline {
				region = nil
			}
			sv.data = datapath.SplitSGL(sv.dataSGL[:], sv.src[:sv.size], region, 1)
		}
		return sv.reply(msgReady, 0, datapath.WindowMsg{})
	default:
		return fmt.Errorf("the client sent a %s message", perfKindName(m.kind))
	}
}

// reply sends a control message that returns the credits owed, or owes
// it until a Send slot is free.
func (sv *perfServed) reply(kind uint32, value uint64, w datapath.WindowMsg) error {
	if sv.replyOwed {
		return fmt.Errorf("a %s message to send while the %s message waits for room", perfKindName(kind), perfKindName(sv.replyKind))
	}
	if sv.sends.Full() {
		sv.replyOwed, sv.replyKind, sv.replyValue, sv.replyWindow = true, kind, value, w
		sv.srv.owe(sv)
		return nil
	}
	return sv.post(kind, value, w)
}

// post sends a control message in the next Send slot, which is free.
func (sv *perfServed) post(kind uint32, value uint64, w datapath.WindowMsg) error {
	i := sv.sends.Slot()
	b := perfMsg{kind: kind, credits: uint32(sv.owed), value: value, window: w}.put(sv.replyBuf[i*perfMsgSize:])
	sv.sgl[0] = nd.SGE{Buffer: b, Region: sv.replyMR}
	if err := sv.s.EP.Send(sv.sends.Next(), sv.sgl[:], 0); err != nil {
		return fmt.Errorf("sending a %s message: %w", perfKindName(kind), err)
	}
	sv.sends.Posted()
	sv.owed = 0
	return nil
}

// owe lists sv among the connections with something waiting for room.
func (srv *perfServer) owe(sv *perfServed) {
	if !sv.listed {
		sv.listed = true
		srv.owing = append(srv.owing, sv) // within its capacity: no allocation
	}
}

// settle sends what the listed connections owe, as far as there is room,
// and keeps those that still owe something listed.
func (srv *perfServer) settle() error {
	kept := srv.owing[:0]
	for _, sv := range srv.owing {
		if err := sv.settle(); err != nil {
			return fmt.Errorf("connection %d: %w", sv.qp, err)
		}
		if sv.echoOwed > 0 || sv.replyOwed {
			kept = append(kept, sv)
		} else {
			sv.listed = false
		}
	}
	srv.owing = kept
	return nil
}

// settle sends the connection's owed echoes, then its owed reply, as far
// as there is room.
func (sv *perfServed) settle() error {
	for sv.echoOwed > 0 {
		sent, err := sv.sendEcho()
		if err != nil || !sent {
			return err
		}
		sv.echoOwed--
	}
	if sv.replyOwed && !sv.sends.Full() {
		sv.replyOwed = false
		return sv.post(sv.replyKind, sv.replyValue, sv.replyWindow)
	}
	return nil
}
