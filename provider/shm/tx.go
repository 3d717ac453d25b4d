//go:build linux || windows || darwin || freebsd

package shm

import (
	"encoding/binary"
	"errors"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// Ring record types (shmring types; 0 is the ring's pad). Every integer is
// little-endian; msg numbers a connection's outbound messages from 1 in
// the order the requests were issued.
//
//	send     msg u64, total u32, token u32, data   aux: 1 solicited, 2 invalidate, 4 last, 8 quiet
//	sendMore msg u64, data                         aux: 4 last
//	write    msg u64, addr u64, token u32, length u32, [iov]   aux: 1 by address
//	writeData msg u64, data
//	read     msg u64, addr u64, token u32, length u32, [iov]   aux: 1 by address
//	readData msg u64, data (the target's response through the ring)
//	ack      upTo u64: every message up to upTo was handled
//	term     msg u64, status u32: message msg failed with status; the
//	         connection ends
//	sendRV   msg u64, total u32, token u32, iov   aux: 1 solicited, 2 invalidate
//
// iov is the initiator's buffers as (address u64, length u64) pairs, for
// the target's process_vm_readv (write) or process_vm_writev (read); in a
// sendRV (a Send by rendezvous, only to a peer that announced capSend) the
// sender's buffers, which the receiver reads with process_vm_readv into
// its Receive (their lengths add up to total, which is not 0).
const (
	recSend = iota + 1
	recSendMore
	recWrite
	recWriteData
	recRead
	recReadData
	recAck
	recTerm
	recSendRV
	recSendRVSeg
)

const (
	auxSolicited  = 1
	auxInvalidate = 2
	auxLast       = 4
	auxQuiet      = 8  // a silent Send: its sender does not wait for the Ack, which may be held back
	auxAckFirst   = 16 // a silent Send that filled its sender's queue: acknowledged before its Receive completes
	auxByAddress  = 1
)

const (
	sendHeader = 16
	moreHeader = 8
	rdmaHeader = 24
	iovSize    = 16
	segIovSize = 32
	maxIovs    = 32
)

// segRef names bytes of an AllocateMemory segment: in a sendRVSeg entry
// (address u64, length u64, segment u32, 0 u32, offset u64), the segment
// the sender passed (0: none) and the entry's offset in it; a receiver that
// mapped the segment copies from its mapping, otherwise it reads the
// address with process_vm_readv.
type segRef struct {
	id  uint32
	off uint64
}

func putU64(b []byte, v uint64)           { binary.LittleEndian.PutUint64(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func putU32(b []byte, v uint32)           { binary.LittleEndian.PutUint32(b, v) }
func getU64(b []byte) uint64              { return binary.LittleEndian.Uint64(b) }
func getU32(b []byte) uint32              { return binary.LittleEndian.Uint32(b) }

type jobKind uint8

const (
	jobWR       jobKind = iota // an outbound request
	jobReadResp                // the response to the peer's Read, through the ring
	jobAck                     // an acknowledgment
	jobTerm                    // a Terminate behind queued answers (terminate); the link ends after it
)

// job is outbound work for the ring, in order.
type job struct {
	kind    jobKind
	wr      *engine.WorkRequest
	msg     uint64
	off     int  // payload bytes written
	started bool // the first record is out
	pvm     bool // Read/Write: name our buffers by address
	rv      bool // Send: by rendezvous (a descriptor of our buffers)
	quiet   bool // a silent Send whose Ack the peer may hold back (Transmit)
	src     []byte
	snap    bool      // a Read response's src is a snapshot buffer (protectReadResponses)
	token   uint32    // a Read response: the window read, checked again per piece
	addr    uint64    // a Read response: the address src starts at
	termSt  nd.Status // a Terminate: the status of the peer's message msg
}

// Transmit implements engine.Link: the request is numbered, remembered
// until the peer acknowledges it, and written to the ring now if it fits,
// by the writer goroutine otherwise. It never blocks on the peer.
func (l *link) Transmit(wr *engine.WorkRequest) (bool, nd.Status) {
	if wr.Op == engine.OpRead || wr.Op == engine.OpWrite {
		if wr.Remote.Base+wr.Offset < wr.Remote.Base {
			return true, nd.ErrAccessViolation
		}
		if l.direct(wr) {
			return true, nd.Success
		}
	}
	l.mu.Lock()
	if l.life.closed() {
		l.mu.Unlock()
		return true, nd.ErrCanceled
	}
	l.nextMsg++
	msg := l.nextMsg
	l.unconf.Push(sent{wr: wr, seq: wr.Seq, msg: msg})
	l.txQuiet = false
	rv := l.rvOut && l.rendezvous(wr)
	// A silent Send goes quiet (the peer may hold its Ack back, and the
	// request its queue entry) unless it fills the endpoint's outbound
	// queue: then the peer acknowledges it, and every request before it,
	// as it handles it, so that a side answering with silent Sends gets
	// its entries back in time for its next Send.
	quiet := wr.Flags&nd.FlagSilentSuccess != 0 && l.unconf.Len() < l.sendDepth
	j := l.addJobLocked(jobWR)
	j.wr, j.msg, j.pvm, j.rv, j.quiet = wr, msg, l.pvmOut, rv, quiet
	l.kickLocked()
	l.mu.Unlock()
	return false, nd.Success
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

// rendezvous reports whether the Send wr is large enough to go by
// rendezvous (if the peer takes it): the receiver then reads wr's buffers
// by address until its Ack, before which wr does not complete, so they
// stay the request's (registered memory, or the request's own inline
// copy).
func (l *link) rendezvous(wr *engine.WorkRequest) bool {
	return (wr.Op == engine.OpSend || wr.Op == engine.OpSendInvalidate) &&
		l.rvMin > 0 && wr.Length >= l.rvMin && len(wr.SGL) <= maxIovs
}

// kickLocked writes queued jobs while the ring has room, unless the
// writer goroutine has them, and starts the writer for the rest: it runs
// only while jobs wait for room.
func (l *link) kickLocked() {
	if l.writing || l.life.closed() {
		return
	}
	l.runJobsLocked()
	if len(l.jobs) > l.jobHead || l.txErr != nil {
		l.writing = true
		l.wg.Add(1)
		go l.writer() // the method value made once (newLink): no allocation
		if !l.t.progress.woke.Load() {
			l.t.progress.woke.Store(true)
		}
	}
}

// runJobsLocked writes jobs until the queue is empty or the ring full, and
// publishes. It returns the payload size the next record needs (when the
// ring is full).
func (l *link) runJobsLocked() int {
	need := 0
	for l.jobHead < len(l.jobs) && l.txErr == nil {
		j := &l.jobs[l.jobHead]
		done, n := l.encode(j)
		if !done {
			need = n
			break
		}
		if j.kind == jobReadResp {
			l.readResps--
			if j.snap {
				l.putSnapLocked(j.src)
			}
		}
		*j = job{}
		l.jobHead++
	}
	if l.jobHead == len(l.jobs) {
		l.jobs, l.jobHead = l.jobs[:0], 0
	}
	l.tx.Publish()
	return need
}

// errTerminated stops the jobs of a link once its Terminate is in the
// ring: the writer then ends the link with endStatus.
var errTerminated = errors.New("shm: the link ended with a Terminate")

// encodeTerm writes a Terminate record failing the peer's message msg with
// st, after which nothing more is written (txErr).
func (l *link) encodeTerm(msg uint64, st nd.Status) (bool, int) {
	b := l.reserve(recTerm, 0, 12)
	if b == nil {
		return false, 12
	}
	putU64(b, msg)
	putU32(b[8:], uint32(st))
	l.txErr = errTerminated
	return true, 0
}

// readPiece fills dst with the Read response j's next bytes, from its
// window, checked again and copied in one step with respect to an
// Invalidate (engine.Endpoint.ReadAt), or from its snapshot while the
// window still allows the Read; false when the window no longer does.
func (l *link) readPiece(j *job, dst []byte) bool {
	ep := l.ep.Load()
	if ep == nil {
		return false
	}
	at := j.addr + uint64(j.off)
	if !j.snap {
		return ep.ReadAt(j.token, at, dst) == engine.FaultNone
	}
	if _, f := ep.AccessFault(j.token, at, len(dst), false); f != engine.FaultNone {
		return false
	}
	copy(dst, j.src[j.off:])
	return true
}

// reserve appends a record; nil when the ring is full (or broken: txErr).
func (l *link) reserve(typ, aux uint16, n int) []byte {
	b, err := l.tx.Reserve(typ, aux, n)
	if err != nil {
		l.txErr = err
		return nil
	}
	return b
}

// encode writes as much of j as fits. It returns done, or the payload size
// of the record it could not place. Each kind of job has its encoder
// below; a job that did not fit whole goes on where it stopped (j.off,
// j.started) at the next call. Called with mu held.
func (l *link) encode(j *job) (bool, int) {
	switch j.kind {
	case jobAck:
		b := l.reserve(recAck, 0, 8)
		if b == nil {
			return false, 8
		}
		putU64(b, j.msg)
		return true, 0
	case jobTerm:
		return l.encodeTerm(j.msg, j.termSt)
	case jobReadResp:
		return l.encodeReadResp(j)
	}
	switch j.wr.Op {
	case engine.OpSend, engine.OpSendInvalidate:
		if j.rv {
			return l.encodeRendezvous(j)
		}
		return l.encodeSend(j)
	case engine.OpWrite, engine.OpRead:
		if !j.started {
			if ok, n := l.encodeRDMA(j); !ok {
				return false, n
			}
			if j.pvm || j.wr.Op == engine.OpRead {
				return true, 0
			}
		}
		return l.encodeWriteData(j)
	}
	return true, 0
}

// maxData is the most data bytes a record carries after its header.
// Called with mu held.
func (l *link) maxData() int { return l.tx.MaxPayload() - sendHeader }

// encodeReadResp writes the response to the peer's Read j in readData
// records, as far as the ring has room. Called with mu held.
func (l *link) encodeReadResp(j *job) (bool, int) {
	maxData := l.maxData()
	for j.off < len(j.src) {
		n := min(len(j.src)-j.off, maxData)
		b := l.reserve(recReadData, 0, moreHeader+n)
		if b == nil {
			return false, moreHeader + n
		}
		putU64(b, j.msg)
		if !l.readPiece(j, b[moreHeader:]) {
			// The window went away after the Read was accepted: the
			// record goes back, and a Terminate in its place (it
			// needs no more room) fails the peer's Read; the link
			// ends.
			l.tx.Unreserve()
			l.endStatus, l.endNotify = nd.ErrCanceled, true
			return l.encodeTerm(j.msg, nd.ErrAccessViolation)
		}
		j.off += n
	}
	return true, 0
}

// encodeSend writes the Send j through the ring, as far as it has room: a
// send record, then sendMore records for the bytes that did not fit in it.
// Called with mu held.
func (l *link) encodeSend(j *job) (bool, int) {
	wr := j.wr
	maxData := l.maxData()
	for !j.started || j.off < wr.Length {
		n := min(wr.Length-j.off, maxData)
		aux := uint16(0)
		if j.off+n == wr.Length {
			aux |= auxLast
		}
		hdr := moreHeader
		typ := uint16(recSendMore)
		if !j.started {
			hdr, typ = sendHeader, recSend
			aux |= j.sendAux()
		}
		b := l.reserve(typ, aux, hdr+n)
		if b == nil {
			return false, hdr + n
		}
		putU64(b, j.msg)
		if !j.started {
			putU32(b[8:], uint32(wr.Length))
			putU32(b[12:], wr.Remote.Token)
			j.started = true
		}
		gatherAt(b[hdr:], wr.SGL, j.off)
		j.off += n
	}
	return true, 0
}

// sendAux returns the aux bits of the first record of the Send j. A
// silent Send is quiet (its Ack may wait) when it left room in its
// endpoint's outbound queue and goes through the ring. One that filled the
// queue asks to be acknowledged before its Receive completes: the peer's
// answer to it must not overtake the Ack, or the answer's Receive would
// complete here while the queue entry its sender needs next is still
// taken (an Ack handled after it in the same pass frees it too late).
func (j *job) sendAux() uint16 {
	wr := j.wr
	aux := uint16(0)
	if wr.Flags&nd.FlagSendAndSolicitEvent != 0 {
		aux |= auxSolicited
	}
	if wr.Op == engine.OpSendInvalidate {
		aux |= auxInvalidate
	}
	if wr.Flags&nd.FlagSilentSuccess != 0 {
		switch {
		case !j.quiet:
			aux |= auxAckFirst
		case !j.rv:
			aux |= auxQuiet
		}
	}
	return aux
}

// encodeRDMA writes the write or read record of the Write or Read j, with
// its non-empty buffers by address when the peer copies them (j.pvm). It
// returns true, or false and the record's payload size when the ring has
// no room for it. Called with mu held.
func (l *link) encodeRDMA(j *job) (bool, int) {
	wr := j.wr
	typ := uint16(recWrite)
	if wr.Op == engine.OpRead {
		typ = recRead
	}
	n := rdmaHeader
	aux := uint16(0)
	if j.pvm {
		aux = auxByAddress
		for i := range wr.SGL {
			if len(wr.SGL[i].Buffer) > 0 {
				n += iovSize
			}
		}
	}
	b := l.reserve(typ, aux, n)
	if b == nil {
		return false, n
	}
	putU64(b, j.msg)
	putU64(b[8:], wr.Remote.Base+wr.Offset)
	putU32(b[16:], wr.Remote.Token)
	putU32(b[20:], uint32(wr.Length))
	if j.pvm {
		p := b[rdmaHeader:]
		for i := range wr.SGL {
			if buf := wr.SGL[i].Buffer; len(buf) > 0 {
				putU64(p, addrOf(buf))
				putU64(p[8:], uint64(len(buf)))
				p = p[iovSize:]
			}
		}
	}
	j.started = true
	return true, 0
}

// encodeWriteData writes the data of the Write j, after its write record,
// in writeData records, as far as the ring has room. Called with mu held.
func (l *link) encodeWriteData(j *job) (bool, int) {
	wr := j.wr
	maxData := l.maxData()
	for j.off < wr.Length {
		n := min(wr.Length-j.off, maxData)
		b := l.reserve(recWriteData, 0, moreHeader+n)
		if b == nil {
			return false, moreHeader + n
		}
		putU64(b, j.msg)
		gatherAt(b[moreHeader:], wr.SGL, j.off)
		j.off += n
	}
	return true, 0
}

// encodeRendezvous writes the sendRV record of the Send j: its total
// length, the window to invalidate, and its non-empty buffers by address;
// a sendRVSeg record when some buffer lies in an AllocateMemory segment,
// which the peer may then copy through its mapping.
func (l *link) encodeRendezvous(j *job) (bool, int) {
	wr := j.wr
	typ, entry := uint16(recSendRV), iovSize
	k := 0
	for i := range wr.SGL {
		if buf := wr.SGL[i].Buffer; len(buf) > 0 {
			id, off, ok := l.shareSegment(buf)
			if ok {
				typ, entry = recSendRVSeg, segIovSize
			}
			l.rvSegs[k] = segRef{id: id, off: off}
			k++
		}
	}
	n := sendHeader + k*entry
	b := l.reserve(typ, j.sendAux(), n)
	if b == nil {
		return false, n
	}
	putU64(b, j.msg)
	putU32(b[8:], uint32(wr.Length))
	putU32(b[12:], wr.Remote.Token)
	p := b[sendHeader:]
	k = 0
	for i := range wr.SGL {
		if buf := wr.SGL[i].Buffer; len(buf) > 0 {
			putU64(p, addrOf(buf))
			putU64(p[8:], uint64(len(buf)))
			if entry == segIovSize {
				putU32(p[16:], l.rvSegs[k].id)
				putU32(p[20:], 0)
				putU64(p[24:], l.rvSegs[k].off)
			}
			p = p[entry:]
			k++
		}
	}
	l.rvLastMsg, l.rvLastEnd = j.msg, l.tx.Reserved()
	l.t.rvSent.Add(1)
	return true, 0
}

// gatherAt copies the bytes of sgl from offset off on into dst, until dst
// is full, front to back.
func gatherAt(dst []byte, sgl []nd.SGE, off int) {
	for i := range sgl {
		if len(dst) == 0 {
			return
		}
		b := sgl[i].Buffer
		if off >= len(b) {
			off -= len(b)
			continue
		}
		n := engine.Copy(dst, b[off:])
		dst, off = dst[n:], 0
	}
}

// scatterAt copies src into the bytes of sgl from offset off on.
func scatterAt(sgl []nd.SGE, off int, src []byte) {
	for i := range sgl {
		if len(src) == 0 {
			return
		}
		b := sgl[i].Buffer
		if off >= len(b) {
			off -= len(b)
			continue
		}
		n := engine.Copy(b[off:], src)
		src, off = src[n:], 0
	}
}

// writeLoop writes the jobs that did not fit when they were queued,
// sleeping on the room doorbell while the ring is full; it ends once they
// are all written (or the link ends).
func (l *link) writeLoop() {
	defer l.wg.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.life.closed() {
			l.writing = false
			return
		}
		need := l.runJobsLocked()
		if l.txErr != nil {
			st, notify := nd.ErrConnectionAborted, true // the ring broke
			if l.txErr == errTerminated {
				st, notify = l.endStatus, l.endNotify
			}
			l.writing = false
			l.mu.Unlock()
			l.shutdown(st, notify)
			l.mu.Lock()
			return
		}
		if l.jobHead == len(l.jobs) {
			l.writing = false
			return
		}
		ok, err := l.tx.ArmRoom(need)
		if err != nil {
			l.txErr = err
			continue
		}
		if ok {
			continue
		}
		l.mu.Unlock()
		werr := l.txRoom.Wait()
		l.mu.Lock()
		l.tx.Disarm()
		if werr != nil {
			l.writing = false
			return
		}
	}
}

// queueAckLocked acknowledges every inbound message up to upTo, after the
// jobs already queued (a Read response through the ring).
func (l *link) queueAckLocked(upTo uint64) {
	if l.life.closed() {
		return
	}
	if n := len(l.jobs); n > l.jobHead && l.jobs[n-1].kind == jobAck && n-1 > l.jobHead {
		l.jobs[n-1].msg = upTo
		return
	}
	l.addJobLocked(jobAck).msg = upTo
	l.kickLocked()
}
