package tcp

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

// partialInlineWrites counts inline sends the socket took only in part
// (for tests: the path is rare).
var partialInlineWrites atomic.Uint64

// sender builds one write. The writer gathers: header and trailer bytes in
// scratch, payload slices pointing into the caller's registered memory. An
// inline send (flat set) copies everything into flat instead.
type sender struct {
	l       *link
	bufs    net.Buffers
	iov     [][]byte // backing array of bufs
	scratch []byte
	bytes   int
	done    []job // requests that complete once the write is out
	flat    []byte
	spans   [][]byte // flatFPDU's
	inline  bool
}

// newSender returns a link's sender. Its buffers grow as the link's
// traffic needs them and keep their size, so that an idle link that never
// sent much holds little, and a busy one allocates nothing per write.
func newSender(l *link) *sender { return &sender{l: l} }

// room reports whether another FPDU of up to pieces payload pieces fits,
// with scratch bytes of header, trailer and body.
func (s *sender) room(pieces, scratch int) bool {
	return len(s.iov)+pieces+2 <= maxIovecs && len(s.scratch)+scratch <= scratchSize && s.bytes < maxBatchBytes
}

// flush writes what was gathered.
func (s *sender) flush() error {
	if len(s.iov) == 0 {
		return nil
	}
	s.bufs = s.iov
	long := s.bytes >= rawMax
	if long {
		s.l.t.progress.copying.Add(1)
	}
	_, err := s.bufs.WriteTo(s.l.conn)
	if long {
		s.l.t.progress.copying.Add(-1)
	}
	clear(s.iov)
	s.iov, s.scratch, s.bytes = s.iov[:0], s.scratch[:0], 0
	return err
}

// ensure flushes unless an FPDU of up to pieces payload pieces and scratch
// bytes of scratch fits. An inline send has room for everything.
func (s *sender) ensure(pieces, scratch int) error {
	if s.inline || s.room(pieces, scratch) {
		return nil
	}
	return s.flush()
}

// fpdu adds one FPDU: header h, then n payload bytes taken from pieces
// (starting off bytes into them).
func (s *sender) fpdu(h *iwarp.SegmentHeader, pieces [][]byte, off, n int) error {
	if s.inline {
		return s.flatFPDU(h, pieces, off, n)
	}
	if err := s.ensure(len(pieces), fpduScratch); err != nil {
		return err
	}
	ulpdu := h.Len() + n
	start := len(s.scratch)
	var err error
	s.scratch, err = iwarp.AppendFPDUHeader(s.scratch, h, n)
	if err != nil {
		return err
	}
	hdr := s.scratch[start:]
	s.iov = append(s.iov, hdr)
	crc := uint32(0)
	if s.l.crc {
		crc = iwarp.UpdateCRC(0, hdr)
	}
	first := len(s.iov)
	s.iov = appendSpan(s.iov, pieces, off, n)
	for _, p := range s.iov[first:] {
		s.bytes += len(p)
		if s.l.crc {
			crc = iwarp.UpdateCRC(crc, p)
		}
	}
	start = len(s.scratch)
	s.scratch = iwarp.AppendFPDUTrailer(s.scratch, ulpdu, crc, s.l.crc)
	s.iov = append(s.iov, s.scratch[start:])
	return nil
}

// appendSpan appends to dst the parts of pieces that hold n bytes from
// offset off on.
func appendSpan(dst [][]byte, pieces [][]byte, off, n int) [][]byte {
	for _, p := range pieces {
		if n == 0 {
			break
		}
		if off >= len(p) {
			off -= len(p)
			continue
		}
		p = p[off:]
		off = 0
		if len(p) > n {
			p = p[:n]
		}
		n -= len(p)
		dst = append(dst, p)
	}
	return dst
}

// flatFPDU is fpdu for an inline send: the FPDU is copied into flat.
func (s *sender) flatFPDU(h *iwarp.SegmentHeader, pieces [][]byte, off, n int) error {
	ulpdu := h.Len() + n
	start := len(s.flat)
	var err error
	s.flat, err = iwarp.AppendFPDUHeader(s.flat, h, n)
	if err != nil {
		return err
	}
	s.spans = appendSpan(s.spans[:0], pieces, off, n)
	for _, p := range s.spans {
		s.flat = append(s.flat, p...)
		s.bytes += len(p)
	}
	clear(s.spans)
	crc := uint32(0)
	if s.l.crc {
		crc = iwarp.UpdateCRC(0, s.flat[start:])
	}
	s.flat = iwarp.AppendFPDUTrailer(s.flat, ulpdu, crc, s.l.crc)
	return nil
}

// flushInline writes what an inline send built with one non-blocking
// write. What the socket does not take becomes the link's tail, which the
// writer finishes (tailLeft true); the batch's requests then complete once
// it has. txMu held.
func (s *sender) flushInline() (tailLeft bool, err error) {
	l := s.l
	if len(s.flat) == 0 {
		return false, nil
	}
	n, err := l.sock.writeNow(s.flat)
	s.scratch, s.bytes = s.scratch[:0], 0
	if err != nil {
		s.flat = s.flat[:0]
		return false, err
	}
	if n == len(s.flat) {
		s.flat = s.flat[:0]
		return false, nil
	}
	// The flat buffer keeps the tail: nothing is sent inline until the
	// writer wrote it.
	partialInlineWrites.Add(1)
	l.tail = s.flat[n:]
	l.mu.Lock()
	l.tailPending = true
	l.mu.Unlock()
	l.wakeWriter()
	return true, nil
}

// message sends one message as segments of at most the configured size.
func (s *sender) message(first iwarp.SegmentHeader, pieces [][]byte, length int) error {
	limit := iwarp.SegmentPayloadLimit(s.l.t.p.cfg.MaxFPDU, first.Tagged())
	seg, err := iwarp.NewSegmenter(first, length, limit)
	if err != nil {
		return err
	}
	for {
		h, off, n, ok := seg.Next()
		if !ok {
			return nil
		}
		if err := s.fpdu(&h, pieces, off, n); err != nil {
			return err
		}
	}
}

// writerState is the transmitter's message numbering; the holder of the
// link's txMu owns it.
type writerState struct {
	sendMSN, readMSN uint32
	pieces           [][]byte
}

// writeLoop sends queued jobs until the link closes.
func (l *link) writeLoop() {
	defer l.wg.Done()
	if l.seams != nil {
		l.seams.writerStarts(l)
	}
	for {
		l.mu.Lock()
		for l.phase != phaseClosed && (l.phase.holding() || (len(l.jobs) == 0 && !l.confirmDueLocked() && !l.tailPending)) {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		closing := l.phase == phaseClosed
		l.mu.Unlock()
		l.txMu.Lock()
		if closing {
			l.writerClose()
			l.txMu.Unlock()
			return
		}
		l.transmitLocked(false)
		l.txMu.Unlock()
	}
}

// writerClose finishes what is half sent, sends the Terminate (if any) and
// closes the sending side; txMu held.
func (l *link) writerClose() {
	if l.seams != nil {
		l.seams.closing(l.active)
	}
	st := nd.Success
	if len(l.tail) > 0 {
		l.conn.SetWriteDeadline(time.Now().Add(time.Second))
		if l.writeTail() != nil {
			st = nd.ErrCanceled
		}
	}
	l.finishSent(l.snd, st)
	l.mu.Lock()
	term := l.term
	l.mu.Unlock()
	// The queued jobs are dropped, but not a ready-to-receive frame a
	// foreign peer still waits for (terminate.go's rtrBeforeClose).
	b := l.rtrBeforeClose(nil)
	if term != nil {
		var err error
		if b, err = iwarp.AppendTerminateFPDU(b, 1, term, l.crc); err != nil {
			b = nil
		}
	}
	if len(b) > 0 {
		l.conn.SetWriteDeadline(time.Now().Add(time.Second))
		l.conn.Write(b)
	}
	l.conn.CloseWrite()
	l.finished()
}

// sendInline sends the queued jobs on the calling goroutine when they are
// few and small, the writer is not busy and no earlier send is half out;
// it reports whether it did (false: the writer must).
func (l *link) sendInline() bool {
	if !rawIO || !l.txMu.TryLock() {
		return false
	}
	sent := l.transmitLocked(true)
	l.txMu.Unlock()
	return sent
}

// transmitLocked sends the queued jobs (and a confirmation Read when one
// is due), gathered into one write by the writer (inline false) or copied
// into one non-blocking write (inline true, which declines when the batch
// is not small or the link is not ready for it, and returns false). txMu
// held.
func (l *link) transmitLocked(inline bool) bool {
	s := l.snd
	if !inline && len(l.tail) > 0 {
		if err := l.writeTail(); err != nil {
			l.sendFailed()
			return true
		}
		l.finishSent(s, nd.Success)
	}
	// A held-back response goes in this batch: its deferral ends before
	// the batch is taken. Ended after, it could end the deferral of a
	// response queued just after the batch was taken, which then would
	// wait for a writer nobody wakes (an inline send does not). When the
	// inline send declines below, its caller wakes the writer.
	l.takeDeferred()
	l.mu.Lock()
	if inline && !l.inlineOKLocked() {
		l.mu.Unlock()
		return false
	}
	batch := l.jobs
	l.jobs, l.txBatch = l.txBatch[:0], batch
	l.mu.Unlock()
	if p := installedSeams.Load(); p != nil {
		(*p).batchTaken(l, inline)
	}
	raceAcquire()
	s.inline = inline
	err := l.sendJobs(s, &l.wst, batch)
	if err == nil {
		err = l.maybeConfirm(s, &l.wst)
	}
	tailLeft := false
	if inline {
		if err == nil {
			tailLeft, err = s.flushInline()
		}
		s.inline = false
	} else if err == nil {
		err = s.flush()
	}
	raceRelease()
	for i := range batch {
		batch[i].hold.Release() // a Read response's bytes are out, or dropped
	}
	clear(batch)
	switch {
	case err != nil:
		s.flat = s.flat[:0]
		l.sendFailed()
	case !tailLeft:
		l.finishSent(s, nd.Success)
	}
	return true
}

// writeTail writes, blocking, the bytes an inline send left (l.tail);
// txMu held. The send's requests wait in the sender for the caller to
// complete them.
func (l *link) writeTail() error {
	_, err := l.conn.Write(l.tail)
	l.tail = nil
	l.snd.flat = l.snd.flat[:0]
	l.mu.Lock()
	l.tailPending = false
	l.mu.Unlock()
	return err
}

// sendFailed ends the link after a failed write; the requests of the
// write complete ErrCanceled. txMu held.
func (l *link) sendFailed() {
	l.shutdown(nd.ErrCanceled, nil, true)
	l.finishSent(l.snd, nd.ErrCanceled)
}

// inlineOKLocked reports whether the queued jobs may be sent inline: the
// writer runs, nothing holds transmission back, no inline send is half out,
// and the batch is small. l.mu held.
func (l *link) inlineOKLocked() bool {
	if l.phase != phaseRunning || !l.writerStarted || l.tailPending || len(l.jobs) > inlineJobs {
		return false
	}
	n := 0
	for i := range l.jobs {
		j := &l.jobs[i]
		switch j.kind {
		case jobWR:
			n += j.wr.Length
		case jobReadResponse:
			n += len(j.src)
		}
	}
	return n <= inlineBytes
}

// sendJobs encodes a batch of jobs.
func (l *link) sendJobs(s *sender, w *writerState, batch []job) error {
	for i := range batch {
		j := &batch[i]
		var err error
		switch j.kind {
		case jobRTR:
			err = l.sendRTR(s, w)
		case jobRTRNudge:
			err = l.sendRTRNudge(s)
		case jobReadResponse:
			w.pieces = append(w.pieces[:0], j.src)
			err = s.message(iwarp.SegmentHeader{Opcode: iwarp.OpReadResponse, STag: j.sinkSTag, TO: j.sinkTO}, w.pieces, len(j.src))
			l.mu.Lock()
			l.inboundReads--
			l.mu.Unlock()
		case jobWR:
			err = l.sendWR(s, w, j)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendWR encodes one Send, Write or Read of the endpoint.
func (l *link) sendWR(s *sender, w *writerState, j *job) error {
	wr := j.wr
	w.pieces = w.pieces[:0]
	for i := range wr.SGL {
		w.pieces = append(w.pieces, wr.SGL[i].Buffer)
	}
	switch wr.Op {
	case engine.OpSend, engine.OpSendInvalidate:
		w.sendMSN++
		h := iwarp.SegmentHeader{Opcode: sendOpcode(wr), QN: iwarp.QNSend, MSN: w.sendMSN}
		if wr.Op == engine.OpSendInvalidate {
			h.InvalidateSTag = wr.Remote.Token
		}
		if err := s.message(h, w.pieces, wr.Length); err != nil {
			return err
		}
		l.sent(s, j, w.sendMSN)
	case engine.OpWrite:
		h := iwarp.SegmentHeader{Opcode: iwarp.OpWrite, STag: wr.Remote.Token, TO: wr.Remote.Base + wr.Offset}
		if err := s.message(h, w.pieces, wr.Length); err != nil {
			return err
		}
		l.sent(s, j, 0)
	case engine.OpRead:
		w.readMSN++
		return l.sendRead(s, w, wr, j.seq, wr.Length)
	}
	return nil
}

func sendOpcode(wr *engine.WorkRequest) iwarp.Opcode {
	se := wr.Flags&nd.FlagSendAndSolicitEvent != 0
	switch {
	case wr.Op == engine.OpSendInvalidate && se:
		return iwarp.OpSendSEInvalidate
	case wr.Op == engine.OpSendInvalidate:
		return iwarp.OpSendInvalidate
	case se:
		return iwarp.OpSendSE
	}
	return iwarp.OpSend
}

// sendRead sends a Read Request (wr nil: the transport's own confirmation
// Read of size 0) and records it in the outstanding read queue.
func (l *link) sendRead(s *sender, w *writerState, wr *engine.WorkRequest, seq uint64, size int) error {
	e := readEntry{wr: wr, seq: seq, msn: w.readMSN, size: size, sinkTO: uint64(w.readMSN) << 32}
	rr := iwarp.ReadRequest{SinkSTag: l.sinkSTag, SinkTO: e.sinkTO, Size: uint32(size), SourceSTag: iwarp.RTRWriteSTag}
	if wr != nil {
		rr.SourceSTag, rr.SourceTO = wr.Remote.Token, wr.Remote.Base+wr.Offset
	}
	// The body goes in the sender's scratch, which must have room for it
	// and the FPDU's header and trailer without flushing in between.
	if err := s.ensure(1, iwarp.ReadRequestSize+fpduScratch); err != nil {
		return err
	}
	start := len(s.scratch)
	s.scratch = iwarp.AppendReadRequest(s.scratch, &rr)
	w.pieces = append(w.pieces[:0], s.scratch[start:])
	h := iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: w.readMSN}
	if err := s.fpdu(&h, w.pieces, 0, iwarp.ReadRequestSize); err != nil {
		return err
	}
	l.mu.Lock()
	e.upTo = l.sentSeq
	l.coveredSeq = l.sentSeq
	l.silentDue = false
	l.orq.Push(e)
	if wr == nil {
		l.confirmsOut++
	}
	l.mu.Unlock()
	return nil
}

// sendRTR sends the ready-to-receive frame the passive side chose.
func (l *link) sendRTR(s *sender, w *writerState) error {
	l.mu.Lock()
	l.rtrSent = true
	l.armRTRNudgeLocked()
	l.mu.Unlock()
	if l.rtr&iwarp.RTRWrite != 0 {
		h := iwarp.SegmentHeader{Opcode: iwarp.OpWrite, Last: true, STag: iwarp.RTRWriteSTag}
		return s.fpdu(&h, nil, 0, 0)
	}
	if l.rtr&iwarp.RTRRead != 0 {
		w.readMSN++
		return l.sendRead(s, w, nil, 0, 0)
	}
	w.sendMSN++
	h := iwarp.SegmentHeader{Opcode: iwarp.OpSend, Last: true, QN: iwarp.QNSend, MSN: w.sendMSN}
	return s.fpdu(&h, nil, 0, 0)
}

// sent records a Send or Write that is in the batch: it waits for
// confirmation when the peer can be asked for one, and otherwise completes
// when the batch is written.
func (l *link) sent(s *sender, j *job, msn uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.confirming() {
		l.sentSeq++
		l.unconfirmed.Push(sentEntry{wr: j.wr, seq: j.seq, n: l.sentSeq, msn: msn})
		if j.wr.Flags&nd.FlagSilentSuccess == 0 {
			l.urgentSeq = l.sentSeq
		} else {
			l.sentSilentLocked()
		}
		return
	}
	s.done = append(s.done, *j)
}

// finishSent completes the requests of a written batch that need no
// confirmation, with st (ErrCanceled: the write failed).
func (l *link) finishSent(s *sender, st nd.Status) {
	if len(s.done) == 0 {
		return
	}
	ep := l.ep.Load()
	for i := range s.done {
		ep.CompleteOutbound(s.done[i].wr, s.done[i].seq, st)
	}
	clear(s.done)
	s.done = s.done[:0]
}
