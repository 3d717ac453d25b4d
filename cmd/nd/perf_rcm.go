package main

// nd perf -R (--rdma_cm): send_bw, write_bw and read_bw speaking perftest
// 6.06's rdma_cm protocol instead of nd perf's own, so that nd perf runs
// against ib_send_bw -R, ib_write_bw -R and ib_read_bw -R (docs:
// shared/spec/iwarp.md section 8). Both sides first connect a control
// connection (read limits 0/0) on which each keeps one Receive posted and
// every exchange is lock-step: the client Sends first and then waits for the
// server's Send, the server receives first. Over it go the version string
// ("6.06"), the cycle buffer and cache line sizes, the MTU as text and a
// handshake; then the client connects the data connection to the same port,
// and a series of pingpong_dest exchanges (56 bytes, big-endian) hands over
// the buffers: the server's window for write_bw and read_bw, the client's
// credit buffer for send_bw, into which the server RDMA-Writes its receive
// count every rx_depth/3 Receives (iWARP has no receiver-not-ready retry).
// After the traffic write_bw and read_bw exchange bandwidth reports, and a
// last handshake closes the test.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/godirect/nd"
)

const (
	rcmVersion      = "6.06" // the perftest version nd perf -R claims
	rcmVersionSize  = 16     // sizeof(user_param.version)
	rcmMinVersion   = 5.70   // perftest refuses older peers
	rcmWideVersion  = 6.28   // from this version on pingpong_dest has 64 bytes
	rcmDestSize     = 56     // sizeof(struct pingpong_dest) in 6.06
	rcmWideDestSize = 64     // and in 6.28 and later
	rcmRecvSize     = 512    // our control Receive: at least any message a perftest sends
	rcmCacheLine    = 64     // the cache line size we announce
	rcmMTU          = "3"    // IBV_MTU_1024 as text, what siw reports
	rcmMaxRxDepth   = 512    // perftest's rx_depth default
	rcmReportFields = 5      // xchg_bw_reports: size, iters, peak, average, message rate
	rcmCreditSlots  = 8      // credit Writes in flight on the server
	rcmConnectTries = 10     // perftest retries a refused data connection 10 times
	rcmConnectPause = 100 * time.Millisecond
)

// rcmDest is perftest's struct pingpong_dest.
type rcmDest struct {
	lid, outReads, qpn, psn uint32
	rkey                    uint32
	vaddr                   uint64
	gid                     [16]byte
	srqn, gidIndex          uint32
}

// put writes d into b in 6.06's 56-byte layout, or with wide in 6.28's
// 64-byte one (tail_markers_vaddr at 32 pushes the gid and the rest back),
// and returns the written part.
func (d rcmDest) put(b []byte, wide bool) []byte {
	n := rcmDestSize
	if wide {
		n = rcmWideDestSize
	}
	b = b[:n]
	clear(b)
	be := binary.BigEndian
	be.PutUint32(b[0:], d.lid)
	be.PutUint32(b[4:], d.outReads)
	be.PutUint32(b[8:], d.qpn)
	be.PutUint32(b[12:], d.psn)
	be.PutUint32(b[16:], d.rkey)
	be.PutUint64(b[24:], d.vaddr)
	g := 32
	if wide {
		g = 40
	}
	copy(b[g:g+16], d.gid[:])
	be.PutUint32(b[g+16:], d.srqn)
	be.PutUint32(b[g+20:], d.gidIndex)
	return b
}

// parseRcmDest reads a pingpong_dest in the layout put writes.
func parseRcmDest(b []byte, wide bool) rcmDest {
	be := binary.BigEndian
	d := rcmDest{
		lid: be.Uint32(b[0:]), outReads: be.Uint32(b[4:]), qpn: be.Uint32(b[8:]), psn: be.Uint32(b[12:]),
		rkey: be.Uint32(b[16:]), vaddr: be.Uint64(b[24:]),
	}
	g := 32
	if wide {
		g = 40
	}
	copy(d.gid[:], b[g:g+16])
	d.srqn, d.gidIndex = be.Uint32(b[g+16:]), be.Uint32(b[g+20:])
	return d
}

// rcmReport is perftest's bw_report_data as xchg_bw_reports sends it:
// bandwidths in MB/sec, the message rate in Mpps.
type rcmReport struct {
	size, iters          uint64
	peak, average, mRate float64
}

// rcmTestOK reports whether -R supports the test.
func rcmTestOK(t *perfTest) bool { return !t.lat }

// checkRCM checks the flags that -R cannot honour.
func (c *perfConfig) checkRCM() error {
	switch {
	case !rcmTestOK(c.test):
		return usagef("-R supports send_bw, write_bw and read_bw, not %s", c.test.name)
	case c.all:
		return usagef("-R runs one size: give -s, not -a")
	case c.duration > 0:
		return usagef("-R runs by iterations, not -D")
	case c.qps != 1:
		return usagef("-R runs one connection (-q 1)")
	case c.inProcess || (c.target == "" && !c.server):
		return usagef("-R needs --server or the server's ADDRESS")
	case c.json || c.plot != "":
		return usagef("--json and --plot do not apply with -R")
	}
	return nil
}

// rcmRxDepth is perftest's rx_depth for iters iterations.
func rcmRxDepth(iters int) int { return min(rcmMaxRxDepth, iters) }

// rcmCtrl is one side of the control connection.
type rcmCtrl struct {
	server     bool
	s          *session
	mr         nd.MemoryRegion
	recvBuf    []byte
	sendBuf    []byte
	recvSGL    [1]nd.SGE
	sendSGL    [1]nd.SGE
	recv, send nd.Result
	wait       *waiter

	peerVersion string
	wide        bool // the peer uses the 64-byte pingpong_dest
	cycle       int  // the cycle buffer both sides agreed on
}

// rcmCtrlLimits: one Receive posted at a time, one Send, no Reads (perftest's
// control connection asks for 0/0).
var rcmCtrlLimits = nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1, InboundSGE: 1, OutboundSGE: 1}

// newRcmCtrl creates the control side on conn (nil: a new connector) and
// posts its Receive.
func newRcmCtrl(ctx context.Context, a nd.Adapter, conn nd.Connector, server bool) (_ *rcmCtrl, err error) {
	c := &rcmCtrl{server: server}
	mem, mr, err := registered(ctx, a, 2*rcmRecvSize)
	if err != nil {
		return nil, err
	}
	c.mr = mr
	c.recvBuf, c.sendBuf = mem[:rcmRecvSize], mem[rcmRecvSize:]
	c.recvSGL[0] = nd.SGE{Buffer: c.recvBuf, Region: mr}
	if c.s, err = newSession(a, conn, rcmCtrlLimits); err != nil {
		deregister(ctx, a, mr)
		return nil, err
	}
	c.wait = newWaiter(c.s.cq)
	if err := c.s.ep.Receive(&c.recv, c.recvSGL[:]); err != nil {
		c.close(ctx)
		return nil, fmt.Errorf("posting the control Receive: %w", err)
	}
	return c, nil
}

// close tears the control connection down.
func (c *rcmCtrl) close(ctx context.Context) {
	c.s.close()
	deregister(ctx, c.s.adapter, c.mr)
}

// xchg does one lock-step exchange: it sends mine and returns the peer's
// message, which must have want bytes. With last, a Send that the peer's
// disconnect cancels after it got it is no error (the close handshake).
func (c *rcmCtrl) xchg(ctx context.Context, mine []byte, want int, what string, last bool) ([]byte, error) {
	if c.server {
		got, err := c.receive(ctx, want, what)
		if err != nil {
			return nil, err
		}
		return got, c.sendMsg(ctx, mine, what, last)
	}
	if err := c.sendMsg(ctx, mine, what, false); err != nil {
		return nil, err
	}
	return c.receive(ctx, want, what)
}

// sendMsg sends b and waits for the Send to complete.
func (c *rcmCtrl) sendMsg(ctx context.Context, b []byte, what string, last bool) error {
	c.sendSGL[0] = nd.SGE{Buffer: c.sendBuf[:copy(c.sendBuf, b)], Region: c.mr}
	if err := c.s.ep.Send(&c.send, c.sendSGL[:], 0); err != nil {
		return fmt.Errorf("sending %s: %w", what, err)
	}
	if err := c.wait.wait(ctx, &c.send); err != nil {
		return err
	}
	if err := c.send.Status.Err(); err != nil && !(last && c.send.Status == nd.ErrCanceled) {
		return fmt.Errorf("the Send of %s completed with %w", what, err)
	}
	return nil
}

// receive waits for the peer's next message, checks its size, reposts the
// Receive and returns a copy of the message.
func (c *rcmCtrl) receive(ctx context.Context, want int, what string) ([]byte, error) {
	if err := c.wait.wait(ctx, &c.recv); err != nil {
		return nil, err
	}
	if err := c.recv.Status.Err(); err != nil {
		return nil, fmt.Errorf("waiting for %s: the control Receive completed with %w", what, err)
	}
	n := c.recv.BytesTransferred
	if n != want {
		return nil, fmt.Errorf("%s: the peer sent %d bytes, want %d", what, n, want)
	}
	got := append([]byte(nil), c.recvBuf[:n]...)
	if err := c.s.ep.Receive(&c.recv, c.recvSGL[:]); err != nil {
		return nil, fmt.Errorf("reposting the control Receive: %w", err)
	}
	return got, nil
}

// preamble exchanges the version, the system data and the MTU.
func (c *rcmCtrl) preamble(ctx context.Context) error {
	v := make([]byte, rcmVersionSize)
	copy(v, rcmVersion)
	got, err := c.xchg(ctx, v, rcmVersionSize, "the version", false)
	if err != nil {
		return err
	}
	c.peerVersion = string(cString(got))
	f, err := strconv.ParseFloat(c.peerVersion, 64)
	if err != nil || f < rcmMinVersion {
		return fmt.Errorf("the peer is perftest %q: -R speaks with %.2f and later", c.peerVersion, rcmMinVersion)
	}
	c.wide = f >= rcmWideVersion
	be := binary.BigEndian
	c.cycle = os.Getpagesize()
	got, err = c.xchg(ctx, be.AppendUint32(nil, uint32(c.cycle)), 4, "the cycle buffer size", false)
	if err != nil {
		return err
	}
	c.cycle = max(c.cycle, int(be.Uint32(got)))
	if _, err := c.xchg(ctx, be.AppendUint32(nil, rcmCacheLine), 4, "the cache line size", false); err != nil {
		return err
	}
	if _, err := c.xchg(ctx, append([]byte(rcmMTU), 0), len(rcmMTU)+1, "the MTU", false); err != nil {
		return err
	}
	return nil
}

// xchgDest exchanges pingpong_dests: a handshake, or the data connection's
// description.
func (c *rcmCtrl) xchgDest(ctx context.Context, d rcmDest, what string, last bool) (rcmDest, error) {
	var b [rcmWideDestSize]byte
	mine := d.put(b[:], c.wide)
	got, err := c.xchg(ctx, mine, len(mine), what, last)
	if err != nil {
		return rcmDest{}, err
	}
	return parseRcmDest(got, c.wide), nil
}

// xchgReport exchanges bandwidth reports, field by field.
func (c *rcmCtrl) xchgReport(ctx context.Context, r rcmReport) (rcmReport, error) {
	mine := [rcmReportFields]uint64{r.size, r.iters, math.Float64bits(r.peak), math.Float64bits(r.average), math.Float64bits(r.mRate)}
	var theirs [rcmReportFields]uint64
	for i, v := range mine {
		got, err := c.xchg(ctx, binary.BigEndian.AppendUint64(nil, v), 8, "the bandwidth report", false)
		if err != nil {
			return rcmReport{}, err
		}
		theirs[i] = binary.BigEndian.Uint64(got)
	}
	return rcmReport{
		size: theirs[0], iters: theirs[1],
		peak: math.Float64frombits(theirs[2]), average: math.Float64frombits(theirs[3]), mRate: math.Float64frombits(theirs[4]),
	}, nil
}

// rcmData is one side of the data connection.
type rcmData struct {
	test   *perfTest
	server bool
	s      *session
	reaper *reaper
	size   int
	iters  int
	depth  int // requests in flight (client)
	rxd    int // perftest's rx_depth (send_bw)

	buf    []byte // client: the source of Sends and Writes, the sink of Reads; server: the Receives' buffer or the window
	bufMR  nd.MemoryRegion
	credit []byte // send_bw: the client's credit buffer (wordAligned), or the server's credit sources
	credMR nd.MemoryRegion
	mws    []nd.MemoryWindow
	remote rcmDest // the peer's description
	ird    int     // server read_bw: the Reads the client may have in flight
	ord    int     // client read_bw: the Reads we may have in flight

	posted, completed []int64
	start, end        instant
	n                 int
}

// limits are the data endpoint's limits.
func (d *rcmData) limits(ai nd.AdapterInfo) nd.EndpointLimits {
	l := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1}
	switch {
	case !d.server:
		l.OutboundEntries = d.depth + 1 // and a Bind
		if d.test.op == opRead {
			l.OutboundReadLimit = min(d.depth, ai.MaxOutboundReadLimit)
		}
	case d.test.op == opSend:
		l.InboundEntries, l.OutboundEntries = d.rxd, rcmCreditSlots+1
	case d.test.op == opRead:
		l.InboundReadLimit = ai.MaxInboundReadLimit
	}
	return l
}

// setUp registers the data side's buffers.
func (d *rcmData) setUp(ctx context.Context, a nd.Adapter, cycle int) (err error) {
	switch {
	case !d.server:
		if d.buf, d.bufMR, err = registered(ctx, a, d.size); err != nil {
			return err
		}
		if d.test.op == opSend {
			d.credit = wordAligned(4)
			if d.credMR, err = a.RegisterMemory(ctx, d.credit); err != nil {
				return fmt.Errorf("RegisterMemory of the credit buffer: %w", err)
			}
		}
	case d.test.op == opSend:
		if d.buf, d.bufMR, err = registered(ctx, a, d.size); err != nil {
			return err
		}
		d.credit, d.credMR, err = registered(ctx, a, 4*rcmCreditSlots)
		return err
	default:
		// perftest's client moves along the cycle buffer for sizes up to
		// half of it.
		d.buf = wordAligned(max(d.size, 2*cycle))
		if d.bufMR, err = a.RegisterMemory(ctx, d.buf); err != nil {
			return fmt.Errorf("RegisterMemory of %d bytes: %w", len(d.buf), err)
		}
	}
	return nil
}

// bind binds a window over buf with rights and returns its descriptor.
func (d *rcmData) bind(mr nd.MemoryRegion, buf []byte, rights nd.Flags) (nd.MWDescriptor, error) {
	var res nd.Result
	mw, desc, err := d.s.bindWindow(&res, mr, buf, rights)
	if err != nil {
		return desc, err
	}
	d.mws = append(d.mws, mw)
	if err := d.reaper.waitAll(&res); err != nil {
		return desc, fmt.Errorf("binding a window: %w", err)
	}
	return desc, nil
}

// dest binds what the peer must reach and describes the side: the server's
// window (write_bw, read_bw) or the client's credit buffer (send_bw).
func (d *rcmData) dest() (rcmDest, error) {
	dest := rcmDest{qpn: 1, psn: uint32(time.Now().UnixNano()) & 0xffffff}
	var desc nd.MWDescriptor
	var err error
	switch {
	case !d.server && d.test.op == opSend:
		desc, err = d.bind(d.credMR, d.credit, nd.FlagAllowWrite)
	case d.server && d.test.op != opSend:
		desc, err = d.bind(d.bufMR, d.buf, nd.FlagAllowRead|nd.FlagAllowWrite)
		dest.outReads = uint32(d.ird)
	case !d.server && d.test.op == opRead:
		dest.outReads = uint32(d.ord)
	}
	if err != nil {
		return dest, err
	}
	dest.rkey, dest.vaddr = desc.Token, desc.Base
	return dest, nil
}

// close releases the data side.
func (d *rcmData) close(ctx context.Context) {
	for _, mw := range d.mws {
		mw.Close()
	}
	if d.s != nil {
		d.s.close()
		deregister(ctx, d.s.adapter, d.bufMR, d.credMR)
	}
}

// creditCount reads the count the server last wrote into the credit buffer
// (perftest writes it in its host order, little-endian on the hosts it runs
// on).
func (d *rcmData) creditCount() int {
	v := loadWord((*uint32)(unsafe.Pointer(&d.credit[0])))
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return int(binary.LittleEndian.Uint32(b[:]))
}

// drive posts the client's iters requests, depth at a time (send_bw: within
// the server's credits), and records when each was posted and completed.
func (d *rcmData) drive(ctx context.Context) error {
	results := make([]nd.Result, d.depth)
	remote := nd.MWDescriptor{Base: d.remote.vaddr, Length: uint64(d.size), Token: d.remote.rkey}
	sgl := []nd.SGE{{Buffer: d.buf[:d.size], Region: d.bufMR}}
	d.posted, d.completed = make([]int64, d.iters), make([]int64, d.iters)
	scnt, ccnt := 0, 0
	done := ctx.Done()
	d.start = now()
	var pace pacer
	for spins := 1; ccnt < d.iters; spins++ {
		for scnt < d.iters && scnt-ccnt < d.depth && (d.test.op != opSend || scnt+1-d.creditCount() < d.rxd) {
			res := &results[scnt%d.depth]
			d.posted[scnt] = int64(since(d.start))
			var err error
			switch d.test.op {
			case opSend:
				err = d.s.ep.Send(res, sgl, 0)
			case opWrite:
				err = d.s.ep.Write(res, sgl, remote, 0, 0)
			case opRead:
				err = d.s.ep.Read(res, sgl, remote, 0, 0)
			}
			if err != nil {
				return fmt.Errorf("posting request %d: %w", scnt, err)
			}
			scnt++
		}
		if scnt == ccnt {
			// Nothing in flight: waiting for the server's credits.
			pace.idle()
			if spins%checkEvery == 0 {
				select {
				case <-done:
					return fmt.Errorf("waiting for credits after %d Sends (the server granted %d): %w", scnt, d.creditCount(), ctx.Err())
				default:
				}
			}
			continue
		}
		got, err := d.reaper.next()
		if err != nil {
			return err
		}
		for _, r := range got {
			if r != &results[ccnt%d.depth] {
				return errUnexpected
			}
			if err := r.Status.Err(); err != nil {
				return fmt.Errorf("request %d completed with %w", ccnt, err)
			}
			d.completed[ccnt] = int64(since(d.start))
			ccnt++
		}
	}
	d.end = now()
	d.n = ccnt
	return nil
}

// postReceives posts the server's rx_depth Receives (send_bw).
func (d *rcmData) postReceives(results []nd.Result, sgl []nd.SGE) error {
	for i := range results {
		if err := d.s.ep.Receive(&results[i], sgl); err != nil {
			return fmt.Errorf("posting Receive %d: %w", i, err)
		}
	}
	return nil
}

// serveSends takes the client's iters Sends on the Receives posted in
// results and RDMA-Writes the count received to the client's credit buffer
// every rx_depth/3 of them, as perftest's run_iter_bw_server.
func (d *rcmData) serveSends(results []nd.Result, sgl []nd.SGE) error {
	creditEvery := max(1, d.rxd/3)
	var writes [rcmCreditSlots]nd.Result
	var wsgl [1]nd.SGE
	client := nd.MWDescriptor{Base: d.remote.vaddr, Length: 4, Token: d.remote.rkey}
	wPosted, wDone := 0, 0
	owed, haveOwed := 0, false
	rcnt := 0
	for rcnt < d.iters || wPosted > wDone || haveOwed {
		if haveOwed && wPosted-wDone < rcmCreditSlots {
			i := wPosted % rcmCreditSlots
			src := d.credit[4*i : 4*i+4]
			binary.LittleEndian.PutUint32(src, uint32(owed))
			wsgl[0] = nd.SGE{Buffer: src, Region: d.credMR}
			if err := d.s.ep.Write(&writes[i], wsgl[:], client, 0, 0); err != nil {
				return fmt.Errorf("posting the credit Write: %w", err)
			}
			wPosted++
			haveOwed = false
		}
		got, err := d.reaper.next()
		if err != nil {
			return err
		}
		for _, r := range got {
			switch {
			case rcnt < d.iters && r == &results[rcnt%d.rxd]:
				if err := r.Status.Err(); err != nil {
					return fmt.Errorf("the Receive of message %d completed with %w", rcnt, err)
				}
				if r.BytesTransferred != d.size {
					return fmt.Errorf("message %d has %d bytes, want %d (-s)", rcnt, r.BytesTransferred, d.size)
				}
				if rcnt == 0 {
					d.start = now()
				}
				rcnt++
				if rcnt+d.rxd <= d.iters {
					if err := d.s.ep.Receive(r, sgl); err != nil {
						return fmt.Errorf("reposting Receive: %w", err)
					}
				}
				if (rcnt%d.rxd)%creditEvery == 0 {
					owed, haveOwed = rcnt, true
				}
			case wPosted > wDone && r == &writes[wDone%rcmCreditSlots]:
				if err := r.Status.Err(); err != nil {
					return fmt.Errorf("a credit Write completed with %w", err)
				}
				wDone++
			default:
				return errUnexpected
			}
		}
	}
	d.end = now()
	d.n = rcnt
	return nil
}

// report is the side's bandwidth report.
func (d *rcmData) report() rcmReport {
	r := rcmReport{size: uint64(d.size), iters: uint64(d.n)}
	secs := d.end.sub(d.start).Seconds()
	if secs <= 0 || d.n == 0 {
		return r
	}
	rate := float64(d.n) / secs
	peak := rate
	if d.posted != nil {
		peak = max(rate, peakRate(d.posted, d.completed, d.n))
	}
	r.peak, r.average = bandwidthUnits(peak*float64(d.size), false), bandwidthUnits(rate*float64(d.size), false)
	r.mRate = rate / 1e6
	return r
}

// runRCM runs the client or the server of a -R test.
func (c *perfConfig) runRCM(ctx context.Context, p nd.Provider, addrs []netip.Addr, out io.Writer) error {
	if err := c.checkRCM(); err != nil {
		return err
	}
	if c.server {
		local, err := c.serverAddr(addrs)
		if err != nil {
			return err
		}
		return c.rcmServer(ctx, p, addrs, local, out)
	}
	target, err := resolveTarget(c.target, c.port, c.portSet)
	if err != nil {
		return err
	}
	return c.rcmClient(ctx, p, addrs, target, out)
}

// newRcmData returns the data side of the test, not yet connected.
func (c *perfConfig) newRcmData(server bool) *rcmData {
	return &rcmData{test: c.test, server: server, size: int(c.size), iters: c.iters, depth: min(c.txDepth, c.iters), rxd: rcmRxDepth(c.iters)}
}

// connectRetrying connects a new session made by mk to target, again after
// rcmConnectPause while the peer refuses, rcmConnectTries times in all (the
// perftest server listens for the data connection only once the control
// connection got that far). drop releases a session that did not connect
// (each refused one, and the last on failure).
func connectRetrying(ctx context.Context, target netip.AddrPort, mk func() (*session, error), drop func(*session)) (*session, error) {
	for try := 1; ; try++ {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		err = s.dial(ctx, target, nil, nil)
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

// rcmSteps is the number of pingpong_dest exchanges between the data
// connection's handshake and the traffic: the dest, the REMOTE pass and the
// handshake after the QPs are ready, and for send_bw the handshake after
// the credit set-up too.
func rcmSteps(t *perfTest) int {
	if t.op == opSend {
		return 4
	}
	return 3
}

// rcmClient runs the client against the perftest -R server at target.
func (c *perfConfig) rcmClient(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := openAdapter(p, addrs, rdmacmLocal(addrs, target.Addr()))
	if err != nil {
		return err
	}
	defer a.Close()
	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	if err := checkSize(ai, int(c.size)); err != nil {
		return err
	}
	var ctrl *rcmCtrl
	_, err = connectRetrying(ctx, target, func() (*session, error) {
		var err error
		if ctrl, err = newRcmCtrl(ctx, a, nil, false); err != nil {
			return nil, err
		}
		return ctrl.s, nil
	}, func(*session) { ctrl.close(ctx) })
	if err != nil {
		return fmt.Errorf("the control connection: %w", err)
	}
	defer ctrl.close(ctx)
	if err := ctrl.preamble(ctx); err != nil {
		return err
	}
	if _, err := ctrl.xchgDest(ctx, rcmDest{}, "the handshake before the data connection", false); err != nil {
		return err
	}
	d := c.newRcmData(false)
	defer d.close(ctx)
	if err := d.setUp(ctx, a, ctrl.cycle); err != nil {
		return err
	}
	limits := d.limits(ai)
	if d.s, err = connectRetrying(ctx, target, func() (*session, error) { return newSession(a, nil, limits) }, (*session).close); err != nil {
		return fmt.Errorf("the data connection: %w", err)
	}
	d.reaper = newReaper(ctx, d.s.cq, c.blocking, limits.InboundEntries+limits.OutboundEntries)
	if d.test.op == opRead {
		if _, d.ord, err = readLimits(d.s.conn, limits); err != nil {
			return err
		}
	}
	if _, err := ctrl.xchgDest(ctx, rcmDest{}, "the handshake after the data connection", false); err != nil {
		return err
	}
	mine, err := d.dest()
	if err != nil {
		return err
	}
	for i := range rcmSteps(c.test) {
		rem, err := ctrl.xchgDest(ctx, mine, "the connection data", false)
		if err != nil {
			return err
		}
		if i == 0 {
			d.remote = rem
		}
	}
	if d.test.op == opRead {
		if d.remote.outReads > 0 {
			d.ord = min(d.ord, int(d.remote.outReads))
		}
		if d.ord < 1 {
			return fmt.Errorf("the connection allows no RDMA Reads")
		}
		d.depth = min(d.depth, d.ord)
	}
	if err := d.drive(ctx); err != nil {
		return err
	}
	rep := d.report()
	if d.test.op != opSend {
		if _, err := ctrl.xchgDest(ctx, mine, "the handshake after the traffic", false); err != nil {
			return err
		}
		if _, err := ctrl.xchgReport(ctx, rep); err != nil {
			return err
		}
	}
	if _, err := ctrl.xchgDest(ctx, mine, "the close handshake", true); err != nil {
		return err
	}
	d.s.conn.Disconnect(ctx)
	ctrl.s.conn.Disconnect(ctx)
	c.rcmPrint(out, a.Address().String(), target.String(), ctrl.peerVersion, rep)
	return nil
}

// rcmServer serves one perftest -R client on target.
func (c *perfConfig) rcmServer(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := openAdapter(p, addrs, target.Addr())
	if err != nil {
		return err
	}
	defer a.Close()
	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	if err := checkSize(ai, int(c.size)); err != nil {
		return err
	}
	l, err := listen(a, target.Port())
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(out, "Listening on %s (provider %s, perftest %s protocol)\n", netip.AddrPortFrom(a.Address(), l.Port()), p.Name(), rcmVersion)
	req, err := nextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	ctrl, err := newRcmCtrl(ctx, a, req.conn, true)
	if err != nil {
		return req.reject(err)
	}
	defer ctrl.close(ctx)
	if err := ctrl.s.accept(ctx, req, nil); err != nil {
		return err
	}
	if err := ctrl.preamble(ctx); err != nil {
		return err
	}
	if _, err := ctrl.xchgDest(ctx, rcmDest{}, "the handshake before the data connection", false); err != nil {
		return err
	}
	d := c.newRcmData(true)
	defer d.close(ctx)
	if err := d.setUp(ctx, a, ctrl.cycle); err != nil {
		return err
	}
	dreq, err := nextRequest(ctx, a, l)
	if err != nil {
		return fmt.Errorf("waiting for the data connection: %w", err)
	}
	l.Close()
	limits := d.limits(ai)
	if d.s, err = newSession(a, dreq.conn, limits); err != nil {
		return dreq.reject(err)
	}
	d.reaper = newReaper(ctx, d.s.cq, c.blocking, limits.InboundEntries+limits.OutboundEntries)
	if err := d.s.accept(ctx, dreq, nil); err != nil {
		return err
	}
	if d.test.op == opRead {
		if d.ird, _, err = readLimits(d.s.conn, limits); err != nil {
			return err
		}
	}
	if _, err := ctrl.xchgDest(ctx, rcmDest{}, "the handshake after the data connection", false); err != nil {
		return err
	}
	mine, err := d.dest()
	if err != nil {
		return err
	}
	var recvs []nd.Result
	recvSGL := []nd.SGE{{Buffer: d.buf[:d.size], Region: d.bufMR}}
	steps := rcmSteps(c.test)
	for i := range steps {
		if i == steps-1 && d.test.op == opSend {
			// The client starts sending once this last exchange is over.
			recvs = make([]nd.Result, d.rxd)
			if err := d.postReceives(recvs, recvSGL); err != nil {
				return err
			}
		}
		rem, err := ctrl.xchgDest(ctx, mine, "the connection data", false)
		if err != nil {
			return err
		}
		if i == 0 {
			d.remote = rem
		}
	}
	var rep rcmReport
	if d.test.op == opSend {
		if err := d.serveSends(recvs, recvSGL); err != nil {
			return err
		}
		rep = d.report()
	} else {
		// The client's RDMA needs nothing from us: wait for its end.
		if _, err := ctrl.xchgDest(ctx, mine, "the handshake after the traffic", false); err != nil {
			return err
		}
		if rep, err = ctrl.xchgReport(ctx, rcmReport{}); err != nil {
			return err
		}
	}
	if _, err := ctrl.xchgDest(ctx, mine, "the close handshake", true); err != nil {
		return err
	}
	d.s.conn.Disconnect(ctx)
	ctrl.s.conn.Disconnect(ctx)
	c.rcmPrint(out, req.peer.String(), a.Address().String(), ctrl.peerVersion, rep)
	return nil
}

// rcmPrint prints the header and the row of the report, as perftest does.
func (c *perfConfig) rcmPrint(out io.Writer, client, server, peer string, r rcmReport) {
	fmt.Fprintln(out, perfLine)
	fmt.Fprintf(out, "%*s\n", 20+len(c.test.title), c.test.title)
	fmt.Fprintf(out, " Protocol        : perftest %s -R (peer %s)  Connection : %s -> %s\n", rcmVersion, peer, client, server)
	fmt.Fprintln(out, perfLine)
	fmt.Fprintln(out, columns([]string{"#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]"}, bwWidths))
	fmt.Fprintln(out, columns([]string{
		fmt.Sprint(r.size), fmt.Sprint(r.iters), fmt.Sprintf("%.2f", r.peak), fmt.Sprintf("%.2f", r.average), fmt.Sprintf("%.6f", r.mRate),
	}, bwWidths))
	fmt.Fprintln(out, perfLine)
}
