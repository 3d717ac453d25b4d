package tcp

import (
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/internal/queue"
)

// link is one TCP connection carrying one ND connection (engine.Link).
//
// Inbound FPDUs are parsed and placed by whoever holds rxMu: a poller of the
// provider's readiness set (an application poll, or the progress goroutine;
// progress.go), or, on perLink platforms, the link's reader goroutine.
// Outbound messages are sent by whoever holds txMu: a post of a small
// request, on the poster's goroutine (Transmit), or else the writer
// goroutine. What the two sides share is guarded by mu.
type link struct {
	linkSetup

	ep       atomic.Pointer[engine.Endpoint]
	framesIn atomic.Uint64 // inbound FPDUs, for the response watchdog

	linkReader
	linkWriter
	linkShared
	linkConfirm

	wg sync.WaitGroup // the handshake goroutine, the writer, and (perLink) the reader

	// finOut is closed once the link's end (its last frames, the end of
	// its stream) is handed to the kernel (closewait.go).
	finOut chan struct{}
	// seams: a test's, installed when the link was made (seams.go); nil
	// in production.
	seams linkSeams
}

// linkSetup is what newLink and then the handshake set, before the reader
// and the writer start; read-only after that.
type linkSetup struct {
	t      *transport
	conn   *net.TCPConn
	sock   *socket
	br     *rxBuffer // over sock
	active bool
	local  netip.AddrPort
	remote netip.AddrPort

	req      iwarp.MPAFrame // the MPA request (sent or received)
	crc      bool
	godirect bool
	// peerExact: the peer is provider/tcp. Others may be Linux siw, which
	// can answer a zero-length Read with a stale payload (rx.go).
	peerExact bool
	rtr       iwarp.RTRFlags // the chosen ready-to-receive type (active side)
	peerIRD   int            // Read Requests the peer will queue from us (wire value)
	ourIRD    int            // Read Requests we queue from the peer (readRoom of the wire value)
	sinkSTag  uint32         // the STag our Read Requests name for their responses
	rxGrows   bool           // the reader's buffer grows for bulk traffic
}

// linkReader is the parser's: br and rs belong to whoever holds rxMu.
// rxStarted: the handshake is over and rs is in use. slot: the link's
// place in the readiness set (the progress's mu; -1 outside it);
// handledRound: the set's last poll that found it ready (the progress's
// mu). The handshake's timers are armed and stopped under mu.
type linkReader struct {
	rxMu         sync.Mutex
	rs           readerState
	rxStarted    atomic.Bool
	rxDone       chan struct{} // closed when the reading stopped (stopReading)
	slot         int32
	handledRound uint64
	rtrTimer     *time.Timer // passive: ends a handshake whose ready-to-receive frame never comes (mu)
	rtrNudge     *time.Timer // active: repeats a foreign peer's ready-to-receive nudge (mu; rtr_nudge.go)
	replyTimer   *time.Timer // passive without a ready-to-receive frame: watches the reply's delivery (mu; reply_delivery.go)
}

// linkWriter is the transmitter's, whoever holds txMu: snd, wst, txBatch
// (the jobs being sent) and tail (bytes of an inline send the socket did
// not take yet; tailPending says so under mu). txDeferred: a zero-length
// Read Response is held back (deferTx) and the link is in the progress's
// held list.
type linkWriter struct {
	txMu       sync.Mutex
	snd        *sender
	wst        writerState
	txBatch    []job
	tail       []byte
	txDeferred atomic.Bool // written under the progress's heldMu
	deferArmed atomic.Bool // deferTimer runs
	deferTimer *time.Timer // ends a deferral that nothing else ended
}

// linkShared is what the poster, the reader and the writer share, under
// mu: the connection's state, the writer's queue and doorbell, and the
// Terminate owed.
type linkShared struct {
	mu            sync.Mutex
	wake          chan struct{} // the writer's doorbell
	events        engine.LinkEvents
	phase         linkPhase // the link's life (lifecycle.go)
	closeStatus   nd.Status
	term          *iwarp.Terminate // to send before closing
	writerStarted bool             // the writer goroutine runs (set once)
	rtrSent       bool             // active: the ready-to-receive frame is written (or encoded for the socket; set once)
	tailPending   bool
	jobs          []job
	inboundReads  int // Read Requests accepted and not yet answered
	watchdog      *time.Timer
	// The Terminate the reader expects to owe the peer if the engine call
	// it is making ends the connection (see expect).
	pending    iwarp.Terminate
	pendingSet bool
	pendingHdr [iwarp.UntaggedHeaderSize]byte
}

// linkConfirm is the confirmed completion's bookkeeping (confirm.go), under
// mu.
type linkConfirm struct {
	orq          queue.FIFO[readEntry] // Read Requests sent, oldest first
	unconfirmed  queue.FIFO[sentEntry] // Sends and Writes sent, not yet confirmed
	confirm      bool                  // Sends and Writes wait for confirmation (confirm.go)
	confirmSlots int                   // the peer's inbound Read slots the endpoint's Reads leave free
	confirmsOut  int                   // zero-length Reads of the transport's own in flight
	sentSeq      uint64                // Sends and Writes sent so far
	coveredSeq   uint64                // sentSeq when the last Read Request went out
	// Silent Sends and Writes (FlagSilentSuccess) need confirming only to
	// free their queue entries and to catch a failure: urgentSeq is the
	// sentSeq of the last one that is not silent; silent ones alone are
	// confirmed once silentBatch of them wait, or when silentTimer fires
	// (silentDue) silentDelay after the first of them.
	urgentSeq   uint64
	silentBatch uint64
	silentArmed bool
	silentDue   bool
	silentTimer *time.Timer
}

type jobKind uint8

const (
	jobWR           jobKind = iota // a Send, Write or Read of the endpoint
	jobReadResponse                // an answer to the peer's Read Request
	jobRTR                         // the ready-to-receive frame
	jobRTRNudge                    // a zero-length Write after it, for a foreign peer (rtr_nudge.go)
)

type job struct {
	kind     jobKind
	wr       *engine.WorkRequest
	seq      uint64
	src      []byte      // read response: the bytes to send
	hold     engine.Hold // read response: src's window, until src is sent or dropped
	sinkSTag uint32
	sinkTO   uint64
}

// addJobLocked appends a job of kind, its other fields zero, to the queue
// and returns it for the caller to fill in: a job literal appended instead
// is built on the stack with narrow stores and copied with wide loads,
// which the processor cannot forward from them (a stall on every post;
// see engine.WorkRequest.reset).
func (l *link) addJobLocked(kind jobKind) *job {
	l.jobs = append(l.jobs, job{})
	j := &l.jobs[len(l.jobs)-1]
	j.kind = kind
	return j
}

// readEntry is an outstanding Read Request: the endpoint's, or the
// transport's own zero-length confirmation Read (wr nil).
type readEntry struct {
	wr     *engine.WorkRequest
	seq    uint64
	msn    uint32
	size   int
	placed int
	sinkTO uint64
	upTo   uint64 // sentSeq when it was sent: its response confirms those
}

// sentEntry is a Send or Write that went out and waits for confirmation.
type sentEntry struct {
	wr  *engine.WorkRequest
	seq uint64
	n   uint64 // its number in sentSeq
	msn uint32 // Sends: the message's MSN
}

func newLink(t *transport, c *net.TCPConn, active bool) *link {
	l := &link{}
	l.t, l.conn, l.active = t, c, active
	l.wake, l.rxDone, l.slot = make(chan struct{}, 1), make(chan struct{}), -1
	l.finOut, l.seams = make(chan struct{}), currentSeams()
	l.sock = newSocket(c)
	l.br = newRxBuffer(l.sock, rxBufferSize)
	l.rxGrows = bulkBufferSuits(c) && (l.seams == nil || !l.seams.keepFirstBuffer())
	if l.seams != nil {
		l.seams.linkMade(l)
	}
	l.snd = newSender(l)
	l.deferTimer = time.AfterFunc(time.Hour, l.deferExpired)
	l.deferTimer.Stop()
	l.silentTimer = time.AfterFunc(time.Hour, l.silentExpired)
	l.silentTimer.Stop()
	l.local = netip.AddrPortFrom(addrOf(c.LocalAddr()), portOf(c.LocalAddr()))
	l.remote = netip.AddrPortFrom(addrOf(c.RemoteAddr()), portOf(c.RemoteAddr()))
	var b [4]byte
	rand.Read(b[:])
	l.sinkSTag = binary.BigEndian.Uint32(b[:]) | 0x100 // never 0 or 1
	return l
}

func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

func portOf(a net.Addr) uint16 {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().Port()
	}
	return 0
}

// Attach implements engine.Link.
func (l *link) Attach(ep *engine.Endpoint) { l.ep.Store(ep) }

// Transmit implements engine.Link: the request is queued for the writer,
// or, when it is small and nothing is queued before it, sent at once on the
// caller's goroutine (a write that never blocks; what the socket does not
// take, the writer finishes).
func (l *link) Transmit(wr *engine.WorkRequest) (bool, nd.Status) {
	l.mu.Lock()
	if l.phase == phaseClosed {
		l.mu.Unlock()
		return true, nd.ErrCanceled
	}
	j := l.addJobLocked(jobWR)
	j.wr, j.seq = wr, wr.Seq
	l.mu.Unlock()
	if !l.sendInline() {
		l.wakeWriter()
	}
	return false, nd.Success
}

// wakeWriter wakes the writer (and has the next application poll yield the
// processor to it: see progress.poll).
func (l *link) wakeWriter() {
	select {
	case l.wake <- struct{}{}:
		if !l.t.progress.woke.Load() {
			l.t.progress.woke.Store(true)
		}
	default:
	}
}

// startWriter starts the writer goroutine once.
func (l *link) startWriter() {
	l.setConfirm()
	l.mu.Lock()
	if l.writerStarted || l.phase == phaseClosed {
		l.mu.Unlock()
		return
	}
	l.writerStarted = true
	l.wg.Add(1)
	period := l.t.p.cfg.ResponseTimeout
	last := l.framesIn.Load()
	l.watchdog = time.AfterFunc(period, func() { l.checkProgress(last, false) })
	l.mu.Unlock()
	go l.writeLoop()
}

// checkProgress ends the connection with ErrIOTimeout when requests wait
// for the peer and nothing arrived for a whole ResponseTimeout: they waited
// at the previous check too (waited), and no FPDU arrived since (last).
func (l *link) checkProgress(last uint64, waited bool) {
	now := l.framesIn.Load()
	l.mu.Lock()
	waiting := l.orq.Len() > 0 || l.unconfirmed.Len() > 0
	closing := l.phase == phaseClosed
	l.mu.Unlock()
	if closing {
		return
	}
	if waiting && waited && now == last {
		l.shutdown(nd.ErrIOTimeout, &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeLLPLost}, true)
		return
	}
	l.mu.Lock()
	if l.phase != phaseClosed {
		l.watchdog = time.AfterFunc(l.t.p.cfg.ResponseTimeout, func() { l.checkProgress(now, waiting) })
	}
	l.mu.Unlock()
}

// Close implements engine.Link.
func (l *link) Close(status nd.Status) {
	var term *iwarp.Terminate
	if status != nd.Success && status != nd.ErrCanceled && status != nd.ErrConnectionRefused &&
		status != nd.ErrConnectionAborted {
		// An error the engine found (a Receive missing or too small, a
		// window that cannot be invalidated, a local failure): the peer
		// learns it from a Terminate, naming the message when the reader
		// was handling one.
		l.mu.Lock()
		if l.pendingSet {
			t := l.pending
			t.SetOffending(append([]byte(nil), l.pendingHdr[:]...))
			term = &t
		}
		l.mu.Unlock()
		if term == nil {
			term = &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPLocalCatastrophic, Code: iwarp.TermCodeCatastrophicStream}
		}
	}
	l.shutdown(status, term, false)
}

// expect records the Terminate the link owes the peer if the engine ends the
// connection during the call the reader is about to make for the message
// whose DDP header is ulpdu (untagged); done clears it. Nothing allocates.
func (l *link) expect(layer iwarp.TermLayer, etype iwarp.TermEType, code iwarp.TermCode, ulpdu []byte) {
	l.mu.Lock()
	l.pending = iwarp.Terminate{Layer: layer, EType: etype, Code: code}
	copy(l.pendingHdr[:], ulpdu)
	l.pendingSet = true
	l.mu.Unlock()
}

func (l *link) expectDone() {
	l.mu.Lock()
	l.pendingSet = false
	l.mu.Unlock()
}

// shutdown ends the link once: the writer sends term (if any) and closes the
// socket; when reader and writer are gone, every request the link still
// owns completes ErrCanceled. notify reports the end to the engine (when the
// peer or the network ended it).
func (l *link) shutdown(status nd.Status, term *iwarp.Terminate, notify bool) {
	l.mu.Lock()
	if !l.phase.to(phaseClosed) {
		l.mu.Unlock()
		return
	}
	l.closeStatus, l.term = status, term
	l.logTerminate("Terminate sent", term, status)
	writer := l.writerStarted
	events := l.events
	if l.watchdog != nil {
		l.watchdog.Stop()
	}
	l.deferTimer.Stop()
	l.silentTimer.Stop()
	if l.rtrTimer != nil {
		l.rtrTimer.Stop()
	}
	if l.rtrNudge != nil {
		l.rtrNudge.Stop()
	}
	if l.replyTimer != nil {
		l.replyTimer.Stop()
	}
	l.mu.Unlock()
	l.takeDeferred() // out of the held list; the writer ends
	if writer {
		// The writer sends the Terminate and closes the socket; a peer
		// that does not read cannot hold it for long, nor one that never
		// closes its side (a stopped process) hold the reader, which the
		// cleanup waits for.
		deadline := time.Now().Add(time.Second)
		l.conn.SetWriteDeadline(deadline)
		l.conn.SetReadDeadline(deadline)
		l.wakeWriter()
	} else {
		l.writeTerminateNow(term) // and an RTR still owed (terminate.go)
		l.conn.Close()
		l.finished()
	}
	go func() {
		l.wg.Wait()
		l.endReading()
		l.conn.Close()
		l.cleanup()
	}()
	if notify && events != nil {
		events.Closed(status)
	}
}

// endReading waits, after shutdown, until the link's pollers met the end
// of the peer's stream, or a second passed: reading on to the end keeps
// the close from resetting the connection while the peer's last frames
// (a Terminate) are unread. It then stops the reading, cancels the
// Receive a Send was filling, and takes the link out of the readiness set.
func (l *link) endReading() {
	if !perLink && l.rxStarted.Load() {
		t := time.NewTimer(time.Second)
		select {
		case <-l.rxDone:
		case <-t.C:
		}
		t.Stop()
	}
	l.rxMu.Lock()
	if !l.rs.stopped {
		l.stopReading()
	}
	l.rxEnd(&l.rs)
	l.rxMu.Unlock()
	l.t.progress.remove(l)
}

// cleanup completes what the link still owns once nothing else runs.
func (l *link) cleanup() {
	l.mu.Lock()
	jobs := l.jobs
	l.jobs = nil
	orq := l.orq.Drain(nil)
	sent := l.unconfirmed.Drain(nil)
	// Requests that went out and waited for the peer time out with the
	// connection; those never sent are canceled.
	waited := nd.ErrCanceled
	if l.closeStatus == nd.ErrIOTimeout {
		waited = nd.ErrIOTimeout
	}
	l.mu.Unlock()
	ep := l.ep.Load()
	if ep == nil {
		return
	}
	for _, j := range jobs {
		j.hold.Release()
		if j.kind == jobWR {
			ep.CompleteOutbound(j.wr, j.seq, nd.ErrCanceled)
		}
	}
	for _, e := range orq {
		if e.wr != nil {
			ep.CompleteOutbound(e.wr, e.seq, waited)
		}
	}
	for _, e := range sent {
		ep.CompleteOutbound(e.wr, e.seq, waited)
	}
}

// writeTerminateNow writes a Terminate straight to the socket, for the
// times no writer runs.
func (l *link) writeTerminateNow(term *iwarp.Terminate) {
	b := l.rtrBeforeClose(nil)
	if term != nil {
		var err error
		if b, err = iwarp.AppendTerminateFPDU(b, 1, term, l.crc); err != nil {
			return
		}
	}
	if len(b) == 0 {
		return
	}
	l.conn.SetWriteDeadline(time.Now().Add(time.Second))
	l.conn.Write(b)
}
