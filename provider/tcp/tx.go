package tcp

import (
	"net"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

const (
	maxIovecs     = 512      // iovecs per writev
	scratchSize   = 32 << 10 // header and trailer bytes per writev
	maxBatchBytes = 4 << 20  // payload bytes per writev
	fpduScratch   = 64       // scratch bytes that one FPDU header and trailer need at most
)

// sender builds one gathered write: header and trailer bytes in scratch,
// payload slices pointing into the caller's registered memory.
type sender struct {
	l       *link
	bufs    net.Buffers
	iov     [][]byte // backing array of bufs
	scratch []byte
	bytes   int
	done    []job // requests that complete once the write is out
}

func newSender(l *link) *sender {
	return &sender{
		l:       l,
		iov:     make([][]byte, 0, maxIovecs),
		scratch: make([]byte, 0, scratchSize),
		done:    make([]job, 0, 64),
	}
}

// room reports whether another FPDU of up to pieces payload pieces fits,
// with scratch bytes of header, trailer and body.
func (s *sender) room(pieces, scratch int) bool {
	return len(s.iov)+pieces+2 <= cap(s.iov) && len(s.scratch)+scratch <= cap(s.scratch) && s.bytes < maxBatchBytes
}

// flush writes what was gathered.
func (s *sender) flush() error {
	if len(s.iov) == 0 {
		return nil
	}
	s.bufs = s.iov
	// A long write copies inside the kernel for a while: pollers on this
	// processor yield to it meanwhile (Poll, spinReader).
	long := s.bytes >= longRead
	if long {
		s.l.inSyscall.Add(1)
	}
	_, err := s.bufs.WriteTo(s.l.conn)
	if long {
		s.l.inSyscall.Add(-1)
	}
	clear(s.iov)
	s.iov, s.scratch, s.bytes = s.iov[:0], s.scratch[:0], 0
	return err
}

// ensure flushes unless an FPDU of up to pieces payload pieces and scratch
// bytes of scratch fits.
func (s *sender) ensure(pieces, scratch int) error {
	if s.room(pieces, scratch) {
		return nil
	}
	return s.flush()
}

// fpdu adds one FPDU: header h, then n payload bytes taken from pieces
// (starting off bytes into them).
func (s *sender) fpdu(h *iwarp.SegmentHeader, pieces [][]byte, off, n int) error {
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
		s.iov = append(s.iov, p)
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

// writer state that only the writer goroutine touches.
type writerState struct {
	sendMSN, readMSN uint32
	pieces           [][]byte
}

// writeLoop sends queued jobs until the link closes.
func (l *link) writeLoop() {
	defer l.wg.Done()
	s := newSender(l)
	var w writerState
	w.pieces = make([][]byte, 0, 32)
	var batch []job
	for {
		l.mu.Lock()
		for !l.closing && (l.holdTx || (len(l.jobs) == 0 && !l.confirmDueLocked())) {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if l.closing {
			term := l.term
			l.mu.Unlock()
			s.flush()
			if term != nil {
				if b, err := iwarp.AppendTerminateFPDU(nil, 1, term, l.crc); err == nil {
					l.conn.SetWriteDeadline(time.Now().Add(time.Second))
					l.conn.Write(b)
				}
			}
			l.conn.CloseWrite()
			return
		}
		batch, l.jobs = l.jobs, batch[:0]
		l.mu.Unlock()
		raceAcquire()

		err := l.sendJobs(s, &w, batch)
		if err == nil {
			err = l.maybeConfirm(s, &w)
		}
		if err == nil {
			err = s.flush()
		}
		raceRelease()
		if err != nil {
			l.shutdown(nd.ErrCanceled, nil, true)
			continue
		}
		l.finishSent(s)
		clear(batch)
	}
}

// sendJobs encodes a batch of jobs.
func (l *link) sendJobs(s *sender, w *writerState, batch []job) error {
	for i := range batch {
		j := &batch[i]
		var err error
		switch j.kind {
		case jobRTR:
			err = l.sendRTR(s, w)
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
	l.orq.push(e)
	if wr == nil {
		l.confirmsOut++
	}
	l.mu.Unlock()
	return nil
}

// sendRTR sends the ready-to-receive frame the passive side chose.
func (l *link) sendRTR(s *sender, w *writerState) error {
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
		l.unconfirmed.push(sentEntry{wr: j.wr, seq: j.seq, n: l.sentSeq, msn: msn})
		return
	}
	s.done = append(s.done, *j)
}

// finishSent completes the requests of a written batch that need no
// confirmation.
func (l *link) finishSent(s *sender) {
	if len(s.done) == 0 {
		return
	}
	ep := l.ep.Load()
	for i := range s.done {
		ep.CompleteOutbound(s.done[i].wr, s.done[i].seq, nd.Success)
	}
	clear(s.done)
	s.done = s.done[:0]
}
