package shm

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// readerState is what the reader goroutine keeps between records; only
// the reader touches it (and cleanup, after the reader ended).
type readerState struct {
	msg       uint64 // the last inbound message started
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
	done      []sent // acknowledged requests, to complete outside mu
}

// testHookReader, if set, is called by every reader before it looks at its
// ring (tests stop a target's reader with it).
var testHookReader atomic.Pointer[func(*link)]

// ackEvery bounds the inbound messages handled before an Ack goes out even
// while records keep arriving.
const ackEvery = 16

// readLoop consumes the inbound ring. It validates every record (the peer
// may be hostile: a corrupt ring or a malformed record ends the
// connection, nothing else) and hands its contents to the engine.
func (l *link) readLoop() {
	defer l.wg.Done()
	ep := l.ep.Load()
	drained := false
	for {
		if h := testHookReader.Load(); h != nil {
			(*h)(l)
		}
		rec, ok, err := l.rx.Next()
		if err != nil {
			l.shutdown(nd.ErrConnectionAborted, true)
			return
		}
		if !ok {
			l.flushAck()
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
			if l.rx.Wait(l.rxData, l.spin) != nil {
				return
			}
			continue
		}
		if l.closed.Load() {
			return
		}
		l.rxCount.Add(1)
		if !l.handle(ep, rec) {
			return
		}
		l.rx.Publish()
		if l.r.unacked >= ackEvery {
			l.flushAck()
		}
	}
}

// flushAck acknowledges the messages handled since the last Ack.
func (l *link) flushAck() {
	if l.r.unacked == 0 {
		return
	}
	l.r.unacked = 0
	l.mu.Lock()
	l.queueAckLocked(l.doneUpTo)
	l.mu.Unlock()
}

// handled records that inbound message msg was handled.
func (l *link) handled(msg uint64) {
	l.mu.Lock()
	l.doneUpTo = msg
	l.mu.Unlock()
	l.r.unacked++
	l.curMsg.Store(0)
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
		l.curSend.Store(true)
		l.curMsg.Store(msg)
		rr, _ := ep.TakeReceive(total)
		if rr == nil {
			// The engine ended the connection; Close told the peer.
			return false
		}
		l.r.recv, l.r.recvTotal, l.r.recvOff = rr, total, 0
		l.r.recvToken, l.r.recvAux = getU32(p[12:]), rec.Aux
		return l.placeSend(ep, data, rec.Aux&auxLast != 0)
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
			iovs, ok := l.parseIovs(p[rdmaHeader:], length)
			if !ok {
				return l.protocolError()
			}
			if length > 0 {
				if err := pvmCopy(l.pid, mem, iovs, !write, &l.r.liov); err != nil {
					return l.refuse(msg, nd.ErrRemoteError)
				}
			}
			l.handled(msg)
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
			l.handled(msg)
			return true
		}
		if length == 0 {
			l.handled(msg)
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
			l.handled(l.r.msg)
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

// parseIovs reads the initiator's buffer list; their lengths must add up
// to length.
func (l *link) parseIovs(b []byte, length int) ([]unix.RemoteIovec, bool) {
	if len(b)%iovSize != 0 || len(b)/iovSize > maxIovs {
		return nil, false
	}
	n := len(b) / iovSize
	total := uint64(0)
	for i := range n {
		a, ln := getU64(b[i*iovSize:]), getU64(b[i*iovSize+8:])
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

// placeSend copies a Send fragment into the Receive and completes it after
// the last one.
func (l *link) placeSend(ep *engine.Endpoint, data []byte, last bool) bool {
	scatterAt(l.r.recv.SGL, l.r.recvOff, data)
	l.r.recvOff += len(data)
	if !last {
		return true
	}
	rr, msg := l.r.recv, l.r.msg
	l.r.recv = nil
	st := nd.Success
	if l.r.recvAux&auxInvalidate != 0 {
		st = ep.InvalidateWindow(l.r.recvToken)
	}
	ep.CompleteReceive(rr, l.r.recvTotal, st, l.r.recvAux&auxSolicited != 0)
	l.curSend.Store(false)
	if st != nd.Success {
		return false
	}
	l.handled(msg)
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
