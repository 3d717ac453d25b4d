package tcp_test

// TestHostilePeer: a godirect server faces a raw iWARP client written with
// net and internal/iwarp that completes the MPA handshake correctly and
// then misbehaves, one connection per case. For every case the server must
// not panic, must not touch memory outside the windows it bound (guard
// bytes around them, a read-only window, and bytes inside the writable
// window except for valid Writes), must answer with the Terminate the RFCs
// imply (when one is expected) and close the connection, must report the
// end (NotifyDisconnect returns, posted Receives complete ErrCanceled), and
// must keep serving well-behaved godirect clients, during and after the
// hostile cases.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

const (
	hpProtocol = 77

	// The server's registered region: guard | W (read+write) | guard |
	// R (read only) | guard | WO (write only) | guard.
	hpGuard     = 4096
	hpWLen      = 1 << 20
	hpRLen      = 4096
	hpWOLen     = 4096
	hpWOff      = hpGuard
	hpROff      = hpWOff + hpWLen + hpGuard
	hpWOOff     = hpROff + hpRLen + hpGuard
	hpRegionLen = hpWOOff + hpWOLen + hpGuard

	// The server's Receives, each between guards in a second region.
	hpRecvs         = 4
	hpRecvLen       = 64
	hpRecvGuard     = 64
	hpRecvRegionLen = hpRecvGuard + hpRecvs*(hpRecvLen+hpRecvGuard)

	hpServerIRD = 4 // the server endpoint's inbound read limit

	// The raw client's MPA IRD/ORD (wire values, godirect prefix: one
	// more than the application limit).
	hpRawIRD = 1
	hpRawORD = 3

	hpMaxConns     = 400 // connections the server accepts in all
	hpRandomCases  = 30  // randomized connections
	hpMaxGoodRound = 200 // well-behaved rounds run concurrently at most

	hpHandshakeTimeout = time.Second
	hpEOFWait          = 8 * time.Second  // the server must close within this
	hpServerWait       = 15 * time.Second // the server handler must finish within this
)

func hpRecvOff(i int) int { return hpRecvGuard + i*(hpRecvLen+hpRecvGuard) }

// hpPattern is the initial content of the server's memory.
func hpPattern(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131+7) ^ salt
	}
	return b
}

// hpOrig is the initial content of the server's region; never written.
var hpOrig = hpPattern(hpRegionLen, 0)

func hpConfig() tcp.Config {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cfg.HandshakeTimeout = hpHandshakeTimeout
	cfg.KeepAlive = time.Second
	cfg.KeepAliveInterval = time.Second
	cfg.KeepAliveCount = 2
	cfg.ResponseTimeout = 2 * time.Second
	return cfg
}

// ---------------------------------------------------------------------
// The server.

type hpServer struct {
	ad     nd.Adapter
	ln     nd.Listener
	addr   netip.AddrPort
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{}
	conns   map[netip.AddrPort]*hpConn
	errs    []string
}

// hpConn is one accepted connection as the test sees it.
type hpConn struct {
	peer         netip.AddrPort
	ready        chan struct{} // Accept returned; on success the windows are bound
	acceptErr    error
	W, R, WO     nd.MWDescriptor
	disconnected chan struct{} // NotifyDisconnect returned (or Accept failed)
	done         chan struct{} // res is final
	res          hpResult
}

type hpRecv struct {
	status nd.Status // nd.Pending: never completed
	n      int
	data   []byte
}

type hpResult struct {
	acceptErr    error
	notifyErr    error
	recvs        []hpRecv // in post order
	guardErr     string
	recvGuardErr string
	w, r, wo     []byte // the windows' final content
}

func newHPServer(t *testing.T) *hpServer {
	t.Helper()
	p := tcp.New(hpConfig())
	ad, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatalf("OpenAdapter: %v", err)
	}
	ln, err := ad.Listen(0, hpProtocol, 0)
	if err != nil {
		ad.Close()
		t.Fatalf("Listen: %v", err)
	}
	s := &hpServer{
		ad: ad, ln: ln, addr: netip.AddrPortFrom(ad.Address(), ln.Port()),
		changed: make(chan struct{}), conns: make(map[netip.AddrPort]*hpConn),
	}
	s.ctx, s.cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	s.wg.Add(1)
	go s.serve(hpMaxConns)
	return s
}

// stop ends the accept loop, waits for the handlers and closes the
// adapter.
func (s *hpServer) stop(t *testing.T) {
	s.cancel()
	s.ln.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hpServerWait):
		t.Errorf("server handlers did not finish within %v", hpServerWait)
	}
	s.ad.Close()
	s.mu.Lock()
	for _, e := range s.errs {
		t.Errorf("server: %s", e)
	}
	s.mu.Unlock()
}

func (s *hpServer) errorf(format string, args ...any) {
	s.mu.Lock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *hpServer) serve(max int) {
	defer s.wg.Done()
	for i := 0; i < max; i++ {
		c, err := s.ad.CreateConnector()
		if err != nil {
			return
		}
		if err := s.ln.GetConnectionRequest(s.ctx, c); err != nil {
			c.Close()
			return
		}
		s.wg.Add(1)
		go s.handle(c)
	}
}

func (s *hpServer) publish(hc *hpConn) {
	s.mu.Lock()
	s.conns[hc.peer] = hc
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// await returns the connection whose peer is the client address peer,
// once its Accept returned.
func (s *hpServer) await(peer netip.AddrPort, d time.Duration) (*hpConn, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		hc, ch := s.conns[peer], s.changed
		if hc != nil {
			delete(s.conns, peer)
		}
		s.mu.Unlock()
		if hc != nil {
			select {
			case <-hc.ready:
				return hc, nil
			case <-timer.C:
				return nil, fmt.Errorf("the server's Accept for %v did not return within %v", peer, d)
			}
		}
		select {
		case <-ch:
		case <-timer.C:
			return nil, fmt.Errorf("no connection request from %v reached the server within %v", peer, d)
		}
	}
}

// handle serves one connection: Receives posted, Accept, three windows
// bound, then wait for the end and record what happened.
func (s *hpServer) handle(c nd.Connector) {
	defer s.wg.Done()
	defer c.Close()
	peer, _ := c.GetPeerAddress()
	hc := &hpConn{peer: peer, ready: make(chan struct{}), disconnected: make(chan struct{}), done: make(chan struct{})}
	defer close(hc.done)
	res := &hc.res
	fail := func(err error) {
		hc.acceptErr, res.acceptErr = err, err
		close(hc.ready)
		close(hc.disconnected)
	}
	s.publish(hc)

	inCQ, err := s.ad.CreateCompletionQueue(16)
	if err != nil {
		fail(err)
		return
	}
	defer inCQ.Close()
	outCQ, err := s.ad.CreateCompletionQueue(16)
	if err != nil {
		fail(err)
		return
	}
	defer outCQ.Close()
	ep, err := c.CreateEndpoint(inCQ, outCQ, nd.EndpointLimits{
		InboundEntries: hpRecvs, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: hpServerIRD, OutboundReadLimit: 0,
	})
	if err != nil {
		fail(err)
		return
	}
	defer ep.Close()
	region := slices.Clone(hpOrig)
	mr, err := s.ad.RegisterMemory(s.ctx, region)
	if err != nil {
		fail(err)
		return
	}
	recvBuf := hpPattern(hpRecvRegionLen, 0x33)
	recvOrig := slices.Clone(recvBuf)
	rmr, err := s.ad.RegisterMemory(s.ctx, recvBuf)
	if err != nil {
		fail(err)
		return
	}
	var recvs [hpRecvs]nd.Result
	for i := range recvs {
		o := hpRecvOff(i)
		if err := ep.Receive(&recvs[i], []nd.SGE{{Buffer: recvBuf[o : o+hpRecvLen], Region: rmr}}); err != nil {
			fail(err)
			return
		}
	}
	actx, cancel := context.WithTimeout(s.ctx, hpServerWait)
	err = c.Accept(actx, ep, nil)
	cancel()
	var windows []nd.MemoryWindow
	if err == nil {
		var binds [3]nd.Result
		for i, w := range []struct {
			off, n int
			flags  nd.Flags
			desc   *nd.MWDescriptor
		}{
			{hpWOff, hpWLen, nd.FlagAllowRead | nd.FlagAllowWrite, &hc.W},
			{hpROff, hpRLen, nd.FlagAllowRead, &hc.R},
			{hpWOOff, hpWOLen, nd.FlagAllowWrite, &hc.WO},
		} {
			mw, werr := s.ad.CreateMemoryWindow(nil)
			if werr != nil {
				s.errorf("CreateMemoryWindow: %v", werr)
				break
			}
			windows = append(windows, mw)
			*w.desc, werr = ep.Bind(&binds[i], mr, mw, region[w.off:w.off+w.n], w.flags|nd.FlagSilentSuccess)
			if werr != nil {
				s.errorf("Bind: %v", werr)
			}
		}
	}
	hc.acceptErr, res.acceptErr = err, err
	close(hc.ready)
	if err == nil {
		nctx, cancel := context.WithTimeout(s.ctx, hpServerWait)
		res.notifyErr = c.NotifyDisconnect(nctx)
		cancel()
	} else {
		// Never connected: the Receives end with the endpoint.
		ep.Close()
	}
	close(hc.disconnected)

	// Every Receive must complete.
	got := make(map[*nd.Result]bool)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < hpRecvs {
		r := waitResult(inCQ, deadline)
		if r == nil {
			break
		}
		got[r] = true
	}
	for i := range recvs {
		r := &recvs[i]
		rec := hpRecv{status: nd.Pending}
		if got[r] {
			rec.status, rec.n = r.Status, r.BytesTransferred
			if rec.status == nd.Success && rec.n <= hpRecvLen {
				o := hpRecvOff(i)
				rec.data = slices.Clone(recvBuf[o : o+rec.n])
			}
		}
		res.recvs = append(res.recvs, rec)
	}
	res.guardErr = hpCheckGuards(region, hpOrig, [][2]int{{hpWOff, hpWLen}, {hpROff, hpRLen}, {hpWOOff, hpWOLen}})
	var slots [][2]int
	for i := 0; i < hpRecvs; i++ {
		slots = append(slots, [2]int{hpRecvOff(i), hpRecvLen})
	}
	res.recvGuardErr = hpCheckGuards(recvBuf, recvOrig, slots)
	res.w = slices.Clone(region[hpWOff : hpWOff+hpWLen])
	res.r = slices.Clone(region[hpROff : hpROff+hpRLen])
	res.wo = slices.Clone(region[hpWOOff : hpWOOff+hpWOLen])
	ep.Close()
	for _, mw := range windows {
		mw.Close()
	}
	s.ad.DeregisterMemory(context.Background(), mr)
	s.ad.DeregisterMemory(context.Background(), rmr)
}

// hpCheckGuards compares every byte of buf outside the given [off, len)
// ranges with orig.
func hpCheckGuards(buf, orig []byte, holes [][2]int) string {
	pos := 0
	check := func(end int) string {
		if bytes.Equal(buf[pos:end], orig[pos:end]) {
			return ""
		}
		for i := pos; i < end; i++ {
			if buf[i] != orig[i] {
				return fmt.Sprintf("guard byte at %d changed from %#02x to %#02x", i, orig[i], buf[i])
			}
		}
		return ""
	}
	for _, h := range holes {
		if e := check(h[0]); e != "" {
			return e
		}
		pos = h[0] + h[1]
	}
	return check(len(buf))
}

// wait returns the connection's final result.
func (hc *hpConn) wait(t *testing.T) *hpResult {
	t.Helper()
	select {
	case <-hc.done:
		return &hc.res
	case <-time.After(hpServerWait):
		t.Fatalf("the server's handler for %v did not finish within %v (NotifyDisconnect or Receives hang)", hc.peer, hpServerWait)
		return nil
	}
}

// ---------------------------------------------------------------------
// The raw client.

type hpRaw struct {
	t     testing.TB
	c     *net.TCPConn
	br    *bufio.Reader
	crc   bool
	local netip.AddrPort

	sendMSN, readMSN uint32
}

type hpMPAOpts struct {
	crc      bool
	markers  bool
	ird, ord uint16
	rtr      iwarp.RTRFlags
	noPrefix bool
}

func hpDefaultOpts(crc bool) hpMPAOpts {
	return hpMPAOpts{crc: crc, ird: hpRawIRD, ord: hpRawORD, rtr: iwarp.RTRWrite}
}

func hpDial(t testing.TB, addr netip.AddrPort) *hpRaw {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatalf("dial %v: %v", addr, err)
	}
	tc := c.(*net.TCPConn)
	r := &hpRaw{t: t, c: tc, br: bufio.NewReaderSize(tc, 64<<10)}
	r.local = tc.LocalAddr().(*net.TCPAddr).AddrPort()
	t.Cleanup(func() { tc.Close() })
	return r
}

func (r *hpRaw) mpaRequest(o hpMPAOpts) []byte {
	req := iwarp.MPAFrame{
		Kind: iwarp.MPARequest, Revision: iwarp.MPARevision2, Enhanced: true,
		CRC: o.crc, Markers: o.markers, IRD: o.ird, ORD: o.ord,
		PeerToPeer: true, RTR: o.rtr,
	}
	if !o.noPrefix {
		req.PrivateData = []byte{'g', 'd', 1, hpProtocol}
	}
	b, err := iwarp.AppendMPAFrame(nil, &req)
	if err != nil {
		r.t.Fatalf("AppendMPAFrame: %v", err)
	}
	return b
}

// readMPA reads the server's MPA reply.
func (r *hpRaw) readMPA(d time.Duration) (iwarp.MPAFrame, error) {
	r.c.SetReadDeadline(time.Now().Add(d))
	defer r.c.SetReadDeadline(time.Time{})
	buf := make([]byte, iwarp.MPAHeaderSize, iwarp.MPAHeaderSize+iwarp.MPAMaxPrivateData)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return iwarp.MPAFrame{}, err
	}
	f, n, err := iwarp.ParseMPAFrame(buf)
	if errors.Is(err, iwarp.ErrShortBuffer) && n <= cap(buf) {
		buf = buf[:n]
		if _, err := io.ReadFull(r.br, buf[iwarp.MPAHeaderSize:]); err != nil {
			return iwarp.MPAFrame{}, err
		}
		f, _, err = iwarp.ParseMPAFrame(buf)
	}
	return f, err
}

// handshake sends the MPA request and checks the reply: accepted, with the
// options godirect must choose.
func (r *hpRaw) handshake(o hpMPAOpts) iwarp.MPAFrame {
	r.t.Helper()
	if err := r.put(r.mpaRequest(o)); err != nil {
		r.t.Fatalf("writing the MPA request: %v", err)
	}
	rep, err := r.readMPA(5 * time.Second)
	if err != nil {
		r.t.Fatalf("reading the MPA reply: %v", err)
	}
	if rep.Kind != iwarp.MPAReply || rep.Reject || rep.Revision != iwarp.MPARevision2 || !rep.Enhanced ||
		!rep.PeerToPeer || rep.RTR != iwarp.RTRWrite || rep.CRC != o.crc || rep.Markers {
		r.t.Fatalf("unexpected MPA reply %+v", rep)
	}
	ord := hpRawORD - 1 // the application's limit behind the wire value
	if o.noPrefix {
		ord = hpRawORD
	}
	if want := uint16(min(ord, hpServerIRD) + 1); rep.IRD != want {
		r.t.Fatalf("reply IRD = %d, want %d", rep.IRD, want)
	}
	r.crc = rep.CRC || o.crc
	return rep
}

func (r *hpRaw) put(frames ...[]byte) error {
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	defer r.c.SetWriteDeadline(time.Time{})
	bufs := net.Buffers(slices.Clone(frames))
	_, err := bufs.WriteTo(r.c)
	return err
}

func (r *hpRaw) closeWrite() { r.c.CloseWrite() }

// readSegment reads one FPDU from the server.
func (r *hpRaw) readSegment(d time.Duration) (iwarp.Segment, error) {
	r.c.SetReadDeadline(time.Now().Add(d))
	defer r.c.SetReadDeadline(time.Time{})
	var l [2]byte
	if _, err := io.ReadFull(r.br, l[:]); err != nil {
		return iwarp.Segment{}, err
	}
	b := make([]byte, iwarp.FPDUSize(int(binary.BigEndian.Uint16(l[:]))))
	copy(b, l[:])
	if _, err := io.ReadFull(r.br, b[2:]); err != nil {
		return iwarp.Segment{}, err
	}
	ulpdu, _, err := iwarp.ParseFPDU(b, r.crc)
	if err != nil {
		return iwarp.Segment{}, err
	}
	return iwarp.ParseSegment(ulpdu)
}

// readToEOF reads everything the server sends until it closes the
// connection. closed is false if the deadline passed first.
func (r *hpRaw) readToEOF(d time.Duration) (data []byte, closed bool, err error) {
	r.c.SetReadDeadline(time.Now().Add(d))
	defer r.c.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	_, err = io.Copy(&buf, r.br)
	if err == nil {
		return buf.Bytes(), true, nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return buf.Bytes(), false, err
	}
	return buf.Bytes(), true, err // reset by the peer: closed too
}

// Frame builders.

func (r *hpRaw) seg(h iwarp.SegmentHeader, payload []byte) []byte {
	b, err := iwarp.AppendFPDUSegment(nil, &h, payload, r.crc)
	if err != nil {
		r.t.Fatalf("AppendFPDUSegment(%+v): %v", h, err)
	}
	return b
}

func (r *hpRaw) rtr() []byte {
	b, err := iwarp.AppendRTR(nil, iwarp.RTRWrite, r.crc)
	if err != nil {
		r.t.Fatalf("AppendRTR: %v", err)
	}
	return b
}

func (r *hpRaw) writeSeg(stag uint32, to uint64, data []byte, last bool) []byte {
	return r.seg(iwarp.SegmentHeader{Opcode: iwarp.OpWrite, Last: last, STag: stag, TO: to}, data)
}

func (r *hpRaw) write(d nd.MWDescriptor, off uint64, data []byte) []byte {
	return r.writeSeg(d.Token, d.Base+off, data, true)
}

func (r *hpRaw) sendSeg(op iwarp.Opcode, msn, mo uint32, data []byte, last bool) []byte {
	return r.seg(iwarp.SegmentHeader{Opcode: op, Last: last, QN: iwarp.QNSend, MSN: msn, MO: mo}, data)
}

func (r *hpRaw) send(data []byte) []byte {
	r.sendMSN++
	return r.sendSeg(iwarp.OpSend, r.sendMSN, 0, data, true)
}

// readReq builds a Read Request whose response the client recognizes by
// its sink STag.
func (r *hpRaw) readReq(srcSTag uint32, srcTO uint64, size uint32) []byte {
	r.readMSN++
	body := iwarp.AppendReadRequest(nil, &iwarp.ReadRequest{
		SinkSTag: hpSinkSTag(r.readMSN), SinkTO: 0x1000, Size: size, SourceSTag: srcSTag, SourceTO: srcTO,
	})
	return r.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: r.readMSN}, body)
}

func hpSinkSTag(msn uint32) uint32 { return 0x5100_0000 | msn }

func (r *hpRaw) terminate(msn uint32) []byte {
	b, err := iwarp.AppendTerminateFPDU(nil, msn, &iwarp.Terminate{
		Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeUnspecified,
	}, r.crc)
	if err != nil {
		r.t.Fatalf("AppendTerminateFPDU: %v", err)
	}
	return b
}

// hpRecrc recomputes the CRC of the single FPDU b after a patch.
func hpRecrc(b []byte, crc bool) []byte {
	if crc {
		binary.LittleEndian.PutUint32(b[len(b)-4:], iwarp.ChecksumCRC(b[:len(b)-4]))
	}
	return b
}

// ---------------------------------------------------------------------
// What the server sent.

type hpInbound struct {
	terms     []iwarp.Terminate
	responses map[uint32][]byte // Read Response payload by sink STag
	order     []uint32          // sink STags in the order their first segment came
	err       error             // malformed server output
}

func hpParse(b []byte, crc bool) hpInbound {
	in := hpInbound{responses: make(map[uint32][]byte)}
	for len(b) > 0 {
		ulpdu, n, err := iwarp.ParseFPDU(b, crc)
		if err != nil {
			in.err = fmt.Errorf("server output at %d of %d trailing bytes: %w", n, len(b), err)
			return in
		}
		b = b[n:]
		seg, err := iwarp.ParseSegment(ulpdu)
		if err != nil {
			in.err = fmt.Errorf("server segment: %w", err)
			return in
		}
		switch seg.Opcode {
		case iwarp.OpTerminate:
			t, err := iwarp.ParseTerminate(seg.Payload)
			if err != nil {
				in.err = fmt.Errorf("server Terminate %x: %w", seg.Payload, err)
				return in
			}
			in.terms = append(in.terms, t)
		case iwarp.OpReadResponse:
			if _, ok := in.responses[seg.STag]; !ok {
				in.order = append(in.order, seg.STag)
			}
			in.responses[seg.STag] = append(in.responses[seg.STag], seg.Payload...)
		default:
			in.err = fmt.Errorf("unexpected %v from the server", seg.Opcode)
			return in
		}
	}
	return in
}

// ---------------------------------------------------------------------
// Expectations.

type hpTermWant struct {
	layer     iwarp.TermLayer
	etype     iwarp.TermEType
	code      iwarp.TermCode
	someEType bool // any EType of the layer
	someCode  bool // any code of the layer and EType
	anything  bool // any Terminate
}

func termIs(l iwarp.TermLayer, e iwarp.TermEType, c iwarp.TermCode) *hpTermWant {
	return &hpTermWant{layer: l, etype: e, code: c}
}
func termOf(l iwarp.TermLayer, e iwarp.TermEType) *hpTermWant {
	return &hpTermWant{layer: l, etype: e, someCode: true}
}
func termLayer(l iwarp.TermLayer) *hpTermWant {
	return &hpTermWant{layer: l, someEType: true, someCode: true}
}

var termAny = &hpTermWant{anything: true}

func (w *hpTermWant) match(t iwarp.Terminate) bool {
	return w.anything || (t.Layer == w.layer && (w.someEType || t.EType == w.etype) &&
		(w.someCode || w.someEType || t.Code == w.code))
}

func (w *hpTermWant) String() string {
	switch {
	case w.anything:
		return "any Terminate"
	case w.someEType:
		return fmt.Sprintf("layer %d", w.layer)
	case w.someCode:
		return fmt.Sprintf("layer %d etype %d", w.layer, w.etype)
	}
	return fmt.Sprintf("layer %d etype %d code %#02x", w.layer, w.etype, w.code)
}

type hpWrite struct {
	off  int // in the window
	data []byte
}

type hpReadWant struct {
	msn  uint32
	data []byte
}

type hpExpect struct {
	term      *hpTermWant  // a Terminate is required and must match
	noTerm    bool         // no Terminate may arrive
	acceptErr nd.Status    // not Success: the server's Accept fails with it
	recvs     []nd.Status  // the Receives' statuses, in post order; missing: ErrCanceled
	recvData  [][]byte     // data of the Success ones
	must      []hpWrite    // Writes to W that were placed
	may       []hpWrite    // Writes to W that may have been placed, in part or whole
	woMust    []hpWrite    // Writes to WO that were placed
	reads     []hpReadWant // Read Responses that must match if they arrive
	noReads   bool         // no Read Response may arrive
	random    bool         // randomized: W and WO may change anywhere, statuses from a set
}

// ---------------------------------------------------------------------
// Checks.

func hpCheckWindow(name string, got, orig []byte, must, may []hpWrite) string {
	exp := slices.Clone(orig)
	for _, w := range must {
		copy(exp[w.off:], w.data)
	}
	alt := make(map[int][]byte)
	for _, w := range may {
		for i, b := range w.data {
			alt[w.off+i] = append(alt[w.off+i], b)
		}
	}
	const chunk = 4096
	for c := 0; c < len(got); c += chunk {
		e := min(c+chunk, len(got))
		if bytes.Equal(got[c:e], exp[c:e]) {
			continue
		}
		for i := c; i < e; i++ {
			if got[i] != exp[i] && !slices.Contains(alt[i], got[i]) {
				return fmt.Sprintf("%s byte %d = %#02x, want %#02x (a byte changed that no valid Write covers)", name, i, got[i], exp[i])
			}
		}
	}
	return ""
}

// finish reads until the server closes the connection and checks the
// Terminate, the Read Responses and the server's side.
func (s *hpServer) finish(t *testing.T, rc *hpRaw, hc *hpConn, exp hpExpect) {
	t.Helper()
	data, closed, rerr := rc.readToEOF(hpEOFWait)
	if !closed {
		t.Errorf("the server did not close the connection within %v (%v)", hpEOFWait, rerr)
	}
	in := hpParse(data, rc.crc)
	if in.err != nil {
		t.Errorf("%v (read error %v)", in.err, rerr)
	}
	switch {
	case exp.term != nil && len(in.terms) == 0:
		t.Errorf("no Terminate from the server (want %v); read error %v", exp.term, rerr)
	case exp.term != nil && !exp.term.match(in.terms[0]):
		t.Errorf("Terminate layer %d etype %d code %#02x, want %v", in.terms[0].Layer, in.terms[0].EType, in.terms[0].Code, exp.term)
	case exp.noTerm && len(in.terms) > 0:
		t.Errorf("unexpected Terminate layer %d etype %d code %#02x", in.terms[0].Layer, in.terms[0].EType, in.terms[0].Code)
	}
	if len(in.terms) > 1 {
		t.Errorf("%d Terminates from the server", len(in.terms))
	}
	for _, rd := range exp.reads {
		// The responses to valid Read Requests before the culprit may
		// be dropped: the Terminate ends the stream.
		got, ok := in.responses[hpSinkSTag(rd.msn)]
		if ok && !bytes.Equal(got, rd.data) {
			t.Errorf("Read Response %d: %d bytes differ from the window's %d", rd.msn, len(got), len(rd.data))
		}
	}
	if exp.noReads && len(in.responses) > 0 {
		t.Errorf("unexpected Read Responses for %x", in.order)
	}
	if hc == nil {
		return
	}
	res := hc.wait(t)
	if exp.acceptErr != nd.Success {
		if st := nd.StatusOf(res.acceptErr); st != exp.acceptErr {
			t.Errorf("server Accept: %v, want %v", res.acceptErr, exp.acceptErr)
		}
	} else {
		if res.acceptErr != nil {
			t.Errorf("server Accept: %v", res.acceptErr)
		}
		if res.notifyErr != nil {
			t.Errorf("server NotifyDisconnect: %v", res.notifyErr)
		}
	}
	for i, r := range res.recvs {
		want := nd.ErrCanceled
		if i < len(exp.recvs) {
			want = exp.recvs[i]
		}
		switch {
		case r.status == nd.Pending:
			t.Errorf("server Receive %d never completed", i)
		case exp.random:
			if r.status != nd.Success && r.status != nd.ErrCanceled && r.status != nd.ErrBufferOverflow &&
				r.status != nd.ErrInvalidationError {
				t.Errorf("server Receive %d: %v", i, r.status)
			}
		case r.status != want:
			t.Errorf("server Receive %d: %v, want %v", i, r.status, want)
		case want == nd.Success && i < len(exp.recvData) && !bytes.Equal(r.data, exp.recvData[i]):
			t.Errorf("server Receive %d: data %x, want %x", i, r.data, exp.recvData[i])
		}
	}
	if res.guardErr != "" {
		t.Errorf("registered region: %s", res.guardErr)
	}
	if res.recvGuardErr != "" {
		t.Errorf("receive region: %s", res.recvGuardErr)
	}
	orig := hpOrig
	if e := hpCheckWindow("R (read-only window)", res.r, orig[hpROff:hpROff+hpRLen], nil, nil); e != "" {
		t.Error(e)
	}
	if !exp.random {
		if e := hpCheckWindow("W", res.w, orig[hpWOff:hpWOff+hpWLen], exp.must, exp.may); e != "" {
			t.Error(e)
		}
		if e := hpCheckWindow("WO", res.wo, orig[hpWOOff:hpWOOff+hpWOLen], exp.woMust, nil); e != "" {
			t.Error(e)
		}
	}
}

// hpWData is origW with the given Writes applied: what a Read sees.
func hpWData(off, n int, must ...hpWrite) []byte {
	w := slices.Clone(hpOrig[hpWOff : hpWOff+hpWLen])
	for _, m := range must {
		copy(w[m.off:], m.data)
	}
	return slices.Clone(w[off : off+n])
}

func hpRData(off, n int) []byte {
	return hpOrig[hpROff+off : hpROff+off+n]
}

func hpBytes(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = ^byte(i*29) ^ salt
	}
	return b
}

// hpForged returns an STag none of the connection's windows has.
func hpForged(hc *hpConn, seed uint32) uint32 {
	s := seed
	for s == hc.W.Token || s == hc.R.Token || s == hc.WO.Token || s == iwarp.RTRWriteSTag {
		s = s*2654435761 + 1
	}
	return s
}

// ---------------------------------------------------------------------
// The cases.

// hpCase runs after a correct handshake and RTR: it sends its frames and
// returns what the server must do.
type hpCase struct {
	name string
	crc  bool
	run  func(rc *hpRaw, hc *hpConn) hpExpect
}

var (
	ddpTagged   = func(c iwarp.TermCode) *hpTermWant { return termIs(iwarp.TermLayerDDP, iwarp.TermDDPTagged, c) }
	ddpUntagged = func(c iwarp.TermCode) *hpTermWant { return termIs(iwarp.TermLayerDDP, iwarp.TermDDPUntagged, c) }
	rdmapProt   = func(c iwarp.TermCode) *hpTermWant {
		return termIs(iwarp.TermLayerRDMAP, iwarp.TermRDMAPRemoteProtection, c)
	}
	rdmapOp = func(c iwarp.TermCode) *hpTermWant {
		return termIs(iwarp.TermLayerRDMAP, iwarp.TermRDMAPRemoteOperation, c)
	}
	llp = func(c iwarp.TermCode) *hpTermWant { return termIs(iwarp.TermLayerLLP, iwarp.TermLLPMPA, c) }
)

func hpCases() []hpCase {
	data16 := hpBytes(16, 1)
	var cases []hpCase
	add := func(name string, crc bool, run func(rc *hpRaw, hc *hpConn) hpExpect) {
		cases = append(cases, hpCase{name, crc, run})
	}

	// RDMA Writes: STags, ranges, rights.
	add("write/forged-stag", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hpForged(hc, hc.W.Token^0x5a5a5a5a), hc.W.Base, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPInvalidSTag)}
	})
	add("write/stag-zero", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(0, hc.W.Base, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPInvalidSTag)}
	})
	add("write/rtr-stag-with-data", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(iwarp.RTRWriteSTag, 0, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPInvalidSTag)}
	})
	add("write/read-only-window", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.write(hc.R, 0, data16))
		return hpExpect{term: rdmapProt(iwarp.TermCodeAccessRights)}
	})
	add("write/before-window", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base-8, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds)}
	})
	add("write/far-before-window", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base-hpGuard, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds)}
	})
	add("write/past-end", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.write(hc.W, hc.W.Length, data16))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds)}
	})
	add("write/straddles-end", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.write(hc.W, hc.W.Length-8, data16))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds)}
	})
	add("write/straddles-write-only-end", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.write(hc.WO, hc.WO.Length-4, data16))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds)}
	})
	add("write/to-wraps-2^64", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hc.W.Token, math.MaxUint64-7, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPTOWrap)}
	})
	add("write/to-wraps-2^64-continued", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hc.W.Token, math.MaxUint64-15, data16, false), rc.writeSeg(hc.W.Token, 0, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPTOWrap)}
	})
	add("write/to-max-one-byte", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.writeSeg(hc.W.Token, math.MaxUint64, data16[:1], true))
		return hpExpect{term: termOf(iwarp.TermLayerDDP, iwarp.TermDDPTagged)}
	})
	add("write/length-overflows-window", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		a, b := hpBytes(32, 2), hpBytes(32, 3)
		end := hc.W.Length
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base+end-32, a, false), rc.writeSeg(hc.W.Token, hc.W.Base+end, b, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPBaseBounds), must: []hpWrite{{int(end) - 32, a}}}
	})
	add("write/continuation-skips", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(32, 4)
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base+64, a, false),
			rc.writeSeg(hc.W.Token, hc.W.Base+200, a, true))
		return hpExpect{term: termOf(iwarp.TermLayerDDP, iwarp.TermDDPTagged), must: []hpWrite{{64, a}}}
	})
	add("write/continuation-other-stag", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(32, 5)
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base+64, a, false), rc.writeSeg(hc.WO.Token, hc.W.Base+96, a, true))
		return hpExpect{term: termOf(iwarp.TermLayerDDP, iwarp.TermDDPTagged), must: []hpWrite{{64, a}}}
	})
	add("write/valid-then-forged", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a, b := hpBytes(100, 6), hpBytes(50, 7)
		rc.put(rc.write(hc.W, 5000, a), rc.write(hc.WO, 10, b), rc.writeSeg(hpForged(hc, 77), hc.W.Base, data16, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPInvalidSTag), must: []hpWrite{{5000, a}}, woMust: []hpWrite{{10, b}}}
	})

	// RDMA Read Requests.
	add("read/bad-source-stag", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hpForged(hc, 0xdeadbe00), hc.W.Base, 16))
		return hpExpect{term: rdmapProt(iwarp.TermCodeInvalidSTag), noReads: true}
	})
	add("read/too-much", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.W.Token, hc.W.Base, uint32(hc.W.Length)+1))
		return hpExpect{term: rdmapProt(iwarp.TermCodeBaseBounds), noReads: true}
	})
	add("read/size-max", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.R.Token, hc.R.Base, math.MaxUint32))
		return hpExpect{term: rdmapProt(iwarp.TermCodeBaseBounds), noReads: true}
	})
	add("read/before-window", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.R.Token, hc.R.Base-1, 16))
		return hpExpect{term: rdmapProt(iwarp.TermCodeBaseBounds), noReads: true}
	})
	add("read/past-end", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.R.Token, hc.R.Base+hc.R.Length-8, 16))
		return hpExpect{term: rdmapProt(iwarp.TermCodeBaseBounds), noReads: true}
	})
	add("read/source-to-wraps", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.W.Token, math.MaxUint64-8, 64))
		return hpExpect{term: rdmapProt(iwarp.TermCodeTOWrap), noReads: true}
	})
	add("read/write-only-window", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.readReq(hc.WO.Token, hc.WO.Base, 16))
		return hpExpect{term: rdmapProt(iwarp.TermCodeAccessRights), noReads: true}
	})
	add("read/valid-then-bad-stag", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(300, 8)
		rc.put(rc.write(hc.W, 700, a), rc.readReq(hc.W.Token, hc.W.Base+600, 600),
			rc.readReq(hc.R.Token, hc.R.Base+10, 100), rc.readReq(hpForged(hc, 1234), hc.R.Base, 1))
		w := hpWrite{700, a}
		return hpExpect{term: rdmapProt(iwarp.TermCodeInvalidSTag), must: []hpWrite{w},
			reads: []hpReadWant{{1, hpWData(600, 600, w)}, {2, hpRData(10, 100)}}}
	})
	add("read/bad-msn", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.readMSN = 2
		rc.put(rc.readReq(hc.R.Token, hc.R.Base, 16))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMSNRange), noReads: true}
	})
	add("read/bad-qn", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		body := iwarp.AppendReadRequest(nil, &iwarp.ReadRequest{SinkSTag: 1, Size: 16, SourceSTag: hc.R.Token, SourceTO: hc.R.Base})
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNSend, MSN: 1}, body))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidQN), noReads: true}
	})
	add("read/short-body", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: 1}, make([]byte, 20)))
		return hpExpect{term: termLayer(iwarp.TermLayerRDMAP), noReads: true}
	})
	add("read/segmented-request", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		body := iwarp.AppendReadRequest(nil, &iwarp.ReadRequest{SinkSTag: 1, Size: 16, SourceSTag: hc.R.Token, SourceTO: hc.R.Base})
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, QN: iwarp.QNReadRequest, MSN: 1}, body[:14]),
			rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: 1, MO: 14}, body[14:]))
		return hpExpect{term: termAny, noReads: true}
	})

	// Sends.
	add("send/beyond-posted-receives", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		var frames [][]byte
		var exp hpExpect
		for i := 0; i <= hpRecvs; i++ {
			d := hpBytes(8+i, byte(i))
			frames = append(frames, rc.send(d))
			if i < hpRecvs {
				exp.recvs = append(exp.recvs, nd.Success)
				exp.recvData = append(exp.recvData, d)
			}
		}
		rc.put(frames...)
		exp.term = ddpUntagged(iwarp.TermCodeInvalidMSNNoBuffer)
		return exp
	})
	add("send/larger-than-receive", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.send(hpBytes(hpRecvLen+1, 9)))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeMessageTooLong), recvs: []nd.Status{nd.ErrBufferOverflow}}
	})
	add("send/much-larger-than-receive", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.send(hpBytes(60000, 10)))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeMessageTooLong), recvs: []nd.Status{nd.ErrBufferOverflow}}
	})
	add("send/segments-overflow-receive", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, hpBytes(40, 11), false), rc.sendSeg(iwarp.OpSend, 1, 40, hpBytes(40, 12), true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeMessageTooLong), recvs: []nd.Status{nd.ErrBufferOverflow}}
	})
	add("send/bad-msn", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 2, 0, data16, true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMSNRange)}
	})
	add("send/repeated-msn", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, data16, true), rc.sendSeg(iwarp.OpSend, 1, 0, data16, true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMSNRange), recvs: []nd.Status{nd.Success}, recvData: [][]byte{data16}}
	})
	add("send/bad-qn", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpSend, Last: true, QN: 5, MSN: 1}, data16))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidQN)}
	})
	add("send/bad-mo-first", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 8, data16, true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMO)}
	})
	add("send/bad-mo-continuation", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, data16, false), rc.sendSeg(iwarp.OpSend, 1, 20, data16, true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMO)}
	})
	add("send/mo-near-2^32", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, data16, false), rc.sendSeg(iwarp.OpSend, 1, math.MaxUint32-7, data16, true))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMO)}
	})
	add("send/interleaved-untagged", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, data16, false), rc.readReq(hc.R.Token, hc.R.Base, 16))
		return hpExpect{term: termLayer(iwarp.TermLayerDDP), noReads: true}
	})
	add("send/invalidate-unknown-stag", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpSendInvalidate, Last: true, QN: iwarp.QNSend, MSN: 1,
			InvalidateSTag: hpForged(hc, 99)}, data16))
		return hpExpect{term: rdmapOp(iwarp.TermCodeSTagCannotInvalidate), recvs: []nd.Status{nd.ErrInvalidationError}}
	})
	add("send/invalidate-then-write", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpSendSEInvalidate, Last: true, QN: iwarp.QNSend, MSN: 1,
			InvalidateSTag: hc.W.Token}, data16), rc.write(hc.W, 0, hpBytes(64, 13)))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPInvalidSTag), recvs: []nd.Status{nd.Success}, recvData: [][]byte{data16}}
	})

	// CRC, pad, length.
	add("crc/bad-send", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		f[len(f)-1] ^= 0x40
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError)}
	})
	add("crc/bad-write", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(64, 14)
		f := rc.write(hc.W, 128, a)
		f[20] ^= 1 // a payload byte: placed before the trailer can be checked
		bad := slices.Clone(a)
		bad[20-16] ^= 1
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError), may: []hpWrite{{128, a}, {128, bad}}}
	})
	add("crc/bad-read-request", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.readReq(hc.R.Token, hc.R.Base, 16)
		f[len(f)-4] ^= 0xff
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError), noReads: true}
	})
	add("crc/bad-rtr-copy", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.rtr()
		f[len(f)-2] ^= 0x10
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError)}
	})
	// RFC 5044: the receiver ignores what the pad holds, except for the
	// CRC (siw sends stale bytes there).
	add("pad/nonzero-crc-ok", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		d := hpBytes(5, 15)
		f := rc.send(d) // pad 3
		f[2+iwarp.UntaggedHeaderSize+5] = 1
		rc.put(hpRecrc(f, true))
		rc.closeWrite()
		return hpExpect{noTerm: true, recvs: []nd.Status{nd.Success}, recvData: [][]byte{d}}
	})
	add("pad/nonzero-no-crc", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		d := hpBytes(6, 16)
		f := rc.send(d) // pad 2
		f[2+iwarp.UntaggedHeaderSize+6+1] = 0x80
		rc.put(f, rc.send(d))
		rc.closeWrite()
		return hpExpect{noTerm: true, recvs: []nd.Status{nd.Success, nd.Success}, recvData: [][]byte{d, d}}
	})
	add("pad/changed-after-crc", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(hpBytes(7, 16)) // pad 1
		f[2+iwarp.UntaggedHeaderSize+7] = 0x20
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError)}
	})
	add("fpdu/ulpdu-length-zero", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(make([]byte, 64))
		return hpExpect{term: termAny}
	})
	add("fpdu/ulpdu-shorter-than-header", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		binary.BigEndian.PutUint16(f, 10)
		rc.put(f)
		return hpExpect{term: termAny}
	})
	add("fpdu/untagged-length-of-tagged", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(nil)
		binary.BigEndian.PutUint16(f, iwarp.TaggedHeaderSize)
		rc.put(f)
		return hpExpect{term: termAny}
	})
	add("fpdu/length-beyond-data-crc", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		// The header claims 200 payload bytes; 100 follow, then a valid
		// Send and filler that the server takes for the rest of the
		// payload, then a wrong CRC.
		h := iwarp.SegmentHeader{Opcode: iwarp.OpWrite, Last: true, STag: hc.W.Token, TO: hc.W.Base + 4096}
		f, _ := iwarp.AppendFPDUHeader(nil, &h, 200)
		payload := append(hpBytes(100, 17), rc.send(data16)...)
		payload = append(payload, hpBytes(200-len(payload), 18)...)
		f = append(f, payload...)
		f = binary.LittleEndian.AppendUint32(f, ^iwarp.ChecksumCRC(f))
		rc.put(f)
		return hpExpect{term: llp(iwarp.TermCodeCRCError), may: []hpWrite{{4096, payload}}}
	})
	add("fpdu/length-beyond-receive", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		// A Send whose length field promises more than the Receive holds
		// and more than follows.
		h := iwarp.SegmentHeader{Opcode: iwarp.OpSend, Last: true, QN: iwarp.QNSend, MSN: 1}
		f, _ := iwarp.AppendFPDUHeader(nil, &h, 5000)
		rc.put(append(f, hpBytes(100, 19)...))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeMessageTooLong), recvs: []nd.Status{nd.ErrBufferOverflow}}
	})

	// Header fields.
	add("header/ddp-version-untagged", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		f[2] = f[2]&^3 | 2
		rc.put(f)
		return hpExpect{term: ddpUntagged(iwarp.TermCodeDDPUntaggedVersion)}
	})
	add("header/ddp-version-tagged", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.write(hc.W, 0, data16)
		f[2] &^= 3 // version 0
		rc.put(hpRecrc(f, true))
		return hpExpect{term: ddpTagged(iwarp.TermCodeDDPTaggedVersion)}
	})
	add("header/rdmap-version", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		f[3] = f[3]&0x3f | 0x80
		rc.put(f)
		return hpExpect{term: rdmapOp(iwarp.TermCodeRDMAPVersion)}
	})
	for op := byte(8); op < 16; op += 3 {
		add("header/opcode-"+strconv.Itoa(int(op)), false, func(rc *hpRaw, hc *hpConn) hpExpect {
			f := rc.send(data16)
			f[3] = f[3]&0xf0 | op
			rc.put(f)
			return hpExpect{term: rdmapOp(iwarp.TermCodeUnexpectedOpcode)}
		})
	}
	add("header/tagged-send", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		f[2] |= 0x80
		rc.put(f)
		return hpExpect{term: rdmapOp(iwarp.TermCodeUnexpectedOpcode)}
	})
	add("header/untagged-write", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.write(hc.W, 0, data16)
		f[2] &^= 0x80
		rc.put(f)
		return hpExpect{term: rdmapOp(iwarp.TermCodeUnexpectedOpcode)}
	})
	add("header/unsolicited-read-response", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpReadResponse, Last: true, STag: 0x12345600, TO: 0}, data16))
		return hpExpect{term: termOf(iwarp.TermLayerDDP, iwarp.TermDDPTagged)}
	})

	// Terminates at various points (the server answers none: a
	// Terminate ends the connection).
	add("terminate/after-rtr", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.terminate(1))
		return hpExpect{noTerm: true}
	})
	add("terminate/after-traffic", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(48, 20)
		rc.put(rc.write(hc.W, 9000, a), rc.send(data16), rc.terminate(1))
		return hpExpect{noTerm: true, must: []hpWrite{{9000, a}}, recvs: []nd.Status{nd.Success}, recvData: [][]byte{data16}}
	})
	add("terminate/mid-write", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(40, 21)
		rc.put(rc.writeSeg(hc.W.Token, hc.W.Base+300, a, false), rc.terminate(1))
		return hpExpect{noTerm: true, must: []hpWrite{{300, a}}}
	})
	add("terminate/mid-send", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.sendSeg(iwarp.OpSend, 1, 0, data16, false), rc.terminate(1))
		return hpExpect{}
	})
	add("terminate/bad-msn", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.terminate(7))
		return hpExpect{term: ddpUntagged(iwarp.TermCodeInvalidMSNRange)}
	})
	add("terminate/long-body", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpTerminate, Last: true, QN: iwarp.QNTerminate, MSN: 1}, hpBytes(400, 22)))
		return hpExpect{}
	})
	add("terminate/short-body", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.seg(iwarp.SegmentHeader{Opcode: iwarp.OpTerminate, Last: true, QN: iwarp.QNTerminate, MSN: 1}, []byte{0x12}))
		return hpExpect{noTerm: true}
	})

	// Truncated FPDUs, then close.
	add("truncated/header", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.write(hc.W, 0, data16)[:7])
		rc.closeWrite()
		return hpExpect{}
	})
	add("truncated/untagged-header", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(rc.send(data16)[:17])
		rc.closeWrite()
		return hpExpect{}
	})
	add("truncated/write-payload", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(1000, 23)
		rc.put(rc.write(hc.W, 20000, a)[:16+300])
		rc.closeWrite()
		return hpExpect{may: []hpWrite{{20000, a}}}
	})
	add("truncated/send-trailer", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.send(data16)
		rc.put(f[:len(f)-2])
		rc.closeWrite()
		return hpExpect{}
	})
	add("truncated/read-request", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		f := rc.readReq(hc.R.Token, hc.R.Base, 16)
		rc.put(f[:30])
		rc.closeWrite()
		return hpExpect{noReads: true}
	})
	add("truncated/after-valid", true, func(rc *hpRaw, hc *hpConn) hpExpect {
		a := hpBytes(64, 24)
		f := rc.send(data16)
		rc.put(rc.write(hc.W, 100, a), f[:len(f)-1])
		rc.closeWrite()
		return hpExpect{must: []hpWrite{{100, a}}}
	})
	add("truncated/length-field-only", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put([]byte{0x00})
		rc.closeWrite()
		return hpExpect{}
	})

	// Garbage.
	for i := 0; i < 4; i++ {
		add("garbage/random-"+strconv.Itoa(i), i%2 == 0, func(rc *hpRaw, hc *hpConn) hpExpect {
			rnd := rand.New(rand.NewPCG(uint64(i), 42))
			g := make([]byte, 16+rnd.IntN(500))
			for j := range g {
				g[j] = byte(rnd.Uint32())
			}
			rc.put(g)
			rc.closeWrite()
			return hpExpect{}
		})
	}
	add("garbage/ff", false, func(rc *hpRaw, hc *hpConn) hpExpect {
		rc.put(bytes.Repeat([]byte{0xff}, 200))
		return hpExpect{term: termAny}
	})
	return cases
}

// runStandard dials, hands shakes, sends the RTR and runs c.
func (s *hpServer) runStandard(t *testing.T, c hpCase) {
	rc := hpDial(t, s.addr)
	rc.handshake(hpDefaultOpts(c.crc))
	if err := rc.put(rc.rtr()); err != nil {
		t.Fatalf("writing the RTR: %v", err)
	}
	hc, err := s.await(rc.local, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if hc.acceptErr != nil {
		t.Fatalf("server Accept: %v", hc.acceptErr)
	}
	exp := c.run(rc, hc)
	s.finish(t, rc, hc, exp)
}

// ---------------------------------------------------------------------
// Cases that need their own flow.

// hpHandshakeCases misbehave during connection setup.
func (s *hpServer) handshakeCases(t *testing.T) {
	t.Run("mpa/garbage-instead-of-request", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.put(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 4))
		s.finish(t, rc, nil, hpExpect{noTerm: true})
	})
	t.Run("mpa/partial-request-then-silence", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.put(rc.mpaRequest(hpDefaultOpts(false))[:10])
		s.finish(t, rc, nil, hpExpect{noTerm: true})
	})
	t.Run("mpa/private-data-length-too-big", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		f := rc.mpaRequest(hpDefaultOpts(false))
		binary.BigEndian.PutUint16(f[18:], 0xffff)
		rc.put(f)
		s.finish(t, rc, nil, hpExpect{noTerm: true})
	})
	t.Run("mpa/markers", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		o := hpDefaultOpts(false)
		o.markers = true
		rc.put(rc.mpaRequest(o))
		rep, err := rc.readMPA(5 * time.Second)
		if err != nil || !rep.Reject || rep.Markers {
			t.Errorf("reply to a request for markers: %+v, %v; want a reject", rep, err)
		}
		s.finish(t, rc, nil, hpExpect{noTerm: true})
	})
	t.Run("mpa/no-rtr", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.handshake(hpDefaultOpts(false))
		hc, err := s.await(rc.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.finish(t, rc, hc, hpExpect{acceptErr: nd.ErrConnectionAborted})
	})
	t.Run("mpa/terminate-before-rtr", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.handshake(hpDefaultOpts(true))
		rc.put(rc.terminate(1))
		hc, err := s.await(rc.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.finish(t, rc, hc, hpExpect{noTerm: true, acceptErr: nd.ErrConnectionRefused})
	})
	t.Run("mpa/send-instead-of-rtr", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.handshake(hpDefaultOpts(false))
		rc.put(rc.send(hpBytes(16, 30)))
		hc, err := s.await(rc.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.finish(t, rc, hc, hpExpect{term: llp(iwarp.TermCodeNoMatchingRTR), acceptErr: nd.ErrConnectionAborted})
	})
	t.Run("mpa/write-with-data-instead-of-rtr", func(t *testing.T) {
		rc := hpDial(t, s.addr)
		rc.handshake(hpDefaultOpts(true))
		rc.put(rc.writeSeg(iwarp.RTRWriteSTag, 0, hpBytes(16, 31), true))
		hc, err := s.await(rc.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.finish(t, rc, hc, hpExpect{term: llp(iwarp.TermCodeNoMatchingRTR), acceptErr: nd.ErrConnectionAborted})
	})
}

// crossConnection: one connection names another connection's windows.
func (s *hpServer) crossConnection(t *testing.T) {
	a := hpDial(t, s.addr)
	defer a.c.Close() // also when the subtests that close it are filtered out
	a.handshake(hpDefaultOpts(false))
	a.put(a.rtr())
	hcA, err := s.await(a.local, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("write/stag-of-other-connection", func(t *testing.T) {
		b := hpDial(t, s.addr)
		b.handshake(hpDefaultOpts(true))
		b.put(b.rtr())
		hcB, err := s.await(b.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b.put(b.write(hcA.W, 0, hpBytes(32, 40)))
		s.finish(t, b, hcB, hpExpect{term: ddpTagged(iwarp.TermCodeDDPSTagNotAssociated)})
	})
	t.Run("read/stag-of-other-connection", func(t *testing.T) {
		b := hpDial(t, s.addr)
		b.handshake(hpDefaultOpts(false))
		b.put(b.rtr())
		hcB, err := s.await(b.local, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b.put(b.readReq(hcA.R.Token, hcA.R.Base, 32))
		s.finish(t, b, hcB, hpExpect{term: rdmapProt(iwarp.TermCodeSTagNotAssociated), noReads: true})
	})
	t.Run("owner-still-works", func(t *testing.T) {
		d := hpBytes(32, 41)
		a.put(a.write(hcA.W, 0, d), a.readReq(hcA.W.Token, hcA.W.Base, 64))
		w := hpWrite{0, d}
		seg, err := a.readSegment(5 * time.Second)
		switch {
		case err != nil:
			t.Errorf("reading the Read Response: %v", err)
		case seg.Opcode != iwarp.OpReadResponse || seg.STag != hpSinkSTag(1) || !bytes.Equal(seg.Payload, hpWData(0, 64, w)):
			t.Errorf("got %v STag %x %x, want the Read Response with the window's bytes", seg.Opcode, seg.STag, seg.Payload)
		}
		a.closeWrite()
		s.finish(t, a, hcA, hpExpect{noTerm: true, must: []hpWrite{w}})
	})
}

// irdRoundedUp: an initiator without the godirect prefix that asks ORD 2
// gets IRD 3 on the wire (the application's limit, 2, plus the
// confirmation Read's slot) and keeps four Read Requests in flight, as
// Linux's siw does (it takes the responder's IRD as its ORD and sizes its
// queue of outbound Reads to the next power of two; perftest's
// ib_read_bw -o 2 against nd perf's server). All four are answered; no
// Terminate.
func (s *hpServer) irdRoundedUp(t *testing.T) {
	rc := hpDial(t, s.addr)
	if err := rc.put(rc.mpaRequest(hpMPAOpts{ird: hpRawIRD, ord: 2, rtr: iwarp.RTRWrite, noPrefix: true})); err != nil {
		t.Fatalf("writing the MPA request: %v", err)
	}
	rep, err := rc.readMPA(5 * time.Second)
	if err != nil {
		t.Fatalf("reading the MPA reply: %v", err)
	}
	if rep.Reject || rep.IRD != 3 {
		t.Fatalf("MPA reply %+v: want IRD 3 (ORD 2 asked, plus one)", rep)
	}
	rc.crc = rep.CRC
	rc.put(rc.rtr())
	hc, err := s.await(rc.local, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4 // the power of two at or above 3
	var frames [][]byte
	for range n {
		frames = append(frames, rc.readReq(hc.W.Token, hc.W.Base, uint32(hc.W.Length)))
	}
	rc.put(frames...)
	got := make(map[uint32][]byte)
	for done := 0; done < n; {
		seg, err := rc.readSegment(hpEOFWait)
		if err != nil {
			t.Fatalf("after %d of %d Read Responses: %v", done, n, err)
		}
		if seg.Opcode != iwarp.OpReadResponse {
			t.Fatalf("%v after %d of %d Read Responses, want only Read Responses", seg.Opcode, done, n)
		}
		got[seg.STag] = append(got[seg.STag], seg.Payload...)
		if seg.Last {
			done++
		}
	}
	w := hpWData(0, int(hc.W.Length))
	for stag, b := range got {
		if !bytes.Equal(b, w) {
			t.Errorf("Read Response %x: %d bytes, not the window's content", stag, len(b))
		}
	}
	rc.closeWrite()
	s.finish(t, rc, hc, hpExpect{noTerm: true, noReads: true})
}

// irdFlood: many more Read Requests than the negotiated IRD while the
// client reads nothing, so that the server's responses back up.
func (s *hpServer) irdFlood(t *testing.T) {
	rc := hpDial(t, s.addr)
	rc.c.SetReadBuffer(16 << 10)
	rc.handshake(hpDefaultOpts(false))
	rc.put(rc.rtr())
	hc, err := s.await(rc.local, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	var frames [][]byte
	for i := 0; i < n; i++ {
		frames = append(frames, rc.readReq(hc.W.Token, hc.W.Base, uint32(hc.W.Length)))
	}
	rc.put(frames...)
	// The server must give up on its own, without the client reading.
	select {
	case <-hc.disconnected:
	case <-time.After(hpServerWait):
		t.Fatalf("the server did not end the connection within %v of %d Read Requests beyond its IRD", hpServerWait, n)
	}
	data, closed, rerr := rc.readToEOF(hpEOFWait)
	if !closed {
		t.Errorf("the server did not close the connection within %v (%v)", hpEOFWait, rerr)
	}
	in := hpParse(data, rc.crc)
	if in.err != nil {
		t.Errorf("%v (read error %v)", in.err, rerr)
	}
	t.Logf("%d Read Requests of %d bytes: %d answered before the Terminate (%d bytes in all)", n, hc.W.Length, len(in.order), len(data))
	want := rdmapOp(iwarp.TermCodeCatastrophicStream)
	if len(in.terms) == 0 {
		t.Errorf("no Terminate after %d bytes (%d Read Responses); want %v; read error %v", len(data), len(in.order), want, rerr)
	} else if !want.match(in.terms[0]) {
		t.Errorf("Terminate layer %d etype %d code %#02x, want %v", in.terms[0].Layer, in.terms[0].EType, in.terms[0].Code, want)
	}
	if len(in.order) >= n {
		t.Errorf("the server answered all %d Read Requests beyond its IRD", n)
	}
	w := hpWData(0, int(hc.W.Length))
	for _, stag := range in.order {
		if !bytes.Equal(in.responses[stag], w) {
			t.Errorf("Read Response %x: %d bytes, not the window's content", stag, len(in.responses[stag]))
		}
	}
	res := hc.wait(t)
	if res.notifyErr != nil || res.guardErr != "" {
		t.Errorf("server: NotifyDisconnect %v, guards %q", res.notifyErr, res.guardErr)
	}
	for i, r := range res.recvs {
		if r.status != nd.ErrCanceled {
			t.Errorf("server Receive %d: %v, want ErrCanceled", i, r.status)
		}
	}
}

// ---------------------------------------------------------------------
// Randomized mode: valid frame sequences, mutated.

func (s *hpServer) randomCase(t *testing.T, rnd *rand.Rand) {
	crc := rnd.IntN(2) == 0
	rc := hpDial(t, s.addr)
	rc.handshake(hpDefaultOpts(crc))
	rc.put(rc.rtr())
	hc, err := s.await(rc.local, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
	var frames [][]byte
	sends := 0
	for n := 2 + rnd.IntN(7); n > 0; n-- {
		switch rnd.IntN(6) {
		case 0, 1: // a Write into W, maybe in two segments
			d := randBytes(1 + rnd.IntN(400))
			off := uint64(rnd.IntN(hpWLen - len(d)))
			if len(d) > 1 && rnd.IntN(2) == 0 {
				k := rnd.IntN(len(d)-1) + 1
				frames = append(frames, rc.writeSeg(hc.W.Token, hc.W.Base+off, d[:k], false),
					rc.writeSeg(hc.W.Token, hc.W.Base+off+uint64(k), d[k:], true))
			} else {
				frames = append(frames, rc.write(hc.W, off, d))
			}
		case 2: // a Send, maybe in two segments
			if sends == hpRecvs {
				continue
			}
			sends++
			d := randBytes(rnd.IntN(hpRecvLen + 1))
			rc.sendMSN++
			if len(d) > 1 && rnd.IntN(2) == 0 {
				k := rnd.IntN(len(d)-1) + 1
				frames = append(frames, rc.sendSeg(iwarp.OpSend, rc.sendMSN, 0, d[:k], false),
					rc.sendSeg(iwarp.OpSendSE, rc.sendMSN, uint32(k), d[k:], true))
			} else {
				frames = append(frames, rc.sendSeg(iwarp.OpSend, rc.sendMSN, 0, d, true))
			}
		case 3: // a Read Request of W or R
			if rnd.IntN(2) == 0 {
				off := uint64(rnd.IntN(hpWLen - 1024))
				frames = append(frames, rc.readReq(hc.W.Token, hc.W.Base+off, uint32(rnd.IntN(1024))))
			} else {
				off := uint64(rnd.IntN(hpRLen - 512))
				frames = append(frames, rc.readReq(hc.R.Token, hc.R.Base+off, uint32(rnd.IntN(512))))
			}
		case 4: // a Write into WO
			d := randBytes(1 + rnd.IntN(100))
			frames = append(frames, rc.write(hc.WO, uint64(rnd.IntN(hpWOLen-len(d))), d))
		case 5: // a zero-length Write
			frames = append(frames, rc.writeSeg(iwarp.RTRWriteSTag, 0, nil, true))
		}
	}
	if len(frames) == 0 {
		frames = append(frames, rc.rtr())
	}
	for m := 1 + rnd.IntN(3); m > 0; m-- {
		i := rnd.IntN(len(frames))
		f := slices.Clone(frames[i])
		switch rnd.IntN(9) {
		case 0: // flip a bit
			f[rnd.IntN(len(f))] ^= 1 << rnd.IntN(8)
		case 1: // flip a header bit and fix the CRC
			f[rnd.IntN(min(len(f), 2+iwarp.UntaggedHeaderSize))] ^= 1 << rnd.IntN(8)
			hpRecrc(f, rc.crc)
		case 2: // set a byte
			f[rnd.IntN(len(f))] = byte(rnd.Uint32())
		case 3: // truncate the stream here
			frames = append(frames[:i], f[:rnd.IntN(len(f))])
			continue
		case 4: // duplicate
			frames = slices.Insert(frames, i, f)
			continue
		case 5: // drop
			if len(frames) > 1 {
				frames = slices.Delete(frames, i, i+1)
			}
			continue
		case 6: // swap with the next
			if i+1 < len(frames) {
				frames[i], frames[i+1] = frames[i+1], frames[i]
			}
			continue
		case 7: // insert garbage
			frames = slices.Insert(frames, i, randBytes(1+rnd.IntN(40)))
			continue
		case 8: // insert a Terminate
			frames = slices.Insert(frames, i, rc.terminate(1))
			continue
		}
		frames[i] = f
	}
	// Write in random chunks, then close our side.
	stream := bytes.Join(frames, nil)
	for len(stream) > 0 {
		n := 1 + rnd.IntN(len(stream))
		if rc.put(stream[:n]) != nil {
			break
		}
		stream = stream[n:]
	}
	rc.closeWrite()
	s.finish(t, rc, hc, hpExpect{random: true})
}

// ---------------------------------------------------------------------
// The well-behaved client.

// goodRound connects with a godirect adapter, writes, reads and sends,
// and checks the server's side.
func (s *hpServer) goodRound(ad nd.Adapter, round int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cq, err := ad.CreateCompletionQueue(16)
	if err != nil {
		return err
	}
	defer cq.Close()
	conn, err := ad.CreateConnector()
	if err != nil {
		return err
	}
	defer conn.Close()
	ep, err := conn.CreateEndpoint(cq, cq, nd.EndpointLimits{
		InboundEntries: 1, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1, InboundReadLimit: 0, OutboundReadLimit: 2,
	})
	if err != nil {
		return err
	}
	defer ep.Close()
	buf := make([]byte, 4096)
	mr, err := ad.RegisterMemory(ctx, buf)
	if err != nil {
		return err
	}
	defer ad.DeregisterMemory(context.Background(), mr)
	if err := conn.Connect(ctx, ep, s.addr, hpProtocol, 0, nil); err != nil {
		return fmt.Errorf("Connect: %w", err)
	}
	if err := conn.CompleteConnect(ctx); err != nil {
		return fmt.Errorf("CompleteConnect: %w", err)
	}
	local, err := conn.GetLocalAddress()
	if err != nil {
		return err
	}
	hc, err := s.await(local, 10*time.Second)
	if err != nil {
		return err
	}
	if hc.acceptErr != nil {
		return fmt.Errorf("server Accept: %w", hc.acceptErr)
	}
	payload := hpBytes(256, byte(round))
	copy(buf, payload)
	msg1, msg2 := hpBytes(32, byte(round)+1), hpBytes(hpRecvLen, byte(round)+2)
	copy(buf[1024:], msg1)
	copy(buf[2048:], msg2)
	off := 1000 + round*256%(hpWLen-2000)
	var w, r1, r2, s1, s2 nd.Result
	sge := func(a, b int) []nd.SGE { return []nd.SGE{{Buffer: buf[a:b], Region: mr}} }
	posts := []error{
		ep.Write(&w, sge(0, 256), hc.W, uint64(off), 0),
		ep.Read(&r1, sge(256, 512), hc.W, uint64(off), 0),
		ep.Read(&r2, sge(512, 576), hc.R, 64, 0),
		ep.Send(&s1, sge(1024, 1024+len(msg1)), 0),
		ep.Send(&s2, sge(2048, 2048+len(msg2)), nd.FlagSendAndSolicitEvent),
	}
	for i, err := range posts {
		if err != nil {
			return fmt.Errorf("post %d: %w", i, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, want := range []*nd.Result{&w, &r1, &r2, &s1, &s2} {
		got := waitResult(cq, deadline)
		if got == nil {
			return fmt.Errorf("completion %d did not arrive", i)
		}
		if got != want || got.Status != nd.Success {
			return fmt.Errorf("completion %d: %p %v, want %p Success", i, got, got.Status, want)
		}
	}
	if !bytes.Equal(buf[256:512], payload) {
		return errors.New("Read after Write returned other bytes")
	}
	if !bytes.Equal(buf[512:576], hpRData(64, 64)) {
		return errors.New("Read of R returned other bytes")
	}
	if err := conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("Disconnect: %w", err)
	}
	select {
	case <-hc.done:
	case <-time.After(hpServerWait):
		return errors.New("the server's handler did not finish")
	}
	res := &hc.res
	var errs []error
	if res.notifyErr != nil {
		errs = append(errs, fmt.Errorf("server NotifyDisconnect: %w", res.notifyErr))
	}
	for i, rv := range res.recvs {
		switch {
		case i == 0 && (rv.status != nd.Success || !bytes.Equal(rv.data, msg1)),
			i == 1 && (rv.status != nd.Success || !bytes.Equal(rv.data, msg2)),
			i > 1 && rv.status != nd.ErrCanceled:
			errs = append(errs, fmt.Errorf("server Receive %d: %v %x", i, rv.status, rv.data))
		}
	}
	if res.guardErr != "" || res.recvGuardErr != "" {
		errs = append(errs, fmt.Errorf("guards: %s %s", res.guardErr, res.recvGuardErr))
	}
	orig := hpOrig
	if e := hpCheckWindow("W", res.w, orig[hpWOff:hpWOff+hpWLen], []hpWrite{{off, payload}}, nil); e != "" {
		errs = append(errs, errors.New(e))
	}
	return errors.Join(errs...)
}

// ---------------------------------------------------------------------

func TestHostilePeer(t *testing.T) {
	baseline := len(settleProviderGoroutines(0, 2*time.Second))
	s := newHPServer(t)
	defer func() {
		s.stop(t)
		checkNoProviderLeak(t, baseline, 10*time.Second)
	}()

	// Well-behaved godirect clients, CRC off and on.
	var goods []nd.Adapter
	for _, crc := range []bool{false, true} {
		cfg := hpConfig()
		cfg.CRC = crc
		ad, err := tcp.New(cfg).OpenAdapter(netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			t.Fatalf("OpenAdapter: %v", err)
		}
		defer ad.Close()
		goods = append(goods, ad)
	}
	if err := s.goodRound(goods[0], 0); err != nil {
		t.Fatalf("well-behaved client before the hostile cases: %v", err)
	}

	// Meanwhile, more well-behaved clients.
	stop := make(chan struct{})
	var goodWG sync.WaitGroup
	var goodRounds int
	var goodErrs []error
	goodWG.Add(1)
	go func() {
		defer goodWG.Done()
		for i := 1; i <= hpMaxGoodRound; i++ {
			select {
			case <-stop:
				return
			default:
			}
			goodRounds++
			if err := s.goodRound(goods[i%2], i); err != nil {
				goodErrs = append(goodErrs, fmt.Errorf("round %d: %w", i, err))
				if len(goodErrs) > 5 {
					return
				}
			}
		}
	}()

	for _, c := range hpCases() {
		t.Run(c.name, func(t *testing.T) { s.runStandard(t, c) })
	}
	s.handshakeCases(t)
	s.crossConnection(t)
	t.Run("read/ird-flood", s.irdFlood)
	t.Run("read/ird-rounded-up-for-siw", s.irdRoundedUp)

	seed := uint64(1)
	if v := os.Getenv("GODIRECT_HOSTILE_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("randomized cases: seed %d (GODIRECT_HOSTILE_SEED), %d connections", seed, hpRandomCases)
	rnd := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i < hpRandomCases; i++ {
		caseSeed := rnd.Uint64()
		t.Run(fmt.Sprintf("random/%d", i), func(t *testing.T) {
			s.randomCase(t, rand.New(rand.NewPCG(caseSeed, 11)))
		})
	}

	close(stop)
	goodWG.Wait()
	for _, err := range goodErrs {
		t.Errorf("well-behaved client during the hostile cases: %v", err)
	}
	if goodRounds == 0 {
		t.Errorf("no well-behaved round ran during the hostile cases")
	}
	t.Logf("%d well-behaved rounds ran during the hostile cases", goodRounds)
	if err := s.goodRound(goods[1], hpMaxGoodRound+1); err != nil {
		t.Errorf("well-behaved client after the hostile cases: %v", err)
	}
}
