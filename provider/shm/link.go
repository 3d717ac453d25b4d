//go:build linux || windows || darwin || freebsd

package shm

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/queue"
	"github.com/godirect/nd/internal/shmring"
)

// link is one ND connection (engine.Link): a Unix socket for setup and
// hang-up, a shared segment with a ring per direction, and one goroutine,
// the watcher, which reads the socket. The provider's readiness set
// (progress.go) consumes the inbound ring; requests that fit are written
// to the outbound ring by the caller of Transmit, and a writer goroutine
// runs only while some wait for room (tx.go). See doc.go.
type link struct {
	linkSetup
	linkWindows
	linkDirect

	ep     atomic.Pointer[engine.Endpoint]
	life   lifecycle   // the link's phase (lifecycle.go): moved under mu, loaded anywhere
	rxSeen atomic.Bool // records arrived since the watchdog last looked
	stalls int         // the watchdog's looks in a row that found requests waiting and nothing arrived (mu)

	sendMu sync.Mutex // socket writes
	sockRx sync.Mutex // socket reads: the watcher's, pullSegments'

	linkShared

	wg sync.WaitGroup // watcher, writer

	linkReader
	linkReady
}

// linkSetup is what newLink and the connection setup set before the link
// is shared; read-only after that (the rings it points to have their own
// owners: tx mu's, rx rxMu's).
type linkSetup struct {
	t      *transport
	conn   *setupConn
	active bool
	seg    *segment
	bells  [numBells]*shmring.Doorbell
	spin   time.Duration

	local, remote netip.AddrPort
	pid           peerProc // the peer's process
	peerProbe     [16]byte
	peerProbeAddr uint64

	tx     *shmring.Producer // guarded by mu
	rx     *shmring.Consumer // under rxMu
	rxData *shmring.Doorbell // rung by the peer when armed; in the readiness set
	txRoom *shmring.Doorbell // the writer sleeps on it
}

// linkWindows is the window tables, the peer's mapped segments and the
// Send rendezvous, each field with its lock.
type linkWindows struct {
	// The window tables (wtable.go): pub is the one this side publishes as
	// a target, peerTab the peer's. pvmPeer: this side's probe of the peer
	// succeeded, so it may copy against the peer's windows by address.
	pub     pubTable
	peerTab []byte
	pvmPeer atomic.Bool
	// Reads and Writes this side copied itself, and of them those through
	// a mapped peer segment: counted by the caller of Transmit (one at a
	// time) with plain adds, and read by tests once the requests they
	// count completed (the completion queue's lock orders the two).
	directOps uint64
	segOps    uint64
	segMu     sync.RWMutex
	peerSegs  map[uint32][]byte // the peer's AllocateMemory segments, mapped
	sharedMu  sync.Mutex
	shared    map[uint32]bool // our AllocateMemory segments passed to the peer
	rvSegs    [maxIovs]segRef // encodeRendezvous's scratch (under mu)
	// The Send rendezvous (rx.go): Sends of at least rvMin bytes (0: none)
	// go as a descriptor when the peer announced capSend (rvOut); rvIn:
	// this side announced it, so the peer may.
	rvMin int
	rvIn  atomic.Bool
}

// linkDirect is the scratch of the caller of Transmit (one at a time).
type linkDirect struct {
	// Scratch for the caller of Transmit (one at a time), and the peer
	// segment its last direct copy went through (a segment stays mapped
	// until cleanup, which waits for direct copies to end).
	dIov    [maxIovs]iovec
	dRemote [1]remoteIovec
	dSegID  uint32
	dSeg    []byte
	txQuiet bool // unconf was found empty since Transmit last added to it (direct)
}

// linkShared is what the poster, the writer, the watcher and the reader
// share, under mu.
type linkShared struct {
	mu          sync.Mutex
	events      engine.LinkEvents
	closeStatus nd.Status // shutdown's status (phaseClosed)
	pvmOut      bool      // the peer reads and writes our buffers by address
	rvOut       bool      // the peer pulls our large Sends (capSend)
	rvLastMsg   uint64    // the last Send written as a sendRV record
	rvLastEnd   uint64    // and where its record ends in the outbound ring
	jobs        []job
	jobHead     int
	writing     bool             // the writer goroutine runs (it waits for room)
	unconf      queue.FIFO[sent] // requests sent, waiting for the peer's Ack
	writer      func()           // writeLoop as a value, made once: starting it allocates nothing
	nextMsg     uint64           // number of the last outbound message
	txErr       error
	sendDepth   int       // the endpoint's outbound queue depth (Attach)
	endStatus   nd.Status // after errTerminated: shutdown's status and notify
	endNotify   bool
	readResps   int      // Read responses queued and not yet in the ring
	maxResps    int      // the peer's read limit (ORD) as negotiated; -1: not yet known
	snapFree    [][]byte // snapshot buffers for Read responses, for reuse
	snapKept    int      // bytes held in snapFree
	snapshots   int      // Read responses copied aside (tests)
	watchdog    *time.Timer
	done        chan struct{} // closed by shutdown
}

// linkReader is the inbound ring's consumer's, under rxMu.
type linkReader struct {
	// The inbound ring is consumed by whoever holds rxMu: a poller of the
	// provider's readiness set. rxEnded: the link left the set, nobody
	// may touch the ring (the segment may be unmapped); rxStop: the link
	// ended while consuming. armed: the ring's sleeping flag is set, the
	// peer rings rxData at its next record. All under rxMu.
	rxMu    sync.Mutex
	rxEnded bool
	rxStop  bool
	armed   bool
	r       readerState // under rxMu
}

// linkReady is the link's place in the readiness set, under the
// progress's mu.
type linkReady struct {
	// The link's place in the readiness set (the progress's mu): its slot
	// (-1: not in the set), its index in the hot list (-1: not hot), and
	// rxData's registration in the set.
	slot   int32
	hotIdx int32
	rxReg  readyReg
}

// sent is an outbound request waiting for the peer's acknowledgment.
type sent struct {
	wr     *engine.WorkRequest
	seq    uint64
	msg    uint64
	placed int // Read through the ring: bytes of the response placed
}

func newLink(t *transport, c *setupConn, active bool, seg *segment, bells [numBells]*shmring.Doorbell) *link {
	l := &link{}
	l.t, l.conn, l.active, l.seg, l.bells, l.spin = t, c, active, seg, bells, t.p.cfg.Spin
	l.done, l.maxResps, l.slot, l.hotIdx = make(chan struct{}), -1, -1, -1
	if t.p.cfg.SendThreshold > 0 {
		l.rvMin = t.p.cfg.SendThreshold
	}
	l.pub.cond = sync.NewCond(&l.pub.mu)
	l.writer = l.writeLoop
	l.unconf.Reserve(linkRequestsReserved)
	l.r.done = make([]sent, 0, linkRequestsReserved)
	mine := 0
	if !active {
		mine = 1
	}
	l.pub.mem, l.peerTab = seg.table(mine), seg.table(1-mine)
	out, in := 0, 1
	txData, rxRoom := bells[bellA2PData], bells[bellP2ARoom]
	l.rxData, l.txRoom = bells[bellP2AData], bells[bellA2PRoom]
	if !active {
		out, in = 1, 0
		txData, rxRoom = bells[bellP2AData], bells[bellA2PRoom]
		l.rxData, l.txRoom = bells[bellA2PData], bells[bellP2ARoom]
	}
	// The sizes were checked when the segment was made or mapped.
	l.tx, _ = shmring.NewProducer(seg.ring(out), txData)
	l.rx, _ = shmring.NewConsumer(seg.ring(in), rxRoom)
	return l
}

// LocalAddr implements engine.Link.
func (l *link) LocalAddr() netip.AddrPort { return l.local }

// RemoteAddr implements engine.Link.
func (l *link) RemoteAddr() netip.AddrPort { return l.remote }

// Accept implements engine.Link (passive): the reply carries whether this
// side can reach the active side's memory.
func (l *link) Accept(ird, ord int, privateData []byte) error {
	r := reply{ird: ird, ord: ord, probeAddr: probeAddr(), probe: *probe, pd: privateData, caps: l.probeCaps()}
	l.mu.Lock()
	l.maxResps = ird // the active side's ORD is at most our IRD
	l.mu.Unlock()
	if err := l.send(r.append(nil), nil); err != nil {
		return nd.ErrConnectionAborted
	}
	return nil
}

// Reject implements engine.Link.
func (l *link) Reject(privateData []byte) error {
	err := l.send(appendReject(nil, privateData), nil)
	l.shutdown(nd.ErrConnectionRefused, false)
	if err != nil {
		return nd.ErrConnectionAborted
	}
	return nil
}

// Ready implements engine.Link (active).
func (l *link) Ready() error {
	if err := l.send([]byte{msgReady, l.probeCaps()}, nil); err != nil {
		return nd.ErrConnectionAborted
	}
	return nil
}

// probeCaps probes the peer's memory, if this side would use it, and
// returns the capabilities to announce to the peer (capRDMA, capSend). It
// also records what this side may do: copy against the peer's windows by
// address (pvmPeer), accept the peer's Sends by rendezvous (rvIn). Both
// are set before the announcement goes out, so before the peer can rely
// on them.
func (l *link) probeCaps() byte {
	auto := l.t.p.cfg.OneSided == OneSidedAuto
	if !auto && l.rvMin == 0 || probeOffForTest() || probePeer(l.pid, l.peerProbeAddr, l.peerProbe[:]) != nil {
		return 0
	}
	var caps byte
	if auto {
		caps |= capRDMA
	}
	if l.rvMin > 0 {
		caps |= capSend
	}
	l.pvmPeer.Store(auto)
	l.rvIn.Store(l.rvMin > 0)
	return caps
}

// Attach implements engine.Link: the link joins the provider's readiness
// set, whose pollers consume its inbound ring from now on. If the set
// cannot take it (the process ran out of descriptors), the connection
// ends with ErrInsufficientResources.
func (l *link) Attach(ep *engine.Endpoint) {
	l.ep.Store(ep)
	l.mu.Lock()
	l.sendDepth = ep.OutboundEntries()
	if !l.life.to(phaseRunning) {
		l.mu.Unlock()
		return
	}
	l.armWatchdogLocked()
	l.mu.Unlock()
	if err := l.t.progress.add(l); err != nil {
		l.shutdown(nd.ErrInsufficientResources, true)
	}
}

// startWatcher starts the goroutine that reads the socket.
func (l *link) startWatcher() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life.closed() {
		return
	}
	l.wg.Add(1)
	go l.watch()
}

// watch reads setup messages until the socket hangs up, then lets the
// reader drain the ring and end the connection.
func (l *link) watch() {
	defer l.wg.Done()
	buf := make([]byte, maxMessage+maxTrailer)
	for {
		if s := currentSeams(); s != nil {
			s.watcherReads(l)
		}
		msg, fds, err := readMessage(l.conn, buf, &l.sockRx)
		if err == errNoDescriptors && l.life.phase() != phaseSetup {
			// A segment message whose memfd this process had no
			// descriptor left for: the connection goes on without that
			// mapping (copies into it take process_vm_* instead).
			continue
		}
		if err != nil {
			break
		}
		if msg[0] == msgSegment {
			if !l.takeSegment(msg, fds) {
				l.shutdown(nd.ErrConnectionAborted, true)
				return
			}
			continue
		}
		closeAll(fds)
		l.mu.Lock()
		events := l.events
		l.mu.Unlock()
		switch {
		case msg[0] == msgAccept && l.active:
			r, err := parseReply(msg)
			if err != nil {
				l.shutdown(nd.ErrConnectionAborted, true)
				return
			}
			l.mu.Lock()
			l.pvmOut = r.caps&capRDMA != 0 && l.t.p.cfg.OneSided == OneSidedAuto
			l.rvOut = r.caps&capSend != 0 && l.rvMin > 0
			l.maxResps = r.ord // the passive side's negotiated ORD
			l.mu.Unlock()
			l.peerProbe, l.peerProbeAddr = r.probe, r.probeAddr
			events.Accepted(r.ird, r.ord, r.pd)
		case msg[0] == msgReady && !l.active && len(msg) == 2:
			l.mu.Lock()
			l.pvmOut = msg[1]&capRDMA != 0 && l.t.p.cfg.OneSided == OneSidedAuto
			l.rvOut = msg[1]&capSend != 0 && l.rvMin > 0
			l.mu.Unlock()
			events.Ready()
		case msg[0] == msgShort && l.active && len(msg) == 2:
			// The passive side lacks descriptors or memory for us.
			l.shutdown(nd.ErrInsufficientResources, true)
			return
		case msg[0] == msgReject:
			pd, err := parseReject(msg)
			if err != nil {
				l.shutdown(nd.ErrConnectionAborted, true)
				return
			}
			events.Rejected(pd)
			l.shutdown(nd.ErrConnectionRefused, false)
			return
		default:
			l.shutdown(nd.ErrConnectionAborted, true)
			return
		}
	}
	l.mu.Lock()
	draining := l.life.to(phaseDraining)
	setup := l.life.phase() == phaseSetup
	l.mu.Unlock()
	if draining {
		// The readiness set delivers what the peer published before it
		// went (a Terminate record among it), then ends the connection.
		l.t.progress.kick(l)
		return
	}
	if setup {
		l.shutdown(nd.ErrConnectionAborted, true)
	}
}

// Close implements engine.Link.
func (l *link) Close(status nd.Status) { l.shutdown(status, false) }

// CloseInbound implements engine.InboundCloser: the engine refused the
// inbound Send that a poller of the readiness set is handing it, l.r.msg (no
// Receive, a Receive too small, a window it cannot invalidate). A
// Terminate record names it, and the peer's Send completes with
// ErrRemoteError. It runs on the goroutine that holds rxMu.
func (l *link) CloseInbound(status nd.Status) {
	l.terminate(status, l.r.msg, nd.ErrRemoteError, false)
}

func (l *link) shutdown(status nd.Status, notify bool) { l.shutdownTerm(status, 0, 0, notify) }

// terminate ends the link because the peer's message msg failed here with
// termSt: the Terminate record naming it is the peer's Ack of every
// message before msg, so it follows the answers already queued for them
// (Read responses, Acks). If they are all in the ring it goes out at once
// and the link ends (shutdownTerm); otherwise it is queued behind them and
// the writer ends the link once it is out (a peer that stops draining its
// ring is the watchdog's, as for any queued answer). The reader stops
// either way. status and notify are shutdownTerm's.
func (l *link) terminate(status nd.Status, msg uint64, termSt nd.Status, notify bool) {
	l.mu.Lock()
	closed := l.life.closed()
	if !closed && l.txErr == nil {
		l.runJobsLocked()
	}
	if closed || l.txErr != nil || l.jobHead == len(l.jobs) {
		l.mu.Unlock()
		l.shutdownTerm(status, msg, termSt, notify)
		return
	}
	j := l.addJobLocked(jobTerm)
	j.msg, j.termSt = msg, termSt
	l.endStatus, l.endNotify = status, notify
	l.kickLocked()
	l.mu.Unlock()
}

// shutdownTerm ends the link once: a Terminate record naming termMsg goes
// out first if termMsg is not 0 (when the ring has room), the socket
// closes (the peer notices the hang-up), the watcher and writer stop, and
// then cleanup takes the link out of the readiness set, completes what it
// still owns and unmaps the segment.
// notify reports the end to the engine (when the peer or a failure ended
// it rather than the engine's Close).
func (l *link) shutdownTerm(status nd.Status, termMsg uint64, termSt nd.Status, notify bool) {
	l.mu.Lock()
	if !l.life.to(phaseClosed) {
		l.mu.Unlock()
		return
	}
	l.closeStatus = status
	if termMsg != 0 && l.txErr == nil {
		if b, _ := l.tx.Reserve(recTerm, 0, 12); b != nil {
			putU64(b, termMsg)
			putU32(b[8:], uint32(termSt))
			l.tx.Publish()
		}
	}
	if l.watchdog != nil {
		l.watchdog.Stop()
	}
	events := l.events
	l.mu.Unlock()
	close(l.done)
	l.conn.Close()
	l.txRoom.Close()
	go func() {
		l.wg.Wait()
		l.cleanup()
	}()
	if notify && events != nil {
		events.Closed(status)
	}
}

// cleanup completes every request the link still owns, once nothing else
// runs, and releases the segment and descriptors.
func (l *link) cleanup() {
	l.t.progress.remove(l)
	// Whatever is left in the inbound ring will never be handled: the
	// peer's cleanup waits for that to hand back Sends by rendezvous
	// (waitUnread).
	l.rxMu.Lock()
	l.rxEnded = true
	l.rx.Abandon()
	l.rxMu.Unlock()
	// A direct copy (Transmit) started before phaseClosed may still
	// read the peer's table and segments, which are unmapped below.
	if ep := l.ep.Load(); ep != nil {
		ep.WaitTransmit()
	}
	l.mu.Lock()
	l.dSegID, l.dSeg = 0, nil
	var pending []sent
	for l.unconf.Len() > 0 {
		pending = append(pending, l.unconf.Pop())
	}
	l.jobs, l.jobHead = nil, 0
	st := nd.ErrCanceled
	if l.closeStatus == nd.ErrIOTimeout {
		st = nd.ErrIOTimeout
	}
	// The peer may still pull Sends it was sent by rendezvous: they stay
	// ours until it is done with their records.
	var pulling uint64
	if len(pending) > 0 && pending[0].msg <= l.rvLastMsg && st != nd.ErrIOTimeout {
		pulling = l.rvLastEnd
	}
	l.mu.Unlock()
	if pulling != 0 {
		l.waitUnread(pulling)
	}
	if ep := l.ep.Load(); ep != nil {
		for _, e := range pending {
			ep.CompleteOutbound(e.wr, e.seq, st)
		}
		if rr := l.r.recv; rr != nil {
			l.r.recv = nil
			ep.CompleteReceive(rr, 0, nd.ErrCanceled, false)
		}
	}
	for _, b := range l.bells {
		b.Close()
	}
	l.pub.drain(l.t.p.cfg.ResponseTimeout)
	l.unmapPeerSegments()
	l.seg.unmap()
	l.releaseSys()
}

// armWatchdogLocked checks, every ResponseTimeout, that requests waiting
// for the peer see it make progress; a peer that stopped without dying
// ends the connection with ErrIOTimeout. A connection ends only after two
// looks in a row found requests waiting and nothing arrived in between: a
// request posted just before a look has not waited ResponseTimeout yet.
func (l *link) armWatchdogLocked() {
	l.watchdog = time.AfterFunc(l.t.p.cfg.ResponseTimeout, func() {
		if s := currentSeams(); s != nil {
			s.watchdogLooks()
		}
		progress := l.rxSeen.Swap(false)
		l.mu.Lock()
		waiting := l.unconf.Len() > 0
		if l.life.closed() {
			l.mu.Unlock()
			return
		}
		if !waiting || progress {
			l.stalls = 0
		} else {
			l.stalls++
		}
		if l.stalls < 2 {
			l.armWatchdogLocked()
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		l.shutdown(nd.ErrIOTimeout, true)
	})
}
