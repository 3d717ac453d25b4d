package tcp

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"math/bits"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

const (
	// maxPrivateData is what ND applications may send: the 251 user bytes
	// siw can carry, less godirect's prefix (iwarp.AppendPrefix).
	maxPrivateData = iwarp.SiwMaxUserPrivateData - iwarp.PrefixSize
	// maxReadLimit leaves room for the one Read Request the transport adds
	// to confirm delivery (see confirm.go) within siw's 128.
	maxReadLimit = 127
)

func appendPrefix(dst []byte, protocol int) []byte {
	return iwarp.AppendPrefix(dst, iwarp.PrefixTCP, protocol)
}

// splitPrefix returns the ND protocol (-1 without a prefix), whether the
// peer is godirect, whether it is provider/tcp (whose Read responses are
// exact), and the application's private data.
func splitPrefix(pd []byte) (protocol int, godirect, exact bool, user []byte) {
	protocol, version, user := iwarp.SplitPrefix(pd)
	return protocol, version != 0, version == iwarp.PrefixTCP, user
}

// wireLimit is the IRD or ORD a godirect side puts on the wire for an
// application limit: one more, for the confirmation Read (confirm.go).
func wireLimit(n int) uint16 { return uint16(min(n+1, iwarp.MaxIRDORD)) }

// readRoom is how many of the peer's Read Requests a link queues, for the
// IRD it put on the wire: that many for a godirect peer; for another, the
// power of two at or above it. Linux's siw takes the responder's IRD as
// its ORD and sizes its queue of outbound Reads to the next power of two,
// and keeps that many in flight: with an IRD of 3 on the wire, four Read
// Requests arrive before the first response (perftest's ib_read_bw -o 2).
// Such a peer is served, not terminated; a godirect peer keeps the exact
// limit.
func readRoom(wireIRD int, godirect bool) int {
	if godirect || wireIRD <= 1 {
		return wireIRD
	}
	return 1 << bits.Len(uint(wireIRD-1))
}

// appLimit undoes wireLimit for a godirect peer.
func appLimit(n uint16, godirect bool) int {
	if godirect && n > 0 {
		return int(n) - 1
	}
	return int(n)
}

// readMPA reads one MPA request or reply frame.
func readMPA(br io.Reader) (iwarp.MPAFrame, error) {
	var buf [iwarp.MPAHeaderSize + iwarp.MPAMaxPrivateData]byte
	if _, err := io.ReadFull(br, buf[:iwarp.MPAHeaderSize]); err != nil {
		return iwarp.MPAFrame{}, err
	}
	f, n, err := iwarp.ParseMPAFrame(buf[:iwarp.MPAHeaderSize])
	if errors.Is(err, iwarp.ErrShortBuffer) && n <= len(buf) {
		if _, err := io.ReadFull(br, buf[iwarp.MPAHeaderSize:n]); err != nil {
			return iwarp.MPAFrame{}, err
		}
		f, _, err = iwarp.ParseMPAFrame(buf[:n])
	}
	if err != nil {
		return f, err
	}
	f.PrivateData = append([]byte(nil), f.PrivateData...)
	return f, nil
}

// active runs the active side: the MPA request goes out now, and a goroutine
// waits for the reply, reports it, and then reads the connection.
func (t *transport) active(ctx context.Context, c *net.TCPConn, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	l := newLink(t, c, true)
	l.events = events
	req := iwarp.MPAFrame{
		Kind: iwarp.MPARequest, Revision: iwarp.MPARevision2, Enhanced: true,
		CRC: t.p.cfg.CRC, IRD: wireLimit(d.IRD), ORD: wireLimit(d.ORD),
		PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRRead,
		PrivateData: append(appendPrefix(nil, d.Protocol), d.PrivateData...),
	}
	frame, err := iwarp.AppendMPAFrame(nil, &req)
	if err != nil {
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInvalidBufferSize, Err: err}
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	_, err = c.Write(frame)
	if !stop() {
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrCanceled, Err: ctx.Err()}
	}
	if err != nil {
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	l.req = req
	l.wg.Add(1)
	go l.activeReply()
	return l, nil
}

// activeReply waits for the MPA reply and then serves the connection.
func (l *link) activeReply() {
	defer l.wg.Done()
	l.conn.SetReadDeadline(time.Now().Add(l.t.p.cfg.ReplyTimeout))
	rep, err := readMPA(l.br)
	l.conn.SetReadDeadline(time.Time{})
	if err != nil || rep.Kind != iwarp.MPAReply || rep.Markers {
		l.logf("MPA reply", err)
		st := nd.ErrConnectionAborted
		if isTimeout(err) {
			st = nd.ErrIOTimeout
		}
		l.shutdown(st, nil, true)
		return
	}
	_, godirect, exact, user := splitPrefix(rep.PrivateData)
	if rep.Reject {
		l.events.Rejected(user)
		l.shutdown(nd.ErrConnectionRefused, nil, false)
		return
	}
	l.crc = l.req.CRC || rep.CRC
	l.godirect, l.peerExact = godirect, exact
	l.peerIRD = int(rep.IRD)
	if rep.PeerToPeer {
		l.rtr = rep.RTR
	}
	if !rep.Enhanced {
		l.peerIRD = 0
	}
	l.ourIRD = readRoom(int(l.req.IRD), godirect)
	l.events.Accepted(appLimit(rep.IRD, godirect), appLimit(rep.ORD, godirect), user)
	l.startReading()
}

// passive runs the passive side of an accepted TCP connection: read the
// request, hand it to the ND listener, then serve the connection (the
// engine answers through Accept or Reject).
//
// prev is closed once the connection accepted before this one handed its
// request to the ND listener or gave up; passive closes handed the same way
// (serve).
func (t *transport) passive(pl *portListener, c *net.TCPConn, prev <-chan struct{}, handed chan struct{}) {
	handOver := sync.OnceFunc(func() { close(handed) })
	defer handOver()
	t.applyCongestion(c, addrOf(c.RemoteAddr()))
	setConnUserTimeout(c, t.p.cfg.UserTimeout)
	l := newLink(t, c, false)
	c.SetReadDeadline(time.Now().Add(t.p.cfg.HandshakeTimeout))
	req, err := readMPA(l.br)
	switch {
	case errors.Is(err, iwarp.ErrMPAMarkers):
		l.writeReject(req, nil)
		c.Close()
		return
	case err != nil || req.Kind != iwarp.MPARequest:
		l.logf("MPA request", err)
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	protocol, godirect, exact, user := splitPrefix(req.PrivateData)
	l.req, l.godirect, l.peerExact = req, godirect, exact
	if req.Enhanced {
		l.peerIRD = int(req.IRD)
	}
	nl := pl.match(protocol)
	if nl == nil {
		l.writeReject(req, nil)
		c.Close()
		return
	}
	if protocol < 0 {
		protocol = nl.Protocol()
	}
	awaitTurn(prev)
	var ird, ord int
	if req.Enhanced {
		ird, ord = appLimit(req.IRD, godirect), appLimit(req.ORD, godirect)
	}
	// The handshake counts from before the application can end the link
	// (shutdown waits for it).
	l.wg.Add(1)
	defer l.wg.Done()
	// l.mu is held until l.events is set: the application may Accept
	// (which reads l.events) as soon as Deliver handed the request over.
	l.mu.Lock()
	events, err := nl.Deliver(engine.ConnRequest{
		Local: l.local, Remote: l.remote, Protocol: protocol,
		IRD: ird, ORD: ord, PrivateData: user,
	}, l)
	l.events = events
	l.mu.Unlock()
	handOver()
	if err != nil {
		l.writeReject(req, nil)
		c.Close()
		return
	}
	l.startReading()
}

// awaitTurn waits until prev is closed, at most requestOrderGrace.
func awaitTurn(prev <-chan struct{}) {
	select {
	case <-prev:
		return
	default:
	}
	grace := time.NewTimer(requestOrderGrace)
	defer grace.Stop()
	select {
	case <-prev:
	case <-grace.C:
	}
}

// startReading hands the link, its handshake over, to its readers: the
// provider's readiness set, or its own reader goroutine (perLink).
func (l *link) startReading() {
	if err := l.t.progress.add(l); err != nil {
		l.logf("readiness set", err)
		l.shutdown(nd.ErrInsufficientResources, nil, true)
	}
}

// writeReject answers a request with an MPA reply carrying R.
func (l *link) writeReject(req iwarp.MPAFrame, user []byte) error {
	rep := iwarp.MPAFrame{
		Kind: iwarp.MPAReply, Revision: req.Revision, Reject: true,
		Enhanced: req.Enhanced && req.Revision == iwarp.MPARevision2,
		IRD:      0, ORD: 0,
		PrivateData: append(appendPrefix(nil, 0), user...),
	}
	if rep.Revision != iwarp.MPARevision1 && rep.Revision != iwarp.MPARevision2 {
		rep.Revision = iwarp.MPARevision2
	}
	frame, err := iwarp.AppendMPAFrame(nil, &rep)
	if err != nil {
		return err
	}
	l.conn.SetWriteDeadline(time.Now().Add(l.t.p.cfg.HandshakeTimeout))
	_, err = l.conn.Write(frame)
	return err
}

// Accept implements engine.Link (passive side).
func (l *link) Accept(ird, ord int, privateData []byte) error {
	req := l.req
	rep := iwarp.MPAFrame{
		Kind: iwarp.MPAReply, Revision: req.Revision, CRC: req.CRC || l.t.p.cfg.CRC,
		PrivateData: append(appendPrefix(nil, 0), privateData...),
	}
	if req.Revision == iwarp.MPARevision2 && req.Enhanced {
		rep.Enhanced = true
		rep.IRD, rep.ORD = wireLimit(ird), wireLimit(ord)
		if req.PeerToPeer {
			rep.PeerToPeer = true
			rep.RTR = iwarp.ChooseRTR(req.RTR)
		}
	}
	frame, err := iwarp.AppendMPAFrame(nil, &rep)
	if err != nil {
		return nd.ErrInvalidBufferSize
	}
	next := phaseAwaitFirst
	if rep.PeerToPeer {
		next = phaseAwaitRTR
	}
	l.mu.Lock()
	if !l.phase.to(next) { // nothing leaves before the first inbound FPDU
		l.mu.Unlock()
		return nd.ErrConnectionAborted
	}
	l.crc = rep.CRC
	l.ourIRD = readRoom(int(rep.IRD), l.godirect)
	if rep.PeerToPeer {
		l.rtrTimer = time.AfterFunc(l.t.p.cfg.HandshakeTimeout, l.rtrExpired)
	}
	events := l.events
	l.mu.Unlock()
	l.conn.SetWriteDeadline(time.Now().Add(l.t.p.cfg.HandshakeTimeout))
	_, err = l.conn.Write(frame)
	l.conn.SetWriteDeadline(time.Time{})
	if err != nil {
		l.shutdown(nd.ErrConnectionAborted, nil, false)
		return nd.ErrConnectionAborted
	}
	l.startWriter()
	if !rep.PeerToPeer {
		// A peer that does not send a ready-to-receive frame (siw) is
		// connected once the reply is out; our first frames wait for its
		// first one or for the reply's delivery (reply_delivery.go).
		l.mu.Lock()
		if l.phase == phaseAwaitFirst {
			l.armReplyDeliveryLocked()
		}
		l.mu.Unlock()
		events.Ready()
	}
	return nil
}

// rtrExpired ends a passive connection whose ready-to-receive frame did
// not come within HandshakeTimeout of the reply.
func (l *link) rtrExpired() {
	l.mu.Lock()
	waiting := l.phase == phaseAwaitRTR
	l.mu.Unlock()
	if waiting {
		l.shutdown(nd.ErrIOTimeout, nil, true)
	}
}

// Reject implements engine.Link: an MPA reject on the passive side; on
// the active side, after the reply, a Terminate (RFC 6581 has no other
// way).
func (l *link) Reject(privateData []byte) error {
	if !l.active {
		err := l.writeReject(l.req, privateData)
		l.shutdown(nd.ErrConnectionRefused, nil, false)
		if err != nil {
			return nd.ErrConnectionAborted
		}
		return nil
	}
	term := &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeLocalCatastrophic}
	l.writeTerminateNow(term)
	l.shutdown(nd.ErrConnectionRefused, nil, false)
	return nil
}

// Ready implements engine.Link (active side): the writer starts and sends
// the chosen ready-to-receive frame first.
func (l *link) Ready() error {
	l.mu.Lock()
	if !l.phase.to(phaseRunning) {
		l.mu.Unlock()
		return nd.ErrConnectionAborted
	}
	if l.rtr != 0 {
		l.addJobLocked(jobRTR)
	}
	l.mu.Unlock()
	l.startWriter()
	return nil
}

func (l *link) LocalAddr() netip.AddrPort  { return l.local }
func (l *link) RemoteAddr() netip.AddrPort { return l.remote }

func (l *link) logf(what string, err error) {
	if lg := l.t.p.cfg.Logger; lg != nil && err != nil {
		lg.Info("tcp: "+what, "local", l.local, "remote", l.remote, "err", err)
	}
}

// logTerminate logs a Terminate sent or received (what says which).
func (l *link) logTerminate(what string, t *iwarp.Terminate, status nd.Status) {
	if lg := l.t.p.cfg.Logger; lg != nil && t != nil {
		lg.Info("tcp: "+what, "local", l.local, "remote", l.remote,
			"layer", int(t.Layer), "etype", int(t.EType), "code", int(t.Code), "status", status.Name(),
			"ddp_header", hex.EncodeToString(t.DDPHeader))
	}
}
