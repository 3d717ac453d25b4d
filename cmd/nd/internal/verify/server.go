package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// serverSide is the server's end of one connection.
type serverSide struct {
	*side
	plan    plan
	stride  int
	recvs   []request // depth+1 Receives, one per slot
	recvBuf [][]byte
	window  []byte
	outs    [4]request // control Sends (the hello and answers)
	outBuf  [4][]byte
	// The Sends of a batch still to come: their size, number and count.
	expect    int
	expSize   int
	expSeq    uint64
	bad       ctl // the first wrong message of the batch (status 0: none)
	doneAsked bool
	// The slots the last reads batch filled (count, size): the client's
	// next control message comes once its Reads completed, and the guard
	// goes back over them then, so that a later Write of fewer bytes
	// finds the guard after its bytes.
	filled, filledSize int
	err                error // a protocol error found in handle
	counts             [nOps]int
}

// Serve implements session.DataTool: it serves -conns connections (0:
// until ctx ends) one after the other.
func (c *config) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	base := measure()
	var errs []error
	for id := 1; c.conns == 0 || id <= c.conns; id++ {
		err := c.serveConn(ctx, a, l, id, base)
		if ctx.Err() != nil && c.conns == 0 {
			break
		}
		if err != nil && !(errors.Is(err, errFailed) && c.failOK) {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// serveConn accepts connection id and answers its client until it ends.
func (c *config) serveConn(ctx context.Context, a nd.Adapter, l nd.Listener, id int, base usage) error {
	req, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	p, err := parsePlan(req.Data)
	if err != nil {
		return req.Reject(err)
	}
	stride := p.max + 1
	slot := max(p.max, ctlSize)
	sd, err := newSide(ctx, c, id, "server", a, (p.depth+1)*slot+p.depth*stride+len(serverSide{}.outs)*ctlSize, stride)
	if err != nil {
		return req.Reject(err)
	}
	ss := &serverSide{side: sd, plan: p, stride: stride}
	mem := sd.mem
	for i := range p.depth + 1 {
		ss.recvBuf = append(ss.recvBuf, mem[i*slot:(i+1)*slot:(i+1)*slot])
	}
	ss.recvs = make([]request, p.depth+1)
	for i := range ss.recvs {
		ss.recvs[i] = request{op: opReceive, slot: i}
		sd.ledger.add(&ss.recvs[i])
	}
	off := (p.depth + 1) * slot
	ss.window = mem[off : off+p.depth*stride : off+p.depth*stride]
	off += p.depth * stride
	for i := range ss.outs {
		ss.outBuf[i] = mem[off+i*ctlSize : off+(i+1)*ctlSize : off+(i+1)*ctlSize]
		ss.outs[i] = request{op: opControl, slot: i}
		sd.ledger.add(&ss.outs[i])
	}
	fillGuard(ss.window)
	limits := nd.EndpointLimits{
		InboundEntries: p.depth + 1, OutboundEntries: len(ss.outs) + 1,
		InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: min(p.depth, 16), OutboundReadLimit: 0,
	}
	s, err := session.New(a, req.Conn, limits)
	if err != nil {
		sd.close()
		return req.Reject(err)
	}
	sd.attach(s)
	sd.rp.handle = ss.handle
	for i := range ss.recvs {
		if err := ss.postReceive(i); err != nil {
			sd.close()
			return req.Reject(err)
		}
	}
	t0 := time.Now()
	if err := s.Accept(ctx, req, nil); err != nil {
		c.report("server: connection %d Accept FAILED at=%s after %.3f s: %v", id, unixTime(time.Now()), time.Since(t0).Seconds(), err)
		s.EP.Close()
		sd.rp.drain(ctx, 10*time.Second, 0)
		sd.close()
		var st nd.Status
		if errors.As(err, &st) && (networkStatus(st) || st == nd.ErrConnectionAborted) {
			return fmt.Errorf("connection %d: %w: Accept: %v", id, errFailed, err)
		}
		return fmt.Errorf("connection %d: %w", id, err)
	}
	c.report("server: connection %d up at=%s: Accept took %.1f ms", id, unixTime(time.Now()), float64(time.Since(t0).Microseconds())/1000)
	sd.watch(ctx)
	return sd.end(ctx, base, ss.run(ctx))
}

// postReceive posts the Receive of slot i.
func (ss *serverSide) postReceive(i int) error {
	r := &ss.recvs[i]
	return ss.post(r, ss.s.EP.Receive(&r.res, ss.sge(ss.recvBuf[i])))
}

// answer sends control message m from a free control buffer.
func (ss *serverSide) answer(m ctl) error {
	for i := range ss.outs {
		r := &ss.outs[i]
		if r.posted {
			continue
		}
		m.put(ss.outBuf[i])
		return ss.post(r, ss.s.EP.Send(&r.res, ss.sge(ss.outBuf[i]), 0))
	}
	return fmt.Errorf("%d answers outstanding: the client does not wait for them", len(ss.outs))
}

// run sends the hello and answers the client until the connection ends.
func (ss *serverSide) run(ctx context.Context) error {
	d, err := ss.bind(ctx, ss.window)
	if err != nil || ss.failed() {
		return err
	}
	if err := ss.answer(ctl{typ: msgHello, window: d}); err != nil {
		return err
	}
	err = ss.rp.reapUntil(ctx, func() bool { return ss.err != nil || ss.failed() || ss.doneAsked && ss.disconnected() })
	if err == nil {
		err = ss.err
	}
	if err == nil && !ss.failed() {
		ss.cfg.report("server: connection %d verified %d Sends, %d Writes, %d Reads", ss.id, ss.counts[opSend], ss.counts[opWrite], ss.counts[opRead])
	}
	return err
}

// handle takes a completion: a Receive's message is checked or obeyed,
// and the Receive posted again.
func (ss *serverSide) handle(r *request) error {
	if r.op != opReceive || r.res.Status != nd.Success {
		return nil
	}
	buf := ss.recvBuf[r.slot][:r.res.BytesTransferred]
	if ss.expect > 0 {
		seq := ss.expSeq
		ss.expSeq++
		ss.expect--
		switch {
		case ss.bad.status != answerOK:
		case len(buf) != ss.expSize:
			ss.bad = ctl{status: answerLength, bad: seq, at: int64(len(buf))}
		default:
			if at := mismatch(buf, seq, ss.scratch); at >= 0 {
				ss.bad = ctl{status: answerMismatch, bad: seq, at: int64(at)}
			}
		}
		if ss.bad.status == answerOK {
			ss.counts[opSend]++
		}
		if err := ss.postReceive(r.slot); err != nil {
			return err
		}
		if ss.expect == 0 {
			a := ss.bad
			a.typ, a.size = msgAnswer, ss.expSize
			ss.bad = ctl{}
			return ss.answer(a)
		}
		return nil
	}
	m, err := parseCtl(buf)
	if err != nil {
		ss.err = fmt.Errorf("the client sent %w", err)
		return nil
	}
	if err := ss.postReceive(r.slot); err != nil {
		return err
	}
	a := ctl{typ: msgAnswer, size: m.size}
	if m.count < 0 || m.count > ss.plan.depth || m.size < 0 || m.size > ss.plan.max {
		a.status = answerProtocol
		return ss.answer(a)
	}
	for i := range ss.filled {
		fillGuard(ss.window[i*ss.stride : i*ss.stride+ss.filledSize])
	}
	ss.filled = 0
	switch m.typ {
	case msgSends:
		ss.expect, ss.expSize, ss.expSeq = m.count, m.size, m.seq
		return nil
	case msgWrites:
		for i := range m.count {
			s := ss.window[i*ss.stride : (i+1)*ss.stride]
			seq := m.seq + uint64(i)
			if at := mismatch(s[:m.size], seq, ss.scratch); at >= 0 {
				a.status, a.bad, a.at = answerMismatch, seq, int64(at)
				break
			}
			if s[m.size] != guard {
				a.status, a.bad, a.at = answerMismatch, seq, int64(m.size)
				break
			}
			fillGuard(s[:m.size])
			ss.counts[opWrite]++
		}
	case msgFill:
		for i := range m.count {
			pattern(ss.window[i*ss.stride:i*ss.stride+m.size], m.seq+uint64(i))
			ss.counts[opRead]++
		}
		ss.filled, ss.filledSize = m.count, m.size
	case msgDone:
		ss.doneAsked, ss.finished = true, true
	default:
		a.status = answerProtocol
	}
	return ss.answer(a)
}
