package tcp

import (
	"encoding/binary"
	"errors"
	"io"
	"runtime"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

// errStop ends the reader after the link was shut down.
var errStop = errors.New("tcp: link closed")

// What the reader does once an FPDU's trailer checked out.
const (
	actNone = iota
	actReadDone
	actReceiveDone
	actReadRequest
	actTerminate
)

// readerState is the parser's state; the holder of the link's rxMu (the
// reader goroutine, or a poll) owns it.
type readerState struct {
	hdr       [iwarp.MinFPDUHeaderSize + 8]byte
	body      [128]byte // Read Request and Terminate bodies
	trailer   [iwarp.MaxFPDUTrailerSize]byte
	reasm     iwarp.Reassembler
	first     bool                // the first FPDU arrived
	stopped   bool                // the link ended: nothing more is parsed
	recv      *engine.WorkRequest // the Receive the current Send fills
	recvLen   int
	lastHdr   [iwarp.UntaggedHeaderSize]byte // the last Send segment's DDP header
	confirmed []sentEntry

	// The FPDU in progress (cur): a poll that finds only part of its
	// payload takes what is there and leaves the rest to the next poll,
	// or to the reader goroutine.
	cur     bool
	h       iwarp.FPDUHeader
	hdrLen  int // header bytes in hdr, length field included
	plen    int
	crc     uint32
	action  int
	sgl     []nd.SGE // the payload's place: sgl from entry sgi, offset off
	one     [1]nd.SGE
	sgi     int
	off     int
	left    int         // payload bytes still to read
	discard bool        // the payload is read and dropped
	hold    engine.Hold // an RDMA Write's target window, until its payload is placed
	scratch [512]byte
}

// place sets where the FPDU's plen payload bytes go: sgl from offset off.
func (rs *readerState) place(sgl []nd.SGE, off int) {
	rs.sgl, rs.sgi, rs.off, rs.left, rs.discard = sgl, 0, off, rs.plen, false
}

// releaseHold ends the hold on the window a Write's payload was placed in.
func (rs *readerState) releaseHold() {
	rs.hold.Release()
	rs.hold = engine.Hold{}
}

// drop has the FPDU's payload read and dropped.
func (rs *readerState) drop() {
	rs.sgl, rs.left, rs.discard = nil, rs.plen, true
}

// chunk returns where the next payload bytes go (nil: the place is too
// short, which the checks before rule out).
func (rs *readerState) chunk() []byte {
	if rs.discard {
		return rs.scratch[:min(rs.left, len(rs.scratch))]
	}
	for rs.sgi < len(rs.sgl) {
		b := rs.sgl[rs.sgi].Buffer
		if rs.off < len(b) {
			b = b[rs.off:]
			return b[:min(len(b), rs.left)]
		}
		rs.off -= len(b)
		rs.sgi++
	}
	return nil
}

// pollRx handles, without waiting, the FPDUs that have arrived, unless
// someone else holds rxMu, and reports whether it handled any and whether
// the link is inside an inbound message (the rest of it is on its way);
// with nothing new, a response held back for the application's answer
// leaves. A poll of the readiness set reads through the buffer, which
// grows for bulk traffic (rxGrows); an application's poll of the link
// alone (direct) reads long payloads into place with what follows them
// instead (rxBuffer.place). Safe for concurrent use, also after the link
// ended.
func (l *link) pollRx(direct bool) (handled, inMessage bool) {
	if !l.rxStarted.Load() || !l.rxMu.TryLock() {
		return false, false
	}
	l.br.place = direct && l.rxGrows
	if !l.rs.stopped {
		var err error
		if handled, err = l.rxStep(&l.rs, true); err != nil {
			l.stopReading()
			// A socket at its end stays ready: the set stops
			// reporting it before the link leaves it.
			l.t.progress.kset.quiet(l)
		}
		inMessage = l.rs.recv != nil
	}
	l.rxMu.Unlock()
	if !handled {
		l.flushDeferred()
	}
	return handled, inMessage
}

// stopReading marks the end of the link's inbound stream: nothing more is
// parsed. rxMu held.
func (l *link) stopReading() {
	l.rs.stopped = true
	close(l.rxDone)
}

// readLoop is a link's reader goroutine on perLink platforms: it parses
// inbound FPDUs and places their payload, reading blocking, until the link
// ends.
func (l *link) readLoop() {
	defer l.wg.Done()
	rs := &l.rs
	for {
		l.rxMu.Lock()
		if !rs.stopped {
			if _, err := l.rxStep(rs, false); err != nil {
				l.stopReading()
			}
		}
		stopped := rs.stopped
		if stopped {
			l.rxEnd(rs)
		}
		l.rxMu.Unlock()
		if stopped {
			return
		}
		if l.txDeferred.Load() {
			// Let the application answer what arrived first, so that a
			// held-back response leaves with its answer.
			runtime.Gosched()
			l.flushDeferred()
		}
	}
}

// rxEnd cancels the Receive a Send was filling when the link ended, and
// releases the window of a Write it was placing; rxMu held.
func (l *link) rxEnd(rs *readerState) {
	rs.releaseHold()
	if rs.recv != nil {
		if ep := l.ep.Load(); ep != nil {
			ep.CompleteReceive(rs.recv, 0, nd.ErrCanceled, false)
		}
		rs.recv = nil
	}
}

// rxStep handles the FPDUs that have arrived and reports whether it handled
// any; rxMu held. A poll (poll set) never waits: it takes as much of an
// FPDU as has arrived and goes on with it at the next poll. The reader
// goroutine of perLink platforms waits for the rest of an FPDU it started.
// An error means the link ended.
func (l *link) rxStep(rs *readerState, poll bool) (bool, error) {
	handled := false
	for {
		buffered := l.br.Buffered()
		need := iwarp.FPDULengthSize // bytes to have buffered before starting
		if buffered >= need {
			b, _ := l.br.Peek(iwarp.FPDULengthSize)
			need = iwarp.FPDUSize(int(binary.BigEndian.Uint16(b)))
			if need > l.br.Size() && l.rxGrows && !l.br.place {
				// Bulk traffic: the buffer grows so that every FPDU
				// (at most 65544 bytes) fits in it from now on.
				l.br.grow(rxBulkBufferSize)
			}
		}
		// An FPDU is started once its header, and the body a Read
		// Request or Terminate carries, are buffered (all of it when it
		// is shorter); its payload is taken as it comes. A header that
		// promises more than will come is caught at once.
		if need > len(rs.hdr) && buffered >= len(rs.hdr) {
			b, _ := l.br.Peek(len(rs.hdr))
			if op := iwarp.FPDUOpcode(b); op == iwarp.OpReadRequest || op == iwarp.OpTerminate {
				need = min(need, len(rs.hdr)+len(rs.body))
			} else {
				need = len(rs.hdr)
			}
		} else {
			need = min(need, len(rs.hdr))
		}
		if rs.cur || buffered >= need || !poll && buffered > 0 {
			l.sock.nonblock = poll
			err := l.readFPDU(rs)
			l.sock.nonblock = false
			switch {
			case err == errAgain:
				return handled, nil
			case err != nil:
				return handled, err
			}
			handled = true
			if l.br.Buffered() == 0 {
				// Nothing more is buffered: return what this step
				// completed now rather than after another read of the
				// socket, which would come up empty while the peer
				// waits for the answer (a system call, a microsecond
				// or more, on the round trip).
				return handled, nil
			}
			continue
		}
		// Take what the socket holds, without waiting.
		l.sock.nonblock = true
		_, err := l.br.Peek(need)
		l.sock.nonblock = false
		switch {
		case l.br.Buffered() > buffered:
		case err == nil || errors.Is(err, errAgain):
			return handled, nil
		default:
			return handled, l.lost(err)
		}
	}
}

// lost handles a read error: the peer closed or the network failed.
func (l *link) lost(err error) error {
	st := nd.ErrCanceled
	if isTimeout(err) {
		st = nd.ErrIOTimeout
	}
	l.shutdown(st, nil, true)
	return errStop
}

// fail ends the link because of a protocol or access error in inbound
// traffic: the peer gets term, the engine learns status.
func (l *link) fail(status nd.Status, term *iwarp.Terminate, ulpdu []byte) error {
	if term != nil && ulpdu != nil {
		term.SetOffending(append([]byte(nil), ulpdu...))
	}
	l.shutdown(status, term, true)
	return errStop
}

func (l *link) readFull(b []byte) error {
	_, err := io.ReadFull(l.br, b)
	return err
}

// readFPDU reads one FPDU and acts on it, or goes on with the one in
// progress. In a poll (sr.nonblock) it returns errAgain, with the FPDU
// still in progress, when the rest of it has not arrived yet.
func (l *link) readFPDU(rs *readerState) error {
	raceAcquire()
	defer raceRelease()
	if !rs.cur {
		if err := l.beginFPDU(rs); err != nil {
			return err
		}
	}
	for rs.left > 0 {
		b := rs.chunk()
		if b == nil {
			return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPUntagged, Code: iwarp.TermCodeMessageTooLong}, rs.ulpdu())
		}
		var n int
		var err error
		if len(b) == rs.left && rs.h.Tagged() {
			// The end of a Write's (or Read Response's) payload: its
			// last byte, which a target may poll, is placed last.
			n, err = l.br.ReadEnd(b)
		} else {
			n, err = l.br.Read(b)
		}
		if n > 0 {
			if l.crc {
				rs.crc = iwarp.UpdateCRC(rs.crc, b[:n])
			}
			rs.left -= n
			if !rs.discard {
				rs.off += n
			}
		}
		if err != nil {
			return l.readError(err)
		}
	}
	rs.releaseHold()
	tl := rs.h.TrailerLen()
	if l.sock.nonblock && l.br.Buffered() < tl {
		if _, err := l.br.Peek(tl); err != nil {
			return l.readError(err)
		}
	}
	tr := rs.trailer[:tl]
	if err := l.readFull(tr); err != nil {
		return l.lost(err)
	}
	rs.cur = false
	if err := checkTrailer(tr, rs.h.ULPDULength, rs.crc, l.crc); err != nil {
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeCRCError}, rs.ulpdu())
	}
	switch rs.action {
	case actReadDone:
		l.readDone(rs)
	case actReceiveDone:
		return l.receiveDone(rs, &rs.h)
	case actReadRequest:
		return l.rxReadRequest(rs.body[:rs.plen], rs.ulpdu())
	case actTerminate:
		return l.rxTerminate(rs.body[:rs.plen])
	}
	return nil
}

// readError passes errAgain on (a poll found no more bytes) and ends the
// link on any other read error.
func (l *link) readError(err error) error {
	if errors.Is(err, errAgain) {
		return errAgain
	}
	return l.lost(err)
}

// ulpdu returns the DDP header of the FPDU in progress.
func (rs *readerState) ulpdu() []byte { return rs.hdr[iwarp.FPDULengthSize:rs.hdrLen] }

// beginFPDU reads an FPDU's header (and the body of a Read Request or
// Terminate) and sets where its payload goes. A poll calls it only once
// the header, and the whole FPDU unless its payload is long, is buffered.
func (l *link) beginFPDU(rs *readerState) error {
	hdr := rs.hdr[:iwarp.MinFPDUHeaderSize]
	if err := l.readFull(hdr); err != nil {
		return l.lost(err)
	}
	h, n, err := iwarp.ParseFPDUHeader(hdr)
	if errors.Is(err, iwarp.ErrShortBuffer) && n <= len(rs.hdr) {
		if err := l.readFull(rs.hdr[len(hdr):n]); err != nil {
			return l.lost(err)
		}
		hdr = rs.hdr[:n]
		h, n, err = iwarp.ParseFPDUHeader(hdr)
	}
	if err != nil {
		return l.fail(nd.ErrRemoteError, headerTerminate(err, hdr[iwarp.FPDULengthSize]&0x80 != 0), nil)
	}
	rs.h, rs.hdrLen = h, n
	ulpduHdr := rs.ulpdu()
	rs.crc = 0
	if l.crc {
		rs.crc = iwarp.UpdateCRC(0, hdr[:n])
	}
	plen := h.PayloadLen()
	rs.plen, rs.left, rs.action = plen, 0, actNone
	if _, err := rs.reasm.Accept(&rs.h.SegmentHeader, plen); err != nil {
		return l.fail(nd.ErrRemoteError, sequenceTerminate(err), ulpduHdr)
	}
	l.framesIn.Add(1)
	if !rs.first {
		rs.first = true
		if err := l.firstInbound(&rs.h, plen); err != nil {
			return err
		}
	}
	switch h.Opcode {
	case iwarp.OpWrite:
		err = l.rxWrite(rs, ulpduHdr)
	case iwarp.OpReadResponse:
		err = l.rxReadResponse(rs, ulpduHdr)
		if h.Last {
			rs.action = actReadDone
		}
	case iwarp.OpSend, iwarp.OpSendInvalidate, iwarp.OpSendSE, iwarp.OpSendSEInvalidate:
		err = l.rxSend(rs, ulpduHdr)
		if h.Last {
			rs.action = actReceiveDone
		}
	case iwarp.OpReadRequest, iwarp.OpTerminate:
		if plen > len(rs.body) {
			return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPUntagged, Code: iwarp.TermCodeMessageTooLong}, ulpduHdr)
		}
		if err := l.readFull(rs.body[:plen]); err != nil {
			return l.lost(err)
		}
		if l.crc {
			rs.crc = iwarp.UpdateCRC(rs.crc, rs.body[:plen])
		}
		rs.action = actReadRequest
		if h.Opcode == iwarp.OpTerminate {
			rs.action = actTerminate
		}
	default:
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeUnexpectedOpcode}, ulpduHdr)
	}
	if err != nil {
		return err
	}
	rs.cur = true
	return nil
}

// firstInbound handles the connection's first FPDU: on the passive side it
// must be the ready-to-receive frame when one was agreed, and it releases
// the frames held back until the active side spoke.
func (l *link) firstInbound(h *iwarp.FPDUHeader, plen int) error {
	l.mu.Lock()
	awaiting := l.phase == phaseAwaitRTR
	if l.phase.holding() {
		l.phase.to(phaseRunning)
	}
	events, rtrTimer := l.events, l.rtrTimer
	l.mu.Unlock()
	l.wakeWriter()
	if !awaiting {
		return nil
	}
	rtrTimer.Stop()
	switch {
	case h.Opcode == iwarp.OpWrite && plen == 0,
		h.Opcode == iwarp.OpReadRequest,
		h.Opcode == iwarp.OpSend && plen == 0:
		events.Ready()
		return nil
	case h.Opcode == iwarp.OpTerminate:
		// The active side refused our reply.
		events.Rejected(nil)
		l.shutdown(nd.ErrConnectionRefused, nil, false)
		return errStop
	}
	return l.fail(nd.ErrConnectionAborted, &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeNoMatchingRTR}, nil)
}

func (l *link) endpoint() (*engine.Endpoint, error) {
	if ep := l.ep.Load(); ep != nil {
		return ep, nil
	}
	return nil, l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeCatastrophicStream}, nil)
}

// rxWrite places an RDMA Write segment in the target window.
func (l *link) rxWrite(rs *readerState, ulpdu []byte) error {
	if rs.plen == 0 {
		return nil // zero-length Writes (ready-to-receive frames) name no memory
	}
	ep, err := l.endpoint()
	if err != nil {
		return err
	}
	dst, hold, fault := ep.HoldAccess(rs.h.STag, rs.h.TO, rs.plen, true)
	if fault != engine.FaultNone {
		return l.fail(nd.ErrRemoteError, taggedTerminate(fault), ulpdu)
	}
	rs.hold = hold
	rs.one[0] = nd.SGE{Buffer: dst}
	rs.place(rs.one[:], 0)
	return nil
}

// rxReadResponse places a Read Response segment in the oldest outstanding
// Read's local buffers.
func (l *link) rxReadResponse(rs *readerState, ulpdu []byte) error {
	h, plen := &rs.h, rs.plen
	l.mu.Lock()
	var e *readEntry
	if l.orq.Len() > 0 {
		e = l.orq.At(0)
	}
	// siw (seen on Linux 6.1) may answer a zero-length Read Request
	// that it queued while sending with a response carrying the length
	// and bytes of the work request it sent before (siw_activate_tx
	// leaves sge[0] stale when the IRQ entry has no SGE). Such payload
	// is dropped for the transport's own confirmation Read, and for an
	// application's zero-length Read unless the peer is provider/tcp.
	stale := e != nil && e.size == 0 && (e.wr == nil || !l.peerExact)
	ok := e != nil && h.STag == l.sinkSTag && h.TO == e.sinkTO+uint64(e.placed) &&
		(stale || plen <= e.size-e.placed && (!h.Last || e.placed+plen == e.size))
	var wr *engine.WorkRequest
	placed := 0
	if ok {
		wr, placed = e.wr, e.placed
		e.placed += plen
	}
	l.mu.Unlock()
	if !ok {
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPTagged, Code: iwarp.TermCodeDDPBaseBounds}, ulpdu)
	}
	if plen == 0 {
		return nil
	}
	if wr == nil || stale {
		rs.drop()
		return nil
	}
	rs.place(wr.SGL, placed)
	return nil
}

// rxSend places a Send segment in the oldest posted Receive.
func (l *link) rxSend(rs *readerState, ulpdu []byte) error {
	h, plen := &rs.h, rs.plen
	ep, err := l.endpoint()
	if err != nil {
		return err
	}
	if h.MO == 0 {
		l.expect(iwarp.TermLayerDDP, iwarp.TermDDPUntagged, iwarp.TermCodeInvalidMSNNoBuffer, ulpdu)
		wr, st := ep.TakeReceive(-1)
		l.expectDone()
		if st != nd.Success {
			// No usable Receive: the engine ended the connection, and
			// the Terminate went out.
			return errStop
		}
		rs.recv, rs.recvLen = wr, 0
	}
	wr := rs.recv
	if int(h.MO)+plen > wr.Length {
		rs.recv = nil
		l.expect(iwarp.TermLayerDDP, iwarp.TermDDPUntagged, iwarp.TermCodeMessageTooLong, ulpdu)
		ep.CompleteReceive(wr, 0, nd.ErrBufferOverflow, false)
		return errStop
	}
	rs.recvLen = int(h.MO) + plen
	copy(rs.lastHdr[:], ulpdu)
	rs.place(wr.SGL, int(h.MO))
	return nil
}

// receiveDone completes the Receive a Send filled, after its last segment
// passed the CRC check; the Invalidate variants first invalidate the named
// window.
func (l *link) receiveDone(rs *readerState, h *iwarp.FPDUHeader) error {
	ep := l.ep.Load()
	wr := rs.recv
	rs.recv = nil
	st := nd.Success
	if h.Opcode == iwarp.OpSendInvalidate || h.Opcode == iwarp.OpSendSEInvalidate {
		st = ep.InvalidateWindow(h.InvalidateSTag)
	}
	solicited := h.Opcode == iwarp.OpSendSE || h.Opcode == iwarp.OpSendSEInvalidate
	if st != nd.Success {
		l.expect(iwarp.TermLayerRDMAP, iwarp.TermRDMAPRemoteOperation, iwarp.TermCodeSTagCannotInvalidate, rs.lastHdr[:])
		ep.CompleteReceive(wr, rs.recvLen, st, solicited)
		return errStop
	}
	ep.CompleteReceive(wr, rs.recvLen, nd.Success, solicited)
	return nil
}

// rxReadRequest checks an RDMA Read Request and queues its response.
func (l *link) rxReadRequest(body, ulpdu []byte) error {
	rr, err := iwarp.ParseReadRequest(body)
	if err != nil {
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeCatastrophicStream}, nil)
	}
	offending := func() []byte { return append(append([]byte(nil), ulpdu...), body...) }
	var src []byte
	var hold engine.Hold // released once the response is out (tx.go)
	if rr.Size > 0 {
		ep, err := l.endpoint()
		if err != nil {
			return err
		}
		var fault engine.Fault
		src, hold, fault = ep.HoldAccess(rr.SourceSTag, rr.SourceTO, int(rr.Size), false)
		if fault != engine.FaultNone {
			return l.fail(nd.ErrRemoteError, remoteReadTerminate(fault), offending())
		}
	}
	l.mu.Lock()
	if l.inboundReads >= max(l.ourIRD, 1) {
		l.mu.Unlock()
		hold.Release()
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeCatastrophicStream}, offending())
	}
	l.inboundReads++
	j := l.addJobLocked(jobReadResponse)
	j.src, j.hold, j.sinkSTag, j.sinkTO = src, hold, rr.SinkSTag, rr.SinkTO
	l.mu.Unlock()
	if rr.Size == 0 {
		l.deferTx()
	} else if !l.sendInline() {
		l.wakeWriter()
	}
	return nil
}

// checkTrailer checks the CRC (when on) of an FPDU's pad and CRC trailer,
// given the CRC of the bytes before it. Unlike iwarp.CheckFPDUTrailer it
// ignores what the pad bytes hold, as RFC 5044 tells receivers to (they
// only count for the CRC): siw sends stale buffer bytes there, for example
// in the pad of a 26-byte RDMA Write from rping -S 26.
func checkTrailer(tr []byte, ulpduLen int, crc uint32, crcOn bool) error {
	if !crcOn {
		return nil
	}
	pad := iwarp.FPDUPad(ulpduLen)
	if iwarp.UpdateCRC(crc, tr[:pad]) != binary.LittleEndian.Uint32(tr[pad:pad+iwarp.CRCSize]) {
		return iwarp.ErrFPDUCRC
	}
	return nil
}
