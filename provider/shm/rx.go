//go:build linux

package shm

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// readerState is what the consumer of the inbound ring keeps between
// records: the reader or Poll, under rxMu (and cleanup, after the reader
// ended).
type readerState struct {
	msg       uint64 // the last inbound message started
	doneUpTo  uint64 // the last inbound message handled
	recv      *engine.WorkRequest
	recvTotal int
	recvOff   int
	recvToken uint32
	recvAux   uint16
	wmem      []byte // a Write through the ring: its target bytes
	woff      int
	unacked   int
	remote    [maxIovs]unix.RemoteIovec
	liov      [1]unix.Iovec
	liovs     [maxIovs]unix.Iovec       // a rendezvous Receive's buffers
	rvBytes   int                       // bytes pulled by rendezvous since the last Ack
	helper    *pullHelper               // started by the first split pull
	share     int                       // the helper's share of a split pull, in 1/256
	remoteB   [maxIovs]unix.RemoteIovec // the helper's part of the peer's buffers
	mapped    [maxIovs][]byte           // a sendRVSeg's bytes in our mappings
	done      []sent                    // acknowledged requests, to complete outside mu
	prompt    bool                      // a message handled since the last Ack wants it at once
	idlePolls int                       // Polls that found the ring empty since the last record
}

// testHookReader, if set, is called by every reader before it looks at its
// ring (tests stop a target's reader with it).
var testHookReader atomic.Pointer[func(*link)]

// ackEvery bounds the inbound messages handled before an Ack goes out even
// while records keep arriving.
const ackEvery = 16

// receiveNowMax bounds the Sends that the engine places under its lock
// (Endpoint.ReceiveNow).
const receiveNowMax = 4 << 10

// ackIdlePolls is how many Polls in a row must find the inbound ring empty
// before the Ack held for quiet Sends goes out (consumeLocked).
const ackIdlePolls = 32

// ackBytes bounds the bytes pulled by rendezvous before an Ack goes out
// even while records keep arriving, so that the Sends of huge messages do
// not wait for ackEvery of them. It is large: every Ack may wake the peer,
// and on two busy cores such wake-ups cost more than the copies between.
const ackBytes = 16 << 20

// readLoop consumes the inbound ring when the application does not poll
// it (Poll). It validates every record (the peer may be hostile: a corrupt
// ring or a malformed record ends the connection, nothing else) and hands
// its contents to the engine.
func (l *link) readLoop() {
	defer l.wg.Done()
	defer func() {
		// Whatever is left in the ring will never be handled: the peer's
		// cleanup waits for that to hand back Sends by rendezvous
		// (waitUnread). Poll stops here too: the segment may go.
		l.rxMu.Lock()
		l.rxEnded = true
		l.rx.Abandon()
		l.rxMu.Unlock()
	}()
	ep := l.ep.Load()
	drained := false
	standDown := time.NewTimer(time.Hour)
	standDown.Stop()
	for {
		if h := testHookReader.Load(); h != nil {
			(*h)(l)
		}
		l.rxMu.Lock()
		n, ok := l.consumeLocked(ep, false)
		l.rxMu.Unlock()
		if !ok {
			return
		}
		if n > 0 {
			continue
		}
		if l.peerGone.Load() {
			// The peer published everything it will before the hang-up
			// was seen: look once more, then end.
			if drained {
				l.shutdown(nd.ErrCanceled, true)
				return
			}
			drained = true
			continue
		}
		if l.closed.Load() {
			return
		}
		if l.polled.Swap(false) {
			// The application polls: it moves the ring itself. Look
			// again after a while, or at once when it stops (Watch).
			standDown.Reset(standDownPeriod)
			select {
			case <-standDown.C:
			case <-l.rxKick:
				standDown.Stop()
				// Watch: the application stopped polling. Its last
				// Poll (Notify makes one) is no sign that it polls on.
				l.polled.Store(false)
			case <-l.done:
				standDown.Stop()
			}
			continue
		}
		if !l.wait() {
			return
		}
	}
}

// wait sleeps until the inbound ring holds records (or the link ends:
// false). Meanwhile a Poll sends its Acks at once: none waits for a reader
// that sleeps.
func (l *link) wait() bool {
	l.rxMu.Lock()
	l.rxWaiting = true
	l.flushAck() // held by a Poll since this reader looked
	l.rxMu.Unlock()
	err := l.rx.Wait(l.rxData, l.spin)
	l.rxMu.Lock()
	l.rxWaiting = false
	l.rxMu.Unlock()
	return err == nil
}

// standDownPeriod is how long the reader leaves the ring to an application
// that polls before it looks whether the application still does.
const standDownPeriod = 200 * time.Microsecond

// consumeLocked handles the records the inbound ring holds and acknowledges
// them once the ring is empty (or every ackEvery messages). It returns the
// records handled, and false when the link ended. Called with rxMu held.
//
// For a Poll (poll) the Ack of quiet Sends only (silent requests, whose
// sender does not wait for it) is held back, unless the reader sleeps: the
// application answers what came first, and the Ack goes once the ring
// stayed empty for ackIdlePolls Polls, with a later Ack, or from the
// reader, which sends it within standDownPeriod when the application stops
// polling.
func (l *link) consumeLocked(ep *engine.Endpoint, poll bool) (int, bool) {
	if l.rxEnded || l.rxStop {
		return 0, false
	}
	n, ok := l.consumeRecordsLocked(ep, poll)
	if n > 0 && !l.rxSeen.Load() {
		l.rxSeen.Store(true)
	}
	return n, ok
}

// consumeRecordsLocked is consumeLocked's loop: it returns the records it
// looked at (handled, or refused last) and false when the link ended.
func (l *link) consumeRecordsLocked(ep *engine.Endpoint, poll bool) (int, bool) {
	n := 0
	for {
		rec, ok, err := l.rx.Next()
		if err != nil {
			l.rxStop = true
			l.shutdown(nd.ErrConnectionAborted, true)
			return n, false
		}
		if !ok {
			l.rx.Publish() // a pad record skipped
			if !poll || l.rxWaiting || l.r.prompt {
				l.flushAck()
			}
			return n, true
		}
		if l.closed.Load() {
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
}

// Poll implements engine.Poller: the application's GetResults or Notify
// handles what the inbound ring holds, when the reader is not at it.
// While a test stops readers (testHookReader), Poll leaves the ring to
// them.
func (l *link) Poll() bool {
	if !l.polled.Load() {
		l.polled.Store(true) // once per look of the reader, not per Poll
	}
	if testHookReader.Load() != nil || !l.startedRx.Load() || !l.rxMu.TryLock() {
		return false
	}
	// Under rxMu: once the reader ended the segment may be unmapped.
	n := 0
	if !l.rxEnded {
		if l.rx.Unconsumed() {
			l.r.idlePolls = 0
			var ok bool
			n, ok = l.consumeLocked(l.ep.Load(), true)
			if !ok {
				l.kickReader()
			}
		} else if l.r.unacked > 0 {
			if l.r.idlePolls++; l.r.idlePolls >= ackIdlePolls {
				l.flushAck() // held back (consumeLocked)
			}
		}
	}
	l.rxMu.Unlock()
	return n > 0
}

// Watch implements engine.Poller: the reader watches the ring again.
func (l *link) Watch() { l.kickReader() }

func (l *link) kickReader() {
	select {
	case l.rxKick <- struct{}{}:
	default:
	}
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
	l.shutdownTerm(nd.ErrCanceled, msg, st, true)
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
// (enforced in handle), and their buffers are reused.
func (l *link) protectReadResponses(mem []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readResps == 0 || l.closing || len(mem) == 0 {
		return
	}
	l.runJobsLocked()
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

// maxSnapKept bounds the bytes of snapshot buffers kept for reuse per
// ring byte.
const maxSnapKept = 4

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

// handle processes one record; false ends the reader.
func (l *link) handle(ep *engine.Endpoint, rec shmring.Record) bool {
	p := rec.Payload
	switch rec.Type {
	case recSend:
		if len(p) < sendHeader || l.r.recv != nil || l.r.wmem != nil {
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
		if rec.Aux&(auxLast|auxInvalidate) == auxLast && len(data) <= receiveNowMax {
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
	case recSendRV:
		return l.pullSend(ep, rec, iovSize)
	case recSendRVSeg:
		return l.pullSend(ep, rec, segIovSize)
	case recSendMore:
		if len(p) < moreHeader || l.r.recv == nil || getU64(p) != l.r.msg {
			return l.protocolError()
		}
		data := p[moreHeader:]
		if len(data) > l.r.recvTotal-l.r.recvOff || (rec.Aux&auxLast != 0) != (len(data) == l.r.recvTotal-l.r.recvOff) {
			return l.protocolError()
		}
		return l.placeSend(ep, data, rec.Aux&auxLast != 0)
	case recWrite, recRead:
		if len(p) < rdmaHeader || l.r.recv != nil || l.r.wmem != nil {
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
			iovs, ok := l.parseIovs(p[rdmaHeader:], length, iovSize)
			if !ok {
				return l.protocolError()
			}
			if length > 0 {
				if err := pvmCopy(l.pid, mem, iovs, !write, &l.r.liov); err != nil {
					return l.refuse(msg, nd.ErrRemoteError)
				}
			}
			l.handled(msg, false)
			return true
		}
		if len(p) != rdmaHeader {
			return l.protocolError()
		}
		if !write {
			// The response goes through the ring, ahead of the Ack; the
			// writer copies it (the reader never waits for ring room). The
			// peer's engine keeps at most its ORD Reads outstanding, and
			// each stays so until the Ack that follows its response.
			l.mu.Lock()
			if length > 0 && !l.closing {
				if l.maxResps >= 0 && l.readResps >= l.maxResps {
					l.mu.Unlock()
					return l.protocolError()
				}
				l.jobs = append(l.jobs, job{kind: jobReadResp, msg: msg, src: mem})
				l.readResps++
				l.kickLocked()
			}
			l.mu.Unlock()
			l.handled(msg, false)
			return true
		}
		if length == 0 {
			l.handled(msg, false)
			return true
		}
		l.r.wmem, l.r.woff = mem, 0
		return true
	case recWriteData:
		if len(p) < moreHeader || l.r.wmem == nil || getU64(p) != l.r.msg {
			return l.protocolError()
		}
		data := p[moreHeader:]
		if len(data) > len(l.r.wmem)-l.r.woff {
			return l.protocolError()
		}
		l.r.woff += copy(l.r.wmem[l.r.woff:], data)
		if l.r.woff == len(l.r.wmem) {
			l.r.wmem = nil
			l.handled(l.r.msg, false)
		}
		return true
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

// parseIovs reads the initiator's buffer list, entries of entry bytes
// (iovSize, or segIovSize in a sendRVSeg) that start with (address u64,
// length u64); their lengths must add up to length.
func (l *link) parseIovs(b []byte, length, entry int) ([]unix.RemoteIovec, bool) {
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
		l.r.remote[i] = unix.RemoteIovec{Base: uintptr(a), Len: int(ln)}
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
func (l *link) parseRendezvous(b []byte, total, entry int) (remote []unix.RemoteIovec, mapped [][]byte, ok bool) {
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
	if !l.rvIn.Load() || len(p) < sendHeader || l.r.recv != nil || l.r.wmem != nil {
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
// all placed, after the invalidation it asks for.
func (l *link) completeSend(ep *engine.Endpoint) bool {
	rr, msg := l.r.recv, l.r.msg
	l.r.recv = nil
	st := nd.Success
	if l.r.recvAux&auxInvalidate != 0 {
		st = ep.InvalidateWindow(l.r.recvToken)
	}
	ep.CompleteReceive(rr, l.r.recvTotal, st, l.r.recvAux&auxSolicited != 0)
	if st != nd.Success {
		return false
	}
	l.handled(msg, l.r.recvAux&auxQuiet != 0)
	return true
}

// readData places a Read response that came through the ring.
func (l *link) readData(msg uint64, data []byte) bool {
	l.mu.Lock()
	var e *sent
	for i := range l.unconf.len() {
		if x := l.unconf.at(i); x.msg == msg {
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
	for l.unconf.len() > 0 && l.unconf.at(0).msg <= upTo {
		e := l.unconf.at(0)
		if e.wr.Op == engine.OpRead && !l.pvmOut && e.placed != e.wr.Length {
			l.mu.Unlock()
			return l.protocolError()
		}
		done = append(done, l.unconf.pop())
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
	found := l.unconf.len() > 0 && l.unconf.at(0).msg == msg
	if found {
		e = l.unconf.pop()
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

// A large pull is split between the reader and the link's pull helper
// goroutine, each copying its part of the Send with process_vm_readv at
// once, on two cores: one core's process_vm_readv (it pins and copies page
// by page) runs well below what the memory allows. The helper may be slow
// to wake (tens of µs on a busy two-core VM), so the reader never waits
// for a helper that has not started: once done with its own part, it takes
// the helper's part back and copies it too if the helper has not claimed
// it yet. And the helper's share adapts: after each split pull, a helper
// that was done before the reader gets a larger share next time, one that
// was still copying or had not started a smaller one, within bounds (1/16
// to 1/2 of the bytes).
const (
	splitMin   = 512 << 10 // the smallest pull split
	shareMin   = 16        // the helper's share in 1/256 of the bytes
	shareMax   = 128
	shareStep  = 4
	shareStart = 64
)

// pullHelper is the goroutine that copies part of a large pull while the
// reader copies the rest.
type pullHelper struct {
	req  chan pullJob
	done chan error // the answer to every job the helper claimed
	// The current job's number times 4, plus 0 while it is open, 1 once
	// the helper claimed it, 2 once the reader took it back. A job the
	// reader took back may still come out of req later: its number no
	// longer matches, and the helper drops it.
	claim atomic.Uint64
	seq   uint64 // the reader's: the last job's number
	liov  [maxIovs]unix.Iovec
}

// pullJob is the helper's part of a pull: n bytes of the peer's buffers
// remote into sgl from byte off on.
type pullJob struct {
	seq    uint64
	sgl    []nd.SGE
	off, n int
	remote []unix.RemoteIovec
}

// pull reads total bytes of the peer's buffers remote into the Receive's
// buffers sgl (pvmPull): alone, or from splitMin on with the helper. It
// returns only once neither copies into sgl any more.
func (l *link) pull(sgl []nd.SGE, total int, remote []unix.RemoteIovec) error {
	if total < splitMin {
		return pvmPull(l.pid, sgl, 0, total, remote, &l.r.liovs)
	}
	h := l.r.helper
	if h == nil {
		h = &pullHelper{req: make(chan pullJob, 1), done: make(chan error, 1)}
		l.r.helper, l.r.share = h, shareStart
		l.wg.Add(1) // the reader counts: never from zero
		go l.pullLoop(h)
	}
	theirs := total / 256 * l.r.share &^ 4095
	mine := total - theirs
	first, second := splitRemote(remote, mine, &l.r.remoteB)
	select {
	case <-h.req: // an earlier job the reader took back
	default:
	}
	h.seq++
	h.claim.Store(h.seq * 4)
	h.req <- pullJob{seq: h.seq, sgl: sgl, off: mine, n: theirs, remote: second}
	err := pvmPull(l.pid, sgl, 0, mine, first, &l.r.liovs)
	var herr error
	if h.claim.CompareAndSwap(h.seq*4, h.seq*4+2) {
		// Not started: copy it here (the helper will skip it).
		herr = pvmPull(l.pid, sgl, mine, theirs, second, &l.r.liovs)
		l.r.share = max(l.r.share-shareStep, shareMin)
	} else {
		select {
		case herr = <-h.done:
			l.r.share = min(l.r.share+shareStep, shareMax)
		default:
			l.r.share = max(l.r.share-shareStep, shareMin)
			herr = <-h.done // it claimed the job: it answers
		}
	}
	if err == nil {
		err = herr
	}
	return err
}

// pullLoop is the pull helper: it copies the jobs the reader hands it and
// has not taken back, until the link ends.
func (l *link) pullLoop(h *pullHelper) {
	defer l.wg.Done()
	for {
		select {
		case j := <-h.req:
			if h.claim.CompareAndSwap(j.seq*4, j.seq*4+1) {
				h.done <- pvmPull(l.pid, j.sgl, j.off, j.n, j.remote, &h.liov)
			}
		case <-l.done:
			return
		}
	}
}

// splitRemote cuts the buffer list remote after n bytes (less than its
// total): the first part is remote itself, its last entry shortened if
// the cut falls inside it; the rest goes to rest.
func splitRemote(remote []unix.RemoteIovec, n int, rest *[maxIovs]unix.RemoteIovec) (first, second []unix.RemoteIovec) {
	for i := range remote {
		if n >= remote[i].Len {
			n -= remote[i].Len
			continue
		}
		k, j := 0, i
		if n > 0 {
			rest[0] = unix.RemoteIovec{Base: remote[i].Base + uintptr(n), Len: remote[i].Len - n}
			remote[i].Len = n
			k, j = 1, i+1
		}
		k += copy(rest[k:], remote[j:])
		return remote[:j], rest[:k]
	}
	return remote, rest[:0]
}
