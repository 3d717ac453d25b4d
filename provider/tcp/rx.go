package tcp

import (
	"encoding/binary"
	"errors"
	"io"
	"time"

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

// readerState is what only the reader goroutine touches.
type readerState struct {
	hdr       [iwarp.MinFPDUHeaderSize + 8]byte
	body      [128]byte // Read Request and Terminate bodies
	trailer   [iwarp.MaxFPDUTrailerSize]byte
	reasm     iwarp.Reassembler
	first     bool                // the first FPDU arrived
	recv      *engine.WorkRequest // the Receive the current Send fills
	recvLen   int
	lastHdr   [iwarp.UntaggedHeaderSize]byte // the last Send segment's DDP header
	confirmed []sentEntry
}

// readLoop parses inbound FPDUs and places their payload until the link
// ends.
func (l *link) readLoop() {
	rs := &readerState{confirmed: make([]sentEntry, 0, 64)}
	for {
		if err := l.readFPDU(rs); err != nil {
			break
		}
	}
	if rs.recv != nil {
		if ep := l.ep.Load(); ep != nil {
			ep.CompleteReceive(rs.recv, 0, nd.ErrCanceled, false)
		}
		rs.recv = nil
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

// readFPDU reads one FPDU and acts on it.
func (l *link) readFPDU(rs *readerState) error {
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
	ulpduHdr := hdr[iwarp.FPDULengthSize:n]
	crc := uint32(0)
	if l.crc {
		crc = iwarp.UpdateCRC(0, hdr[:n])
	}
	plen := h.PayloadLen()
	if _, err := rs.reasm.Accept(&h.SegmentHeader, plen); err != nil {
		return l.fail(nd.ErrRemoteError, sequenceTerminate(err), ulpduHdr)
	}
	l.rx.Add(1)
	raceAcquire()
	defer raceRelease()
	if !rs.first {
		rs.first = true
		if err := l.firstInbound(&h, plen); err != nil {
			return err
		}
	}

	action := actNone
	switch h.Opcode {
	case iwarp.OpWrite:
		err = l.rxWrite(&h, plen, &crc, ulpduHdr)
	case iwarp.OpReadResponse:
		err = l.rxReadResponse(&h, plen, &crc, ulpduHdr)
		if h.Last {
			action = actReadDone
		}
	case iwarp.OpSend, iwarp.OpSendInvalidate, iwarp.OpSendSE, iwarp.OpSendSEInvalidate:
		err = l.rxSend(rs, &h, plen, &crc, ulpduHdr)
		if h.Last {
			action = actReceiveDone
		}
	case iwarp.OpReadRequest, iwarp.OpTerminate:
		if plen > len(rs.body) {
			return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPUntagged, Code: iwarp.TermCodeMessageTooLong}, ulpduHdr)
		}
		if err := l.readFull(rs.body[:plen]); err != nil {
			return l.lost(err)
		}
		if l.crc {
			crc = iwarp.UpdateCRC(crc, rs.body[:plen])
		}
		action = actReadRequest
		if h.Opcode == iwarp.OpTerminate {
			action = actTerminate
		}
	default:
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeUnexpectedOpcode}, ulpduHdr)
	}
	if err != nil {
		return err
	}
	tr := rs.trailer[:h.TrailerLen()]
	if err := l.readFull(tr); err != nil {
		return l.lost(err)
	}
	if err := checkTrailer(tr, h.ULPDULength, crc, l.crc); err != nil {
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeCRCError}, ulpduHdr)
	}
	switch action {
	case actReadDone:
		l.readDone(rs)
	case actReceiveDone:
		return l.receiveDone(rs, &h)
	case actReadRequest:
		return l.rxReadRequest(rs.body[:plen], ulpduHdr)
	case actTerminate:
		return l.rxTerminate(rs.body[:plen])
	}
	return nil
}

// firstInbound handles the connection's first FPDU: on the passive side it
// must be the ready-to-receive frame when one was agreed, and it releases
// the frames held back until the active side spoke.
func (l *link) firstInbound(h *iwarp.FPDUHeader, plen int) error {
	l.mu.Lock()
	awaiting := l.awaitRTR
	l.awaitRTR = false
	l.holdTx = false
	events := l.events
	l.mu.Unlock()
	l.ring()
	if !awaiting {
		return nil
	}
	l.conn.SetReadDeadline(time.Time{})
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

// readInto reads len(dst) payload bytes straight into dst.
func (l *link) readInto(dst []byte, crc *uint32) error {
	if err := l.readFull(dst); err != nil {
		return l.lost(err)
	}
	if l.crc {
		*crc = iwarp.UpdateCRC(*crc, dst)
	}
	return nil
}

// readIntoSGL reads n payload bytes into the entries of sgl, starting off
// bytes into them.
func (l *link) readIntoSGL(sgl []nd.SGE, off, n int, crc *uint32) error {
	for i := range sgl {
		if n == 0 {
			return nil
		}
		b := sgl[i].Buffer
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b = b[off:]
		off = 0
		if len(b) > n {
			b = b[:n]
		}
		if err := l.readInto(b, crc); err != nil {
			return err
		}
		n -= len(b)
	}
	return nil
}

func (l *link) endpoint() (*engine.Endpoint, error) {
	if ep := l.ep.Load(); ep != nil {
		return ep, nil
	}
	return nil, l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeCatastrophicStream}, nil)
}

// rxWrite places an RDMA Write segment in the target window.
func (l *link) rxWrite(h *iwarp.FPDUHeader, plen int, crc *uint32, ulpdu []byte) error {
	if plen == 0 {
		return nil // zero-length Writes (ready-to-receive frames) name no memory
	}
	ep, err := l.endpoint()
	if err != nil {
		return err
	}
	dst, fault := ep.AccessFault(h.STag, h.TO, plen, true)
	if fault != engine.FaultNone {
		return l.fail(nd.ErrRemoteError, taggedTerminate(fault), ulpdu)
	}
	return l.readInto(dst, crc)
}

// rxReadResponse places a Read Response segment in the oldest outstanding
// Read's local buffers.
func (l *link) rxReadResponse(h *iwarp.FPDUHeader, plen int, crc *uint32, ulpdu []byte) error {
	l.mu.Lock()
	var e *readEntry
	if l.orq.len() > 0 {
		e = l.orq.at(0)
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
		var scratch [512]byte
		for plen > 0 {
			n := min(plen, len(scratch))
			if err := l.readInto(scratch[:n], crc); err != nil {
				return err
			}
			plen -= n
		}
		return nil
	}
	return l.readIntoSGL(wr.SGL, placed, plen, crc)
}

// rxSend places a Send segment in the oldest posted Receive.
func (l *link) rxSend(rs *readerState, h *iwarp.FPDUHeader, plen int, crc *uint32, ulpdu []byte) error {
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
	return l.readIntoSGL(wr.SGL, int(h.MO), plen, crc)
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
	if rr.Size > 0 {
		ep, err := l.endpoint()
		if err != nil {
			return err
		}
		var fault engine.Fault
		src, fault = ep.AccessFault(rr.SourceSTag, rr.SourceTO, int(rr.Size), false)
		if fault != engine.FaultNone {
			return l.fail(nd.ErrRemoteError, remoteReadTerminate(fault), offending())
		}
	}
	l.mu.Lock()
	if l.inboundReads >= max(l.ourIRD, 1) {
		l.mu.Unlock()
		return l.fail(nd.ErrRemoteError, &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeCatastrophicStream}, offending())
	}
	l.inboundReads++
	l.jobs = append(l.jobs, job{kind: jobReadResponse, src: src, sinkSTag: rr.SinkSTag, sinkTO: rr.SinkTO})
	l.mu.Unlock()
	if rr.Size == 0 {
		l.sr.deferRing()
	} else {
		l.ring()
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
