package perftest

// nd perf -R's data connections: the -q connections of a test, their
// buffers and windows, and the pingpong_dests that describe them.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// rcmSide is one side of a -R test: its parameters and its data
// connections. It is used by one goroutine.
type rcmSide struct {
	test     *perfTest
	server   bool
	a        nd.Adapter
	ai       nd.AdapterInfo
	sizes    []int
	maxSize  int
	iters    int           // per size and connection; 0 with -D
	dur      time.Duration // -D, or 0
	depth    int           // requests in flight per connection
	rxd      int           // Receives per connection (the Send tests)
	cqMod    int           // send_lat: every cqMod-th Send is signaled
	outReads int           // -o: the Reads in flight, 0 for the adapter's most
	credits  bool          // send_bw: the server RDMA-Writes credits (not on RoCE/IB)
	cycle    int           // the cycle buffer both sides agreed on
	conns    []*rcmConn
}

// rcmConn is one data connection and what it moves.
type rcmConn struct {
	s      *session.Session
	reaper *datapath.Reaper
	lim    nd.EndpointLimits
	src    []byte // Sends' and Writes' source, Reads' sink
	srcMR  nd.MemoryRegion
	win    []byte // what the peer reaches (a window), or the Receives' buffer
	winMR  nd.MemoryRegion
	credit []byte // the send_bw server's credit sources
	credMR nd.MemoryRegion
	mws    []nd.MemoryWindow
	// opened is the connection's buffer opened to every connection (see
	// describe), when it is not a window.
	opened nd.RemoteAccess
	mine   rcmDest
	remote rcmDest
	ird    int // the Reads the peer may have in flight toward us
	ord    int // the Reads we may have in flight

	results   []nd.Result // the requests' ring
	silent    nd.Result   // send_lat's unsignaled Sends (completes only on failure)
	recvs     []nd.Result // the Receives' ring
	writes    []nd.Result // the send_bw server's credit Writes' ring
	sgl       [1]nd.SGE
	rsgl      [1]nd.SGE
	wsgl      [1]nd.SGE
	rdesc     nd.MWDescriptor // the peer's buffer, for the size being measured
	rPosted   int             // Receives ever posted
	rDone     int             // and completed
	posted    []int64         // when each request of the size was posted (bw client)
	completed []int64         // and completed

	// Counters of the size being measured.
	scnt, ccnt     int // requests posted and completed (send_lat: signaled Sends)
	rcnt, rposted  int // Receives completed and posted
	wPosted, wDone int // credit Writes
	arrived        int // Receives completed and not yet taken (send_lat)
}

// needsSrc, needsWin and winRights say which buffers the side has.
func (s *rcmSide) needsSrc() bool {
	return !s.server || s.test.op == opSend || (s.test.Lat && s.test.op != opRead)
}

func (s *rcmSide) needsWin() bool {
	switch {
	case s.test.Lat:
		return s.test.op != opRead || s.server
	case s.server:
		return s.test.op != opSend
	}
	return s.test.op == opSend // the credit word
}

// winRights are the rights of the window over win that the peer uses, 0
// when it uses none.
func (s *rcmSide) winRights() nd.Flags {
	switch {
	case s.test.op == opSend && s.test.Lat:
		return 0 // the Receives' buffer
	case s.test.op == opSend:
		if s.server {
			return 0
		}
		return nd.FlagAllowWrite
	case s.test.op == opRead:
		return nd.FlagAllowRead
	case s.test.Lat:
		return nd.FlagAllowWrite
	}
	return nd.FlagAllowRead | nd.FlagAllowWrite
}

// limits are a data endpoint's limits.
func (s *rcmSide) limits() nd.EndpointLimits {
	l := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: s.depth + 1, InboundSGE: 1, OutboundSGE: 1}
	reads := s.ai.MaxOutboundReadLimit
	if s.outReads > 0 {
		reads = min(reads, s.outReads)
	}
	if s.test.op == opSend {
		l.InboundEntries = s.rxd
	}
	switch {
	case s.test.op == opRead && !s.server:
		l.OutboundReadLimit = min(max(s.depth, 1), reads)
	case s.test.op == opRead:
		l.InboundReadLimit = s.ai.MaxInboundReadLimit
		if s.outReads > 0 {
			l.InboundReadLimit = min(l.InboundReadLimit, s.outReads)
		}
	case s.credits && s.server:
		l.OutboundEntries = rcmCreditSlots + 1
	}
	return l
}

// newConn creates the buffers of a data connection, not yet connected.
func (s *rcmSide) newConn(ctx context.Context) (_ *rcmConn, err error) {
	c := &rcmConn{lim: s.limits()}
	s.conns = append(s.conns, c)
	if s.needsSrc() {
		if c.src, c.srcMR, err = datapath.Registered(ctx, s.a, s.maxSize); err != nil {
			return nil, err
		}
	}
	if s.needsWin() {
		n := max(s.maxSize, 2*s.cycle)
		if s.test.op == opSend && !s.server && !s.test.Lat {
			n = 4
		}
		c.win = datapath.WordAligned(n)
		if c.winMR, err = s.a.RegisterMemory(ctx, c.win); err != nil {
			return nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(c.win), err)
		}
	}
	if s.credits && s.server {
		if c.credit, c.credMR, err = datapath.Registered(ctx, s.a, 4*rcmCreditSlots); err != nil {
			return nil, err
		}
		c.writes = make([]nd.Result, rcmCreditSlots)
	}
	c.results = make([]nd.Result, max(s.depth, 1))
	if s.test.op == opSend {
		c.recvs = make([]nd.Result, s.rxd)
	}
	if s.iters > 0 && !s.test.Lat {
		c.posted, c.completed = make([]int64, s.iters), make([]int64, s.iters)
	}
	return c, nil
}

// attach makes the connection's session, taking the reaper's batch from
// its limits.
func (s *rcmSide) attach(ctx context.Context, c *rcmConn, ses *session.Session) {
	c.s = ses
	c.reaper = datapath.NewReaper(ctx, ses.CQ, false, c.lim.InboundEntries+c.lim.OutboundEntries)
}

// connect creates the client's q data connections and connects them one
// after the other, so that the server accepts them in this order.
func (s *rcmSide) connect(ctx context.Context, target netip.AddrPort, q int) error {
	for i := range q {
		c, err := s.newConn(ctx)
		if err != nil {
			return err
		}
		ses, err := connectRetrying(ctx, target, func() (*session.Session, error) { return session.New(s.a, nil, c.lim) }, (*session.Session).Close)
		if err != nil {
			return fmt.Errorf("data connection %d: %w", i+1, err)
		}
		s.attach(ctx, c, ses)
		if s.test.op == opRead {
			if _, c.ord, err = session.ReadLimits(ses.Conn, c.lim); err != nil {
				return err
			}
		}
	}
	return nil
}

// accept takes the server's q data connections from l.
func (s *rcmSide) accept(ctx context.Context, l nd.Listener, q int) error {
	for i := range q {
		c, err := s.newConn(ctx)
		if err != nil {
			return err
		}
		req, err := session.NextRequest(ctx, s.a, l)
		if err != nil {
			return fmt.Errorf("waiting for data connection %d: %w", i+1, err)
		}
		ses, err := session.New(s.a, req.Conn, c.lim)
		if err != nil {
			return req.Reject(err)
		}
		s.attach(ctx, c, ses)
		if err := ses.Accept(ctx, req, nil); err != nil {
			return err
		}
		if s.test.op == opRead {
			if c.ird, _, err = session.ReadLimits(ses.Conn, c.lim); err != nil {
				return err
			}
		}
	}
	return nil
}

// describe binds what the peer reaches on each connection and fills in
// the pingpong_dests.
func (s *rcmSide) describe() error {
	for i, c := range s.conns {
		c.mine = rcmDest{qpn: uint32(i + 1), psn: uint32(time.Now().UnixNano()+int64(i)) & 0xffffff, outReads: 1}
		if s.test.op == opRead {
			c.mine.outReads = uint32(max(c.ird, c.ord))
		}
		rights := s.winRights()
		if rights == 0 || c.win == nil {
			continue
		}
		// perftest's client takes the i-th description for its i-th
		// queue pair, but connects its queue pairs in the order their
		// routes resolve, which this side cannot see: with several
		// connections, each description must serve whichever connection
		// uses it, as perftest's own one memory region does. A window
		// serves only its endpoint's peer; a remote access (ND v2's
		// remote token) serves them all.
		if len(s.conns) > 1 {
			ra, err := nd.AllowRemoteAccess(s.a, c.winMR, c.win, rights)
			if err == nil {
				c.opened = ra
				desc := ra.Descriptor()
				c.mine.rkey, c.mine.vaddr = desc.Token, desc.Base
				continue
			}
			if !errors.Is(err, nd.ErrNotSupported) {
				return fmt.Errorf("opening the buffer to the peer: %w", err)
			}
		}
		var res nd.Result
		mw, desc, err := c.s.BindWindow(&res, c.winMR, c.win, rights)
		if err != nil {
			return err
		}
		c.mws = append(c.mws, mw)
		if err := c.reaper.WaitAll(&res); err != nil {
			return fmt.Errorf("binding a window: %w", err)
		}
		c.mine.rkey, c.mine.vaddr = desc.Token, desc.Base
	}
	return nil
}

// exchange does the test's pingpong_dest exchanges between the data
// connections' handshake and the traffic, as perftest's main functions
// do: each connection's description, the REMOTE pass, and the handshakes
// after the QPs are ready, in the test's order.
func (s *rcmSide) exchange(ctx context.Context, ctrl *rcmCtrl) error {
	dests := func(take bool) error {
		for _, c := range s.conns {
			rem, err := ctrl.xchgDest(ctx, c.mine, "the connection data", false)
			if err != nil {
				return err
			}
			if take {
				c.remote = rem
			}
		}
		return nil
	}
	hs := func() error { return ctrl.handshake(ctx, "the handshake after the connection data") }
	// write_lat and read_lat post their requests to what the last
	// handshake brought, as perftest does (its handshakes carry the first
	// connection's description).
	lastHS := func() error {
		rem, err := ctrl.xchgDest(ctx, ctrl.hsDest, "the handshake after the connection data", false)
		s.conns[0].remote = rem
		return err
	}
	var steps []func() error
	switch {
	case s.test.Lat && s.test.op != opSend:
		steps = []func() error{hs, func() error { return dests(true) }, func() error { return dests(false) }, lastHS}
	case s.test.op == opSend:
		steps = []func() error{func() error { return dests(true) }, hs, func() error { return dests(false) }}
	default:
		steps = []func() error{func() error { return dests(true) }, func() error { return dests(false) }, hs}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if s.test.op == opRead && !s.server {
		for _, c := range s.conns {
			if c.remote.outReads > 0 {
				c.ord = min(c.ord, int(c.remote.outReads))
			}
			if c.ord < 1 {
				return fmt.Errorf("the connection allows no RDMA Reads")
			}
		}
	}
	return nil
}

// disconnect ends the data connections.
func (s *rcmSide) disconnect(ctx context.Context) {
	for _, c := range s.conns {
		if c.s != nil {
			c.s.Conn.Disconnect(ctx)
		}
	}
}

// awaitPeerClose waits, at most wait, until the peer has ended every data
// connection (write_lat by time, whose sides part without a handshake).
func (s *rcmSide) awaitPeerClose(ctx context.Context, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, c := range s.conns {
		if c.s != nil && c.s.Conn.NotifyDisconnect(ctx) != nil {
			return
		}
	}
}

// close releases the data connections.
func (s *rcmSide) close(ctx context.Context) {
	for _, c := range s.conns {
		for _, mw := range c.mws {
			mw.Close()
		}
		if c.opened != nil {
			c.opened.Close()
		}
		if c.s != nil {
			c.s.Close()
		}
		datapath.Deregister(ctx, s.a, c.srcMR, c.winMR, c.credMR)
	}
}

// creditCount reads the count the server last wrote into the credit word
// (perftest writes it in its host order, little-endian on the hosts it runs
// on).
func (c *rcmConn) creditCount() int {
	v := datapath.LoadWord((*uint32)(unsafe.Pointer(&c.win[0])))
	return int(leWord(v))
}

// leWord is the little-endian number whose bytes v, a word loaded from
// memory, holds.
func leWord(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.LittleEndian.Uint32(b[:])
}

// resetCredit zeroes the credit word before a size (perftest's client does
// so before each size of -a; the server counts from 0 again).
func (c *rcmConn) resetCredit() { datapath.StoreWord((*uint32)(unsafe.Pointer(&c.win[0])), 0) }

// connectRetrying connects a new session made by mk to target, again after
// rcmConnectPause while the peer refuses, rcmConnectTries times in all (the
// perftest server listens for the data connection only once the control
// connection got that far). drop releases a session that did not connect
// (each refused one, and the last on failure).
func connectRetrying(ctx context.Context, target netip.AddrPort, mk func() (*session.Session, error), drop func(*session.Session)) (*session.Session, error) {
	for try := 1; ; try++ {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		err = s.Dial(ctx, target, nil, nil)
		if err == nil {
			return s, nil
		}
		drop(s)
		if !errors.Is(err, nd.ErrConnectionRefused) || try == rcmConnectTries {
			return nil, err
		}
		t := time.NewTimer(rcmConnectPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-t.C:
		}
	}
}
