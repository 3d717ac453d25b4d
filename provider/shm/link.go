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
//
// Its fields are grouped by owner: what is fixed before the link is
// shared, the poster's (the caller of Transmit), the outbound state under
// mu, the reader's under rxMu, the readiness set's under progress.mu, the
// watchdog's, and the parts with locks of their own. Where it is in its
// life is one value, life (state.go).
type link struct {
	// Fixed when the link is made (newLink), or during the setup before
	// the endpoint is attached: read by anyone, written by nobody after.
	t      *transport
	active bool
	seg    *segment
	bells  [numBells]*shmring.Doorbell
	rxData *shmring.Doorbell // rung by the peer when armed; in the readiness set
	txRoom *shmring.Doorbell // the writer sleeps on it
	writer func()            // writeLoop as a value, made once: starting it allocates nothing
	done   chan struct{}     // closed by shutdown
	// rvMin: Sends of at least rvMin bytes (0: none) go by rendezvous
	// when the peer announced capSend (out.rvOut).
	rvMin         int
	local, remote netip.AddrPort
	peer          peerInfo

	// What this side may do, set by probeCaps before it announces it
	// (so before the peer relies on it): pvmPeer, copy against the peer's
	// windows by address; rvIn, take the peer's Sends by rendezvous.
	pvmPeer atomic.Bool
	rvIn    atomic.Bool

	ep   atomic.Pointer[engine.Endpoint]
	life lifecycle // where the link is in its life; changes under mu, or rxMu for linkDetached
	post posterState
	dog  watchdog

	sock sockState
	pub  pubTable // the window table this side publishes as a target (wtable.go); its own lock
	maps segMaps  // AllocateMemory segments passed each way; their own locks

	// mu guards out, events and closeStatus, and orders the lifecycle's
	// changes other than linkDetached.
	mu          sync.Mutex
	events      engine.LinkEvents
	closeStatus nd.Status // shutdown's status
	out         outbound

	wg sync.WaitGroup // watcher, writer

	// The inbound ring is consumed by whoever holds rxMu: a poller of the
	// provider's readiness set, and cleanup once the link left it.
	rxMu sync.Mutex
	r    inbound

	set setPlace // the readiness set's, under progress.mu
}

// peerInfo is what the setup learned of the peer: its process, the probe
// this side reads to test whether it can reach the peer's memory, and the
// peer's window table in the segment. Written during the setup (the
// active side's probe by the watcher at the accept message, before it
// reports Accepted), read only after.
type peerInfo struct {
	pid       peerProc
	probe     [16]byte
	probeAddr uint64
	tab       []byte // the window table the peer publishes (wtable.go)
}

// posterState is the caller of Transmit's: the engine's pump, one
// goroutine at a time (engine.Link), and so no lock. cleanup reads it only
// after the Transmit under way ended (engine.Endpoint.WaitTransmit).
type posterState struct {
	// quiet: out.unconf was found empty since Transmit last added to it,
	// so a direct copy cannot overtake a message (wtable.go, direct).
	quiet bool
	// The scratch space of direct copies, and the peer segment the last
	// one went through (a segment stays mapped until cleanup).
	iov    [maxIovs]iovec
	remote [1]remoteIovec
	segID  uint32
	seg    []byte
	// Reads and Writes this side copied itself, and of them those through
	// a mapped peer segment: counted with plain adds, read by tests once
	// the requests they count completed (the completion queue's lock
	// orders the two).
	directOps uint64
	segOps    uint64
}

// outbound is what goes to the peer, under link.mu: the outbound ring,
// the queue of jobs for it (written by whoever holds mu: the poster, a
// reader queueing an answer, the writer goroutine), and the requests
// waiting for the peer's Ack.
type outbound struct {
	tx      *shmring.Producer
	jobs    []job
	jobHead int
	writing bool  // the writer goroutine runs (it waits for room)
	txErr   error // the ring broke, or a Terminate is in it (errTerminated)
	// endStatus and endNotify: after errTerminated, shutdown's arguments.
	endStatus nd.Status
	endNotify bool

	unconf    queue.FIFO[sent] // requests sent, waiting for the peer's Ack
	nextMsg   uint64           // number of the last outbound message
	sendDepth int              // the endpoint's outbound queue depth (Attach)

	// What the peer announced: it reads and writes our buffers by address
	// (pvmOut), it pulls our large Sends (rvOut).
	pvmOut bool
	rvOut  bool
	// The last Send written as a sendRV record, and where its record ends
	// in the ring (cleanup waits for the peer to read past it).
	rvLastMsg uint64
	rvLastEnd uint64
	rvSegs    [maxIovs]segRef // encodeRendezvous's scratch

	// Read responses queued and not yet in the ring, and the peer's read
	// limit (ORD) as negotiated (-1: not yet known).
	readResps int
	maxResps  int
	// Snapshot buffers for Read responses (protectReadResponses), kept
	// for reuse, the bytes they hold, and how many responses were copied
	// aside (tests).
	snapFree  [][]byte
	snapKept  int
	snapshots int
}

// sockState is the Unix socket (the named pipe on Windows): setup
// messages, AllocateMemory segments, the hang-up.
type sockState struct {
	conn   *setupConn
	sendMu sync.Mutex // writes
	rxMu   sync.Mutex // reads: the watcher's, pullSegments'
}

// segMaps is the AllocateMemory segments passed between the two sides.
type segMaps struct {
	peerMu sync.RWMutex
	peer   map[uint32][]byte // the peer's segments, mapped here (peerMu)
	// sharedMu guards shared: our segments passed to the peer.
	sharedMu sync.Mutex
	shared   map[uint32]bool
}

// watchdog is the timer that ends a connection whose peer stopped
// (armWatchdogLocked). timer and stalls are under link.mu; rxSeen is set
// by the reader and swapped by the timer.
type watchdog struct {
	timer  *time.Timer
	stalls int         // looks in a row that found requests waiting and nothing arrived
	rxSeen atomic.Bool // records arrived since the last look
}

// setPlace is the link's place in the provider's readiness set, under
// progress.mu: its slot (-1: not in the set), its index in the hot list
// (-1: not hot), and rxData's registration in the set.
type setPlace struct {
	slot   int32
	hotIdx int32
	reg    readyReg
}

// sent is an outbound request waiting for the peer's acknowledgment.
type sent struct {
	wr     *engine.WorkRequest
	seq    uint64
	msg    uint64
	placed int // Read through the ring: bytes of the response placed
}

func newLink(t *transport, c *setupConn, active bool, seg *segment, bells [numBells]*shmring.Doorbell) *link {
	l := &link{
		t: t, active: active, seg: seg, bells: bells,
		done: make(chan struct{}), set: setPlace{slot: -1, hotIdx: -1},
	}
	l.sock.conn = c
	l.out.maxResps = -1
	if t.p.cfg.SendThreshold > 0 {
		l.rvMin = t.p.cfg.SendThreshold
	}
	l.pub.cond = sync.NewCond(&l.pub.mu)
	l.writer = l.writeLoop
	l.out.unconf.Reserve(linkRequestsReserved)
	l.r.done = make([]sent, 0, linkRequestsReserved)
	mine := 0
	if !active {
		mine = 1
	}
	l.pub.mem, l.peer.tab = seg.table(mine), seg.table(1-mine)
	out, in := 0, 1
	txData, rxRoom := bells[bellA2PData], bells[bellP2ARoom]
	l.rxData, l.txRoom = bells[bellP2AData], bells[bellA2PRoom]
	if !active {
		out, in = 1, 0
		txData, rxRoom = bells[bellP2AData], bells[bellA2PRoom]
		l.rxData, l.txRoom = bells[bellA2PData], bells[bellP2ARoom]
	}
	// The sizes were checked when the segment was made or mapped.
	l.out.tx, _ = shmring.NewProducer(seg.ring(out), txData)
	l.r.rx, _ = shmring.NewConsumer(seg.ring(in), rxRoom)
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
	l.out.maxResps = ird // the active side's ORD is at most our IRD
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
	if !auto && l.rvMin == 0 || testProbeOff.Load() || probePeer(l.peer.pid, l.peer.probeAddr, l.peer.probe[:]) != nil {
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
	l.out.sendDepth = ep.OutboundEntries()
	if !l.life.to(linkAttached) {
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
	if l.life.ended() {
		return
	}
	l.wg.Add(1)
	go l.watch()
}

// watch reads setup messages until the socket hangs up, then lets the
// reader drain the ring and end the connection (hungUp).
func (l *link) watch() {
	defer l.wg.Done()
	buf := make([]byte, maxMessage+maxTrailer)
	for {
		if h := testHookWatch.Load(); h != nil {
			(*h)(l)
		}
		msg, fds, err := readMessage(l.sock.conn, buf, &l.sock.rxMu)
		if err == errNoDescriptors && l.isStarted() {
			// A segment message whose memfd this process had no
			// descriptor left for: the connection goes on without that
			// mapping (copies into it take process_vm_* instead).
			continue
		}
		if err != nil {
			break
		}
		if !l.setupMessage(msg, fds) {
			return
		}
	}
	l.hungUp()
}

// setupMessage handles one message of the socket, with the descriptors
// passed with it: an AllocateMemory segment, or a step of the setup
// (accept, ready, short, reject). It reports false when the link ended.
func (l *link) setupMessage(msg []byte, fds []osHandle) bool {
	if msg[0] == msgSegment {
		if !l.takeSegment(msg, fds) {
			l.shutdown(nd.ErrConnectionAborted, true)
			return false
		}
		return true
	}
	closeAll(fds)
	l.mu.Lock()
	events := l.events
	l.mu.Unlock()
	switch {
	case msg[0] == msgAccept && l.active:
		r, err := parseReply(msg)
		if err != nil {
			break
		}
		l.peerAnnounced(r.caps, r.ord)
		l.peer.probe, l.peer.probeAddr = r.probe, r.probeAddr
		events.Accepted(r.ird, r.ord, r.pd)
		return true
	case msg[0] == msgReady && !l.active && len(msg) == 2:
		l.peerAnnounced(msg[1], -1)
		events.Ready()
		return true
	case msg[0] == msgShort && l.active && len(msg) == 2:
		// The passive side lacks descriptors or memory for us.
		l.shutdown(nd.ErrInsufficientResources, true)
		return false
	case msg[0] == msgReject:
		pd, err := parseReject(msg)
		if err != nil {
			break
		}
		events.Rejected(pd)
		l.shutdown(nd.ErrConnectionRefused, false)
		return false
	}
	l.shutdown(nd.ErrConnectionAborted, true)
	return false
}

// peerAnnounced records the capabilities the peer announced (capRDMA,
// capSend) and, when ord is not negative, the passive side's negotiated
// ORD.
func (l *link) peerAnnounced(caps byte, ord int) {
	l.mu.Lock()
	l.out.pvmOut = caps&capRDMA != 0 && l.t.p.cfg.OneSided == OneSidedAuto
	l.out.rvOut = caps&capSend != 0 && l.rvMin > 0
	if ord >= 0 {
		l.out.maxResps = ord
	}
	l.mu.Unlock()
}

// hungUp handles the socket's end: after Attach the readiness set
// delivers what the peer published before it went (a Terminate record
// among it), then ends the connection; during the setup the connection
// ends at once.
func (l *link) hungUp() {
	l.mu.Lock()
	gone := l.life.to(linkPeerGone)
	inSetup := l.life.load() == linkSetup
	l.mu.Unlock()
	if gone {
		l.t.progress.kick(l)
		return
	}
	if inSetup {
		l.shutdown(nd.ErrConnectionAborted, true)
	}
}

// isStarted reports whether the link's endpoint was attached (the setup is
// over: only segment messages may come).
func (l *link) isStarted() bool { return l.life.load() != linkSetup }

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
	if !l.life.ended() && l.out.txErr == nil {
		l.runJobsLocked()
	}
	if l.life.ended() || l.out.txErr != nil || l.out.jobHead == len(l.out.jobs) {
		l.mu.Unlock()
		l.shutdownTerm(status, msg, termSt, notify)
		return
	}
	j := l.addJobLocked(jobTerm)
	j.msg, j.termSt = msg, termSt
	l.out.endStatus, l.out.endNotify = status, notify
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
	if !l.life.to(linkClosing) {
		l.mu.Unlock()
		return
	}
	l.closeStatus = status
	if termMsg != 0 && l.out.txErr == nil {
		if b, _ := l.out.tx.Reserve(recTerm, 0, 12); b != nil {
			putU64(b, termMsg)
			putU32(b[8:], uint32(termSt))
			l.out.tx.Publish()
		}
	}
	if l.dog.timer != nil {
		l.dog.timer.Stop()
	}
	events := l.events
	l.mu.Unlock()
	close(l.done)
	l.sock.conn.Close()
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
	l.life.to(linkDetached)
	l.r.rx.Abandon()
	l.rxMu.Unlock()
	// A direct copy (Transmit) started before the link was closing may still
	// read the peer's table and segments, which are unmapped below.
	if ep := l.ep.Load(); ep != nil {
		ep.WaitTransmit()
	}
	l.mu.Lock()
	l.post.segID, l.post.seg = 0, nil
	var pending []sent
	for l.out.unconf.Len() > 0 {
		pending = append(pending, l.out.unconf.Pop())
	}
	l.out.jobs, l.out.jobHead = nil, 0
	st := nd.ErrCanceled
	if l.closeStatus == nd.ErrIOTimeout {
		st = nd.ErrIOTimeout
	}
	// The peer may still pull Sends it was sent by rendezvous: they stay
	// ours until it is done with their records.
	var pulling uint64
	if len(pending) > 0 && pending[0].msg <= l.out.rvLastMsg && st != nd.ErrIOTimeout {
		pulling = l.out.rvLastEnd
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
	l.dog.timer = time.AfterFunc(l.t.p.cfg.ResponseTimeout, func() {
		if h := testHookWatchdog.Load(); h != nil {
			(*h)()
		}
		progress := l.dog.rxSeen.Swap(false)
		l.mu.Lock()
		waiting := l.out.unconf.Len() > 0
		if l.life.ended() {
			l.mu.Unlock()
			return
		}
		if !waiting || progress {
			l.dog.stalls = 0
		} else {
			l.dog.stalls++
		}
		if l.dog.stalls < 2 {
			l.armWatchdogLocked()
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		l.shutdown(nd.ErrIOTimeout, true)
	})
}
