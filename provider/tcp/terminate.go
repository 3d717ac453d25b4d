package tcp

import (
	"errors"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

// headerTerminate is the Terminate for an FPDU whose header did not parse;
// tagged is the header's T bit (RFC 5041 has a version code per buffer
// model).
func headerTerminate(err error, tagged bool) *iwarp.Terminate {
	switch {
	case errors.Is(err, iwarp.ErrDDPVersion) && tagged:
		return &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPTagged, Code: iwarp.TermCodeDDPTaggedVersion}
	case errors.Is(err, iwarp.ErrDDPVersion):
		return &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPUntagged, Code: iwarp.TermCodeDDPUntaggedVersion}
	case errors.Is(err, iwarp.ErrRDMAPVersion):
		return &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeRDMAPVersion}
	case errors.Is(err, iwarp.ErrOpcode):
		return &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteOperation, Code: iwarp.TermCodeUnexpectedOpcode}
	}
	return &iwarp.Terminate{Layer: iwarp.TermLayerLLP, EType: iwarp.TermLLPMPA, Code: iwarp.TermCodeLocalCatastrophic}
}

// sequenceTerminate is the Terminate for a segment out of DDP sequence.
func sequenceTerminate(err error) *iwarp.Terminate {
	t := &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPUntagged}
	switch {
	case errors.Is(err, iwarp.ErrInvalidQN):
		t.Code = iwarp.TermCodeInvalidQN
	case errors.Is(err, iwarp.ErrInvalidMSN):
		t.Code = iwarp.TermCodeInvalidMSNRange
	case errors.Is(err, iwarp.ErrInvalidMO), errors.Is(err, iwarp.ErrMessageTooLong):
		t.Code = iwarp.TermCodeInvalidMO
	case errors.Is(err, iwarp.ErrTOWrap):
		t.EType, t.Code = iwarp.TermDDPTagged, iwarp.TermCodeDDPTOWrap
	case errors.Is(err, iwarp.ErrTaggedContinuation):
		t.EType, t.Code = iwarp.TermDDPTagged, iwarp.TermCodeDDPBaseBounds
	default:
		t.Layer, t.EType, t.Code = iwarp.TermLayerDDP, iwarp.TermDDPCatastrophic, iwarp.TermCodeDDPCatastrophic
	}
	return t
}

// taggedTerminate is the DDP Terminate for a refused RDMA Write.
func taggedTerminate(f engine.Fault) *iwarp.Terminate {
	t := &iwarp.Terminate{Layer: iwarp.TermLayerDDP, EType: iwarp.TermDDPTagged}
	switch f {
	case engine.FaultInvalidToken:
		t.Code = iwarp.TermCodeDDPInvalidSTag
	case engine.FaultNotAssociated:
		t.Code = iwarp.TermCodeDDPSTagNotAssociated
	case engine.FaultWrap:
		t.Code = iwarp.TermCodeDDPTOWrap
	case engine.FaultRights:
		// DDP has no rights code; RDMAP's remote protection one says it.
		t.Layer, t.EType, t.Code = iwarp.TermLayerRDMAP, iwarp.TermRDMAPRemoteProtection, iwarp.TermCodeAccessRights
	default:
		t.Code = iwarp.TermCodeDDPBaseBounds
	}
	return t
}

// remoteReadTerminate is the RDMAP Terminate for a refused Read Request.
func remoteReadTerminate(f engine.Fault) *iwarp.Terminate {
	t := &iwarp.Terminate{Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteProtection}
	switch f {
	case engine.FaultInvalidToken:
		t.Code = iwarp.TermCodeInvalidSTag
	case engine.FaultNotAssociated:
		t.Code = iwarp.TermCodeSTagNotAssociated
	case engine.FaultRights:
		t.Code = iwarp.TermCodeAccessRights
	case engine.FaultWrap:
		t.Code = iwarp.TermCodeTOWrap
	default:
		t.Code = iwarp.TermCodeBaseBounds
	}
	return t
}

// protectionError reports whether a Terminate says the peer refused a
// memory access (as opposed to a missing Receive or a protocol error).
func protectionError(t *iwarp.Terminate) bool {
	switch t.Layer {
	case iwarp.TermLayerRDMAP:
		return t.EType == iwarp.TermRDMAPRemoteProtection
	case iwarp.TermLayerDDP:
		return t.EType == iwarp.TermDDPTagged
	}
	return false
}

// protectionStatus is the status a Terminate gives the request it names:
// ErrAccessViolation for a refused memory access, else ErrRemoteError.
func protectionStatus(t *iwarp.Terminate) nd.Status {
	if protectionError(t) {
		return nd.ErrAccessViolation
	}
	return nd.ErrRemoteError
}

// rxTerminate handles the peer's Terminate: the request it names (by the
// copied DDP header) completes with the matching ND status, the Sends and
// Writes before it completed at the peer, and the link ends.
func (l *link) rxTerminate(body []byte) error {
	t, err := iwarp.ParseTerminate(body)
	if err == nil {
		l.logTerminate("Terminate received", &t, protectionStatus(&t))
	} else {
		l.logf("malformed Terminate received", err)
	}
	culprit := iwarp.SegmentHeader{}
	known := false
	if err == nil && t.DDPHeader != nil {
		if h, _, herr := iwarp.ParseSegmentHeader(t.DDPHeader); herr == nil {
			culprit, known = h, true
		}
	}
	status := nd.ErrRemoteError
	if err == nil {
		status = protectionStatus(&t)
	}
	ep := l.ep.Load()
	l.mu.Lock()
	var done []sentEntry
	var blamed *sentEntry
	var read *readEntry
	switch {
	case known && culprit.Opcode == iwarp.OpReadRequest,
		!known && status == nd.ErrAccessViolation && t.Layer == iwarp.TermLayerRDMAP:
		read = l.takeRefusedReadLocked(culprit, known)
	case known:
		done, blamed = l.takeBlamedLocked(culprit)
	}
	l.mu.Unlock()
	if ep != nil {
		for _, e := range done {
			ep.CompleteOutbound(e.wr, e.seq, nd.Success)
		}
		switch {
		case blamed != nil:
			if !culprit.Tagged() {
				status = nd.ErrRemoteError
			}
			ep.CompleteOutbound(blamed.wr, blamed.seq, status)
		case read != nil:
			ep.CompleteOutbound(read.wr, read.seq, status)
		}
	}
	l.shutdown(status, nil, true)
	return errStop
}

// takeRefusedReadLocked returns the waiting Read a Terminate about a Read
// Request names (nil: none waits), taken from the queue's care: the caller
// completes it. The peer serves Reads in order: every Read before the
// refused one was answered in full, so when the Terminate copies no header
// (known false), or one that names no Read waiting (Linux 6.1's siw copies
// one whose MSN field holds the Read's size), the oldest Read waiting is
// it. l.mu held.
func (l *link) takeRefusedReadLocked(culprit iwarp.SegmentHeader, known bool) *readEntry {
	var e *readEntry
	for i := 0; known && i < l.orq.Len(); i++ {
		if x := l.orq.At(i); x.msn == culprit.MSN && x.wr != nil {
			e = x
			break
		}
	}
	if e == nil && l.orq.Len() > 0 && l.orq.At(0).wr != nil {
		e = l.orq.At(0)
	}
	if e == nil {
		return nil
	}
	r := *e
	e.wr = nil // completed by the caller, not by cleanup
	return &r
}

// takeBlamedLocked takes from the unconfirmed Sends and Writes, oldest
// first, the ones before the message culprit names (done: they completed at
// the peer) and that message (blamed). When none matches, the Terminate is
// not about a message still waiting: all stay for cleanup, and both results
// are nil. l.mu held.
func (l *link) takeBlamedLocked(culprit iwarp.SegmentHeader) (done []sentEntry, blamed *sentEntry) {
	for l.unconfirmed.Len() > 0 {
		e := l.unconfirmed.Pop()
		match := false
		if culprit.Tagged() {
			match = e.msn == 0 && e.wr.Remote.Token == culprit.STag
		} else {
			match = e.msn == culprit.MSN && e.msn != 0
		}
		if match {
			return done, &e
		}
		done = append(done, e)
	}
	for _, e := range done { // the queue is empty: back in their order
		l.unconfirmed.Push(e)
	}
	return nil, nil
}

// rtrBeforeClose appends to dst the ready-to-receive frame an active link
// still owes a foreign peer when it ends before the frame went out: before
// its writer started (a Reject after Connect, a failure before
// CompleteConnect), or after CompleteConnect queued the frame but before
// the writer took it (a Disconnect or a failure at once), for the
// Terminate or the close that follows. Called where nothing else writes:
// with the writer not started, or by the writer at its close (txMu).
//
// A responder in MPA v2 peer-to-peer mode waits for the RTR as the first
// frame. Linux's siw (through 6.1 at least) reports the connection
// established to iw_cm only once that first frame went through: a
// Terminate or any frame it refuses instead makes it drop the connection
// and report CLOSE for an iw_cm id still waiting for ESTABLISHED, and
// iw_cm's cm_close_handler stops the kernel with BUG()
// (docs/iwcm-close-bug.md). A siw initiator sends no RTR, so its peer is
// always established before a Terminate; with the RTR first this link's
// peer is too, and then sees the connection end. A provider/tcp peer
// takes a Terminate in place of the RTR as a refusal, so it gets none;
// godirect's verbs provider answers through the kernel's or the adapter's
// iWARP stack, and gets the RTR first like any other.
func (l *link) rtrBeforeClose(dst []byte) []byte {
	l.mu.Lock()
	rtr := l.rtr
	owed := l.active && rtr != 0 && !l.rtrSent && !l.peerExact
	if owed {
		l.rtrSent = true // written once
	}
	l.mu.Unlock()
	if !owed {
		return dst
	}
	t := iwarp.RTRSend // as sendRTR chooses
	switch {
	case rtr&iwarp.RTRWrite != 0:
		t = iwarp.RTRWrite
	case rtr&iwarp.RTRRead != 0:
		t = iwarp.RTRRead
	}
	b, err := iwarp.AppendRTR(dst, t, l.crc)
	if err != nil {
		return dst
	}
	return b
}
