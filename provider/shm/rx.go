//go:build linux || windows || darwin || freebsd

package shm

import (
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// readerState is what the consumer of the inbound ring keeps between
// records: a poller of the readiness set, under rxMu (and cleanup, after
// the link left the set).
type readerState struct {
	msg       uint64 // the last inbound message started
	doneUpTo  uint64 // the last inbound message handled
	recv      *engine.WorkRequest
	recvTotal int
	recvOff   int
	recvToken uint32
	recvAux   uint16
	wleft     int    // a Write through the ring: its bytes still to come (0: none in progress)
	wtoken    uint32 // the window it names, checked again for every piece,
	waddr     uint64 // and the address its next piece goes to
	unacked   int
	remote    [maxIovs]remoteIovec
	liov      [1]iovec
	liovs     [maxIovs]iovec       // a rendezvous Receive's buffers
	rvBytes   int                  // bytes pulled by rendezvous since the last Ack
	split     pullSplit            // the split pulls' state (the provider's helper)
	remoteB   [maxIovs]remoteIovec // the helper's part of the peer's buffers
	mapped    [maxIovs][]byte      // a sendRVSeg's bytes in our mappings
	done      []sent               // acknowledged requests, to complete outside mu
	prompt    bool                 // a message handled since the last Ack wants it at once
	idle      int                  // passes that found the ring empty since the last record
}

// lockRx takes rxMu for a poller of l's ring. It reports false, and leaves
// the ring alone, when another poller holds it or a test's seams keep
// pollers off l (holdReader).
func (l *link) lockRx() bool {
	if s := installedSeams.Load(); s != nil && (*s).holdReader(l) {
		return false
	}
	return l.rxMu.TryLock()
}

// pollRx consumes l's inbound ring in direct mode: an application poll
// (app), or the progress goroutine, found few links in the set. It never
// arms the link, and disarms it if the progress goroutine had. It reports
// whether it handled records.
func (l *link) pollRx(app bool) bool {
	if !l.lockRx() {
		return false
	}
	moved := false
	// The ring is mapped while rxEnded is false under rxMu. An idle link
	// (nothing to read, no Ack held back, not armed) is left as it is.
	if l.armed || l.r.unacked > 0 || l.life.phase() == phaseDraining || l.rxEnded || l.rx.Unconsumed() {
		moved, _ = l.serveHotLocked(app, -1)
	}
	l.rxMu.Unlock()
	return moved
}

// serveHot consumes l's inbound ring for a pass of the readiness set. It
// reports whether it handled records, and whether l stays hot: false when
// the link ended, or when it was found empty for armAfter passes in a row
// (armAfter < 0: never) and is now armed. A link another poller is
// consuming stays hot.
func (l *link) serveHot(app bool, armAfter int) (moved, hot bool) {
	if !l.lockRx() {
		return false, true
	}
	moved, hot = l.serveHotLocked(app, armAfter)
	l.rxMu.Unlock()
	return moved, hot
}

// serveHotLocked is serveHot with rxMu held.
func (l *link) serveHotLocked(app bool, armAfter int) (moved, hot bool) {
	if l.rxEnded || l.rxStop {
		return false, false
	}
	// An application's poll leaves an armed link armed while another
	// goroutine waits in Notify: the progress goroutine, asleep on the
	// doorbells for that waiter, keeps the link, and taking it back
	// (disarmed) would wake it, a thread wake-up for every poll while a
	// Read waits in Notify and a Write polls (ndnet). The peer then rings
	// for records the poll may already have taken: the progress goroutine
	// finds the ring empty, as after any early ring.
	if l.armed && !(app && l.t.progress.handoff.Watched()) {
		l.rx.Disarm()
		l.armed = false
		l.t.progress.disarmed()
	}
	// The peer published everything it will before the hang-up was seen:
	// once the ring is empty after that, the connection ends.
	gone := l.life.phase() == phaseDraining
	n, ok := l.consumeLocked(l.ep.Load(), app)
	if !ok {
		return n > 0, false
	}
	if n > 0 {
		l.r.idle = 0
		return true, true
	}
	if gone {
		l.rxStop = true
		l.shutdown(nd.ErrCanceled, true)
		return false, false
	}
	l.r.idle++
	if l.r.unacked > 0 && l.r.idle >= ackIdlePolls {
		l.flushAck() // held back (consumeLocked)
	}
	if armAfter >= 0 && l.r.idle >= armAfter {
		return false, !l.armLocked()
	}
	return false, true
}

// armRx arms l before the progress goroutine blocks: it reports false when
// records arrived meanwhile or another poller holds the ring (the
// goroutine must not block), true when the link is armed or ended.
func (l *link) armRx() bool {
	if !l.lockRx() {
		return false
	}
	defer l.rxMu.Unlock()
	if l.rxEnded || l.rxStop {
		return true
	}
	if l.life.phase() == phaseDraining {
		return false
	}
	return l.armLocked()
}

// armLocked asks the peer to ring rxData at its next record, after the
// Acks held back went out (nobody looks at the ring until then). It
// reports false, disarmed, when a record is there already. rxMu held.
func (l *link) armLocked() bool {
	l.flushAck()
	if l.armed {
		return true
	}
	if l.rx.Arm() {
		l.rx.Disarm()
		return false
	}
	l.armed = true
	return true
}

// consumeLocked handles the records the inbound ring holds and acknowledges
// them once the ring is empty (or every ackEvery messages). It returns the
// records handled, and false when the link ended. Called with rxMu held.
//
// For an application's poll (app) the Ack of quiet Sends only (silent
// requests, whose sender does not wait for it) is held back: the
// application answers what came first, and the Ack goes once the ring
// stayed empty for ackIdlePolls passes, with a later Ack, when the link is
// armed, or from the progress goroutine when the application stops
// polling.
func (l *link) consumeLocked(ep *engine.Endpoint, app bool) (int, bool) {
	if l.rxEnded || l.rxStop {
		return 0, false
	}
	n, ok := l.consumeRecordsLocked(ep, app)
	if n > 0 && !l.rxSeen.Load() {
		l.rxSeen.Store(true)
	}
	return n, ok
}

// consumeRecordsLocked is consumeLocked's loop: it returns the records it
// looked at (handled, or refused last) and false when the link ended. It
// stops after recordsPerPass records: one busy (or hostile) peer must not
// keep the readiness set's poller from the other links; the link stays
// hot and the next pass goes on.
func (l *link) consumeRecordsLocked(ep *engine.Endpoint, app bool) (int, bool) {
	n := 0
	for n < recordsPerPass {
		rec, ok, err := l.rx.Next()
		if err != nil {
			l.rxStop = true
			l.shutdown(nd.ErrConnectionAborted, true)
			return n, false
		}
		if !ok {
			l.rx.Publish() // a pad record skipped
			if !app || l.r.prompt {
				l.flushAck()
			}
			return n, true
		}
		if l.life.closed() {
			l.rxStop = true
			return n, false
		}
		n++
		if !l.handle(ep, rec) {
			l.rxStop = true
			return n, false
		}
		l.rx.Publish()
		if l.r.unacked >= ackEvery || l.r.rvBytes >= ackBytes {
			l.flushAck()
		}
	}
	return n, true
}

// flushAck acknowledges the messages handled since the last Ack. Called
// with rxMu held.
func (l *link) flushAck() {
	if l.r.unacked == 0 {
		return
	}
	l.r.unacked, l.r.rvBytes, l.r.prompt = 0, 0, false
	l.mu.Lock()
	l.queueAckLocked(l.r.doneUpTo)
	l.mu.Unlock()
}

// handled records that inbound message msg was handled; quiet: a Send
// whose sender does not wait for the Ack (auxQuiet).
func (l *link) handled(msg uint64, quiet bool) {
	l.r.doneUpTo = msg
	l.r.unacked++
	if !quiet {
		l.r.prompt = true
	}
}

// protocolError ends the connection on a malformed record.
func (l *link) protocolError() bool {
	l.shutdown(nd.ErrConnectionAborted, true)
	return false
}

// refuse ends the connection because the peer's message msg failed here
// (an access the target's engine refused): the peer's request completes
// with st.
func (l *link) refuse(msg uint64, st nd.Status) bool {
	l.terminate(nd.ErrCanceled, msg, st, true)
	return false
}

// protectReadResponses keeps the Read responses queued so far (the
// writer has not yet copied them into the ring) answering with the bytes
// as of their turn, before a Write places data into mem: the reader never
// waits for ring room, which could deadlock two sides that both stream
// Reads and Writes at each other with both rings full (each reader would
// wait for its own writer, each writer for the peer's reader). It first
// writes what fits into the ring now; the bytes of every response still
// queued whose remaining source overlaps mem are then copied aside
// (snapshot) and the response is sent from the copy. The snapshots are
// bounded by the responses queued, at most the peer's negotiated ORD
// (enforced in queueReadResponse), and their buffers are reused.
func (l *link) protectReadResponses(mem []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readResps == 0 || l.life.closed() || len(mem) == 0 {
		return
	}
	l.runJobsLocked()
	if l.txErr != nil {
		l.kickLocked() // the writer ends the link
		return
	}
	if l.readResps == 0 {
		return
	}
	for i := l.jobHead; i < len(l.jobs); i++ {
		j := &l.jobs[i]
		if j.kind != jobReadResp || j.snap || !overlaps(j.src[j.off:], mem) {
			continue
		}
		b := l.snapBufLocked(len(j.src) - j.off)
		copy(b, j.src[j.off:])
		j.addr += uint64(j.off)
		j.src, j.off, j.snap = b, 0, true
		l.snapshots++
	}
}

// overlaps reports whether a and b share a byte.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := addrOf(a), addrOf(b)
	return pa < pb+uint64(len(b)) && pb < pa+uint64(len(a))
}

// snapBufLocked returns an n-byte snapshot buffer, reusing a free one.
func (l *link) snapBufLocked(n int) []byte {
	for i, b := range l.snapFree {
		if cap(b) >= n {
			last := len(l.snapFree) - 1
			l.snapFree[i], l.snapFree[last] = l.snapFree[last], nil
			l.snapFree = l.snapFree[:last]
			l.snapKept -= cap(b)
			return b[:n]
		}
	}
	return make([]byte, n)
}

// putSnapLocked takes back a snapshot buffer the writer is done with.
func (l *link) putSnapLocked(b []byte) {
	if l.snapKept+cap(b) > maxSnapKept*l.t.p.cfg.RingSize {
		return
	}
	l.snapFree = append(l.snapFree, b[:0])
	l.snapKept += cap(b)
}

// handle processes one record; false ends the reader. The records that
// carry a message have a handler each (rxSend, pullSend, rxSendMore, rxRDMA,
// rxWriteData); handle keeps the dispatch. Called with rxMu held.
func (l *link) handle(ep *engine.Endpoint, rec shmring.Record) bool {
	p := rec.Payload
	switch rec.Type {
	case recSend:
		return l.rxSend(ep, rec)
	case recSendRV:
		return l.pullSend(ep, rec, iovSize)
	case recSendRVSeg:
		return l.pullSend(ep, rec, segIovSize)
	case recSendMore:
		return l.rxSendMore(ep, rec)
	case recWrite, recRead:
		return l.rxRDMA(ep, rec)
	case recWriteData:
		return l.rxWriteData(ep, p)
	case recReadData:
		if len(p) < moreHeader {
			return l.protocolError()
		}
		return l.readData(getU64(p), p[moreHeader:])
	case recAck:
		if len(p) != 8 {
			return l.protocolError()
		}
		return l.ack(ep, getU64(p))
	case recTerm:
		if len(p) != 12 {
			return l.protocolError()
		}
		return l.term(ep, getU64(p), nd.Status(getU32(p[8:])))
	}
	return l.protocolError()
}

// rxSend handles a send record: the first (or only) fragment of the peer's
// next message, a Send through the ring. A small Send that came whole goes
// to the engine in one call; any other becomes the Send in progress
// (beginSend). Called with rxMu held.
func (l *link) rxSend(ep *engine.Endpoint, rec shmring.Record) bool {
	p := rec.Payload
	if len(p) < sendHeader || l.r.recv != nil || l.r.wleft > 0 {
		return l.protocolError()
	}
	msg, total := getU64(p), int(getU32(p[8:]))
	if msg != l.r.msg+1 {
		return l.protocolError()
	}
	l.r.msg = msg
	data := p[sendHeader:]
	if len(data) > total || (rec.Aux&auxLast != 0) != (len(data) == total) {
		return l.protocolError()
	}
	if rec.Aux&(auxLast|auxInvalidate|auxAckFirst) == auxLast && len(data) <= receiveNowMax {
		// A small Send, whole: one engine call.
		if ep.ReceiveNow(data, rec.Aux&auxSolicited != 0) != nd.Success {
			return false
		}
		l.handled(msg, rec.Aux&auxQuiet != 0)
		return true
	}
	if l.beginSend(ep, msg, total, getU32(p[12:]), rec.Aux) == nil {
		return false
	}
	return l.placeSend(ep, data, rec.Aux&auxLast != 0)
}

// rxSendMore handles a sendMore record: the next fragment of the Send in
// progress. Called with rxMu held.
func (l *link) rxSendMore(ep *engine.Endpoint, rec shmring.Record) bool {
	p := rec.Payload
	if len(p) < moreHeader || l.r.recv == nil || getU64(p) != l.r.msg {
		return l.protocolError()
	}
	data := p[moreHeader:]
	if len(data) > l.r.recvTotal-l.r.recvOff || (rec.Aux&auxLast != 0) != (len(data) == l.r.recvTotal-l.r.recvOff) {
		return l.protocolError()
	}
	return l.placeSend(ep, data, rec.Aux&auxLast != 0)
}

// rxRDMA handles a write or read record: the peer's next message, an RDMA
// Write or Read of one of this side's windows, which the engine checks
// first. The bytes then move by address (rxByAddress) or through the ring:
// a Read's response queued for the writer (queueReadResponse), a Write's
// data in the writeData records that follow (rxWriteData). Called with
// rxMu held.
func (l *link) rxRDMA(ep *engine.Endpoint, rec shmring.Record) bool {
	p := rec.Payload
	if len(p) < rdmaHeader || l.r.recv != nil || l.r.wleft > 0 {
		return l.protocolError()
	}
	msg, addr, token, length := getU64(p), getU64(p[8:]), getU32(p[16:]), int(getU32(p[20:]))
	if msg != l.r.msg+1 {
		return l.protocolError()
	}
	l.r.msg = msg
	write := rec.Type == recWrite
	mem, f := ep.AccessFault(token, addr, length, write)
	if f != engine.FaultNone {
		return l.refuse(msg, nd.ErrAccessViolation)
	}
	if write {
		l.protectReadResponses(mem)
	}
	if rec.Aux&auxByAddress != 0 {
		return l.rxByAddress(ep, p[rdmaHeader:], token, addr, length, write)
	}
	if len(p) != rdmaHeader {
		return l.protocolError()
	}
	if !write {
		return l.queueReadResponse(msg, mem, token, addr, length)
	}
	if length == 0 {
		l.handled(msg, false)
		return true
	}
	l.r.wleft, l.r.wtoken, l.r.waddr = length, token, addr
	return true
}

// rxByAddress carries out the Write (write) or Read l.r.msg of length bytes
// of window token at addr, whose initiator listed its buffers by address
// (list, the record's tail): the bytes move with process_vm_readv or
// process_vm_writev of the peer. Called with rxMu held.
func (l *link) rxByAddress(ep *engine.Endpoint, list []byte, token uint32, addr uint64, length int, write bool) bool {
	msg := l.r.msg
	iovs, ok := l.parseIovs(list, length, iovSize)
	if !ok {
		return l.protocolError()
	}
	if length > 0 {
		// The copy runs with the window held: an Invalidate reported
		// after rxRDMA's check lets no byte move.
		var err error
		if ep.AccessWith(token, addr, length, write, func(mem []byte) {
			err = pvmCopy(l.pid, mem, iovs, !write, &l.r.liov)
		}) != engine.FaultNone {
			return l.refuse(msg, nd.ErrAccessViolation)
		}
		if err != nil {
			return l.refuse(msg, nd.ErrRemoteError)
		}
	}
	l.handled(msg, false)
	return true
}

// queueReadResponse queues the response to the peer's Read msg of mem,
// length bytes of window token at addr. Called with rxMu held; it takes
// mu.
func (l *link) queueReadResponse(msg uint64, mem []byte, token uint32, addr uint64, length int) bool {
	// The response goes through the ring, ahead of the Ack; the
	// writer copies it (the reader never waits for ring room). The
	// peer's engine keeps at most its ORD Reads outstanding, and
	// each stays so until the Ack that follows its response.
	l.mu.Lock()
	if length > 0 && !l.life.closed() {
		if l.maxResps >= 0 && l.readResps >= l.maxResps {
			l.mu.Unlock()
			return l.protocolError()
		}
		j := l.addJobLocked(jobReadResp)
		j.msg, j.src, j.token, j.addr = msg, mem, token, addr
		l.readResps++
		l.kickLocked()
	}
	l.mu.Unlock()
	l.handled(msg, false)
	return true
}

// rxWriteData handles a writeData record (payload p): the next piece of the
// Write in progress. Called with rxMu held.
func (l *link) rxWriteData(ep *engine.Endpoint, p []byte) bool {
	if len(p) < moreHeader || l.r.wleft == 0 || getU64(p) != l.r.msg {
		return l.protocolError()
	}
	data := p[moreHeader:]
	if len(data) > l.r.wleft {
		return l.protocolError()
	}
	// Each piece is checked against the window as it is copied: an
	// Invalidate that completed after the Write's first record ends
	// it here, and no later byte lands.
	if ep.WriteAt(l.r.wtoken, l.r.waddr, data) != engine.FaultNone {
		l.r.wleft = 0
		return l.refuse(l.r.msg, nd.ErrAccessViolation)
	}
	l.r.waddr += uint64(len(data))
	if l.r.wleft -= len(data); l.r.wleft == 0 {
		l.handled(l.r.msg, false)
	}
	return true
}

// parseIovs reads the initiator's buffer list, entries of entry bytes
// (iovSize, or segIovSize in a sendRVSeg) that start with (address u64,
// length u64); their lengths must add up to length.
func (l *link) parseIovs(b []byte, length, entry int) ([]remoteIovec, bool) {
	if len(b)%entry != 0 || len(b)/entry > maxIovs {
		return nil, false
	}
	n := len(b) / entry
	total := uint64(0)
	for i := range n {
		a, ln := getU64(b[i*entry:]), getU64(b[i*entry+8:])
		if ln > 1<<31 || a+ln < a {
			return nil, false
		}
		total += ln
		l.r.remote[i] = remoteIovec{Base: uintptr(a), Len: int(ln)}
	}
	if total != uint64(length) {
		return nil, false
	}
	return l.r.remote[:n], true
}

// parseRendezvous reads a rendezvous record's buffer list, of entry-byte
// entries (iovSize or segIovSize), whose lengths must add up to total. With
// segments, mapped is the list's bytes in this side's mappings of the
// sender's segments when every entry lies in one, nil otherwise.
func (l *link) parseRendezvous(b []byte, total, entry int) (remote []remoteIovec, mapped [][]byte, ok bool) {
	if remote, ok = l.parseIovs(b, total, entry); !ok || entry == iovSize {
		return remote, nil, ok
	}
	for i := range remote {
		e := b[i*segIovSize:]
		id, off, ln := getU32(e[16:]), getU64(e[24:]), uint64(remote[i].Len)
		m := l.peerSegment(id)
		if m == nil && id != 0 && l.pullSegments() {
			m = l.peerSegment(id)
		}
		if id == 0 || m == nil || off > uint64(len(m)) || ln > uint64(len(m))-off {
			clear(l.r.mapped[:i])
			return remote, nil, true
		}
		l.r.mapped[i] = m[off : off+ln : off+ln]
	}
	return remote, l.r.mapped[:len(remote)], true
}

// pullSend handles a Send by rendezvous: the record names the sender's
// buffers, which the reader copies straight into the next Receive with
// process_vm_readv of the peer. The Receive is taken and completed exactly
// as for a Send through the ring (the engine's status rules: no Receive,
// one too small, a window it cannot invalidate). Addresses from the record
// are only ever the remote side of process_vm_readv of the peer, and the
// local side is the Receive's buffers up to the announced length, which
// TakeReceive checked against the Receive: a forged record can make this
// side read the wrong bytes of the peer, never touch anything else here.
// A copy that fails (a forged address, memory the sender unmapped, the
// peer gone) ends the connection: the peer's Send completes with
// ND_REMOTE_ERROR (a term record), the Receive with ND_CANCELED, as for a
// peer that breaks off in the middle of a Send through the ring.
//
// A sendRVSeg record (entry is segIovSize) also names, per buffer, the
// sender's AllocateMemory segment holding it: when this side mapped every
// segment named and each range lies inside its mapping, the bytes are
// copied from the mappings instead, without a system call. A forged
// segment or offset either fails those checks (the addresses are used) or
// names other bytes of a segment the sender itself passed.
func (l *link) pullSend(ep *engine.Endpoint, rec shmring.Record, entry int) bool {
	p := rec.Payload
	if !l.rvIn.Load() || len(p) < sendHeader || l.r.recv != nil || l.r.wleft > 0 {
		return l.protocolError()
	}
	msg, total := getU64(p), int(getU32(p[8:]))
	if msg != l.r.msg+1 || total == 0 {
		return l.protocolError()
	}
	remote, mapped, ok := l.parseRendezvous(p[sendHeader:], total, entry)
	if !ok {
		return l.protocolError()
	}
	l.r.msg = msg
	rr := l.beginSend(ep, msg, total, getU32(p[12:]), rec.Aux)
	if rr == nil {
		return false
	}
	if mapped != nil {
		off := 0
		for i, src := range mapped {
			scatterAt(rr.SGL, off, src)
			off += len(src)
			mapped[i] = nil
		}
		l.r.recvOff = total
		l.r.rvBytes += total
		l.t.rvPulled.Add(1)
		l.t.rvMapped.Add(1)
		return l.completeSend(ep)
	}
	if err := l.pull(rr.SGL, total, remote); err != nil {
		// cleanup completes the Receive (l.r.recv) with ND_CANCELED.
		return l.refuse(msg, nd.ErrRemoteError)
	}
	l.r.recvOff = total
	l.r.rvBytes += total
	l.t.rvPulled.Add(1)
	return l.completeSend(ep)
}

// beginSend takes the Receive that inbound Send msg of total bytes fills
// and records it as the one in progress. It returns nil when the engine
// ended the connection (CloseInbound told the peer).
func (l *link) beginSend(ep *engine.Endpoint, msg uint64, total int, token uint32, aux uint16) *engine.WorkRequest {
	rr, _ := ep.TakeReceive(total)
	if rr == nil {
		return nil
	}
	l.r.recv, l.r.recvTotal, l.r.recvOff = rr, total, 0
	l.r.recvToken, l.r.recvAux = token, aux
	return rr
}

// placeSend copies a Send fragment into the Receive and completes it after
// the last one.
func (l *link) placeSend(ep *engine.Endpoint, data []byte, last bool) bool {
	scatterAt(l.r.recv.SGL, l.r.recvOff, data)
	l.r.recvOff += len(data)
	if !last {
		return true
	}
	return l.completeSend(ep)
}

// completeSend completes the Receive of the inbound Send whose bytes are
// all placed, after the invalidation it asks for, and after its Ack when
// the sender asked for that first (auxAckFirst).
func (l *link) completeSend(ep *engine.Endpoint) bool {
	rr, msg, aux := l.r.recv, l.r.msg, l.r.recvAux
	l.r.recv = nil
	st := nd.Success
	if aux&auxInvalidate != 0 {
		st = ep.InvalidateWindow(l.r.recvToken)
	}
	ackFirst := st == nd.Success && aux&auxAckFirst != 0
	if ackFirst {
		l.handled(msg, false)
		l.flushAck()
	}
	ep.CompleteReceive(rr, l.r.recvTotal, st, aux&auxSolicited != 0)
	if st != nd.Success {
		return false
	}
	if !ackFirst {
		l.handled(msg, aux&auxQuiet != 0)
	}
	return true
}

// readData places a Read response that came through the ring.
func (l *link) readData(msg uint64, data []byte) bool {
	l.mu.Lock()
	var e *sent
	for i := range l.unconf.Len() {
		if x := l.unconf.At(i); x.msg == msg {
			e = x
			break
		}
	}
	if e == nil || e.wr.Op != engine.OpRead || len(data) > e.wr.Length-e.placed {
		l.mu.Unlock()
		return l.protocolError()
	}
	wr, off := e.wr, e.placed
	e.placed += len(data)
	l.mu.Unlock()
	// The request stays ours until the Ack, which only this goroutine
	// handles: its buffers can be written outside the lock.
	scatterAt(wr.SGL, off, data)
	return true
}

// ack completes every outbound request up to upTo.
func (l *link) ack(ep *engine.Endpoint, upTo uint64) bool {
	l.mu.Lock()
	if upTo > l.nextMsg {
		l.mu.Unlock()
		return l.protocolError()
	}
	done := l.r.done[:0]
	for l.unconf.Len() > 0 && l.unconf.At(0).msg <= upTo {
		e := l.unconf.At(0)
		if e.wr.Op == engine.OpRead && !l.pvmOut && e.placed != e.wr.Length {
			l.mu.Unlock()
			return l.protocolError()
		}
		done = append(done, l.unconf.Pop())
	}
	l.mu.Unlock()
	for _, e := range done {
		ep.CompleteOutbound(e.wr, e.seq, nd.Success)
	}
	clear(done)
	l.r.done = done[:0]
	return true
}

// term handles the peer's Terminate: the messages before msg were handled,
// msg failed with st, and the connection ends.
func (l *link) term(ep *engine.Endpoint, msg uint64, st nd.Status) bool {
	switch st {
	case nd.ErrRemoteError, nd.ErrAccessViolation, nd.ErrBufferOverflow, nd.ErrInvalidationError:
	default:
		st = nd.ErrRemoteError
	}
	if msg == 0 || !l.ack(ep, msg-1) {
		return l.protocolError()
	}
	l.mu.Lock()
	var e sent
	found := l.unconf.Len() > 0 && l.unconf.At(0).msg == msg
	if found {
		e = l.unconf.Pop()
	}
	l.mu.Unlock()
	if !found {
		return l.protocolError()
	}
	// The error completion ends the connection: the engine closes the link,
	// and cleanup cancels the rest.
	ep.CompleteOutbound(e.wr, e.seq, st)
	l.shutdown(nd.ErrCanceled, true)
	return false
}

// A large pull is split between the poller that handles the Send and the
// provider's pull helper goroutine, each copying its part with
// process_vm_readv at once, on two cores: one core's process_vm_readv (it
// pins and copies page by page) runs well below what the memory allows.
// The helper may be slow to wake (tens of µs on a busy two-core VM), or
// busy with another link's pull, so the poller never waits for a helper
// that has not started: once done with its own part, it takes the
// helper's part back and copies it too if the helper has not claimed it
// yet. And the helper's share adapts per link: after each split pull, a
// helper that was done before the poller gets a larger share next time,
// one that was still copying or had not started a smaller one, within
// bounds (shareMin to shareMax, tuning.go).

// pullHelper is the goroutine that copies part of a large pull while the
// poller copies the rest. It serves every link of the provider, one job at
// a time, until the readiness set empties (stop).
type pullHelper struct {
	req  chan pullJob
	stop chan struct{}
	liov [maxIovs]iovec
}

// pullSplit is a link's side of its split pulls (the poller's, under
// rxMu, except claim).
type pullSplit struct {
	done chan error // the helper's answer to every job it claimed
	// The current job's number times 4, plus 0 while it is open, 1 once
	// the helper claimed it, 2 once the poller took it back. A job the
	// poller took back may still come out of the helper's queue later: its
	// number no longer matches, and the helper drops it.
	claim atomic.Uint64
	seq   uint64 // the last job's number
	share int    // the helper's share of the next split pull, in 1/256
}

// pullJob is the helper's part of a pull: n bytes of the peer's buffers
// remote into sgl from byte off on, by process pid.
type pullJob struct {
	split  *pullSplit
	seq    uint64
	pid    peerProc
	sgl    []nd.SGE
	off, n int
	remote []remoteIovec
}

// pullHelper returns the provider's pull helper, starting it if needed.
func (p *progress) pullHelper() *pullHelper {
	p.helperMu.Lock()
	defer p.helperMu.Unlock()
	if p.helper == nil {
		p.helper = &pullHelper{req: make(chan pullJob, 1), stop: make(chan struct{})}
		go p.helper.run()
	}
	return p.helper
}

// stopHelper ends the pull helper, if it runs. A job it has not claimed
// yet is taken back by its poller.
func (p *progress) stopHelper() {
	p.helperMu.Lock()
	defer p.helperMu.Unlock()
	if p.helper != nil {
		close(p.helper.stop)
		p.helper = nil
	}
}

// run copies the jobs handed to the helper that their poller has not taken
// back, until stop.
func (h *pullHelper) run() {
	for {
		select {
		case j := <-h.req:
			if j.split.claim.CompareAndSwap(j.seq*4, j.seq*4+1) {
				j.split.done <- pvmPull(j.pid, j.sgl, j.off, j.n, j.remote, &h.liov)
			}
		case <-h.stop:
			return
		}
	}
}

// pull reads total bytes of the peer's buffers remote into the Receive's
// buffers sgl (pvmPull): alone, or from splitMin on with the helper. It
// returns only once neither copies into sgl any more.
func (l *link) pull(sgl []nd.SGE, total int, remote []remoteIovec) error {
	if total < splitMin {
		return pvmPull(l.pid, sgl, 0, total, remote, &l.r.liovs)
	}
	sp := &l.r.split
	if sp.done == nil {
		sp.done, sp.share = make(chan error, 1), shareStart
	}
	h := l.t.progress.pullHelper()
	theirs := total / 256 * sp.share &^ 4095
	mine := total - theirs
	first, second := splitRemote(remote, mine, &l.r.remoteB)
	sp.seq++
	sp.claim.Store(sp.seq * 4)
	select {
	case h.req <- pullJob{split: sp, seq: sp.seq, pid: l.pid, sgl: sgl, off: mine, n: theirs, remote: second}:
	default: // the helper has another job waiting: it will not get to this one
	}
	err := pvmPull(l.pid, sgl, 0, mine, first, &l.r.liovs)
	var herr error
	if sp.claim.CompareAndSwap(sp.seq*4, sp.seq*4+2) {
		// Not started: copy it here (the helper will skip it).
		herr = pvmPull(l.pid, sgl, mine, theirs, second, &l.r.liovs)
		sp.share = max(sp.share-shareStep, shareMin)
	} else {
		select {
		case herr = <-sp.done:
			sp.share = min(sp.share+shareStep, shareMax)
		default:
			sp.share = max(sp.share-shareStep, shareMin)
			herr = <-sp.done // it claimed the job: it answers
		}
	}
	if err == nil {
		err = herr
	}
	return err
}

// splitRemote cuts the buffer list remote after n bytes (less than its
// total): the first part is remote itself, its last entry shortened if
// the cut falls inside it; the rest goes to rest.
func splitRemote(remote []remoteIovec, n int, rest *[maxIovs]remoteIovec) (first, second []remoteIovec) {
	for i := range remote {
		if n >= remote[i].Len {
			n -= remote[i].Len
			continue
		}
		k, j := 0, i
		if n > 0 {
			rest[0] = remoteIovec{Base: remote[i].Base + uintptr(n), Len: remote[i].Len - n}
			remote[i].Len = n
			k, j = 1, i+1
		}
		k += copy(rest[k:], remote[j:])
		return remote[:j], rest[:k]
	}
	return remote, rest[:0]
}
