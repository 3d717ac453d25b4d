package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// clientSide is the client's end of one connection.
type clientSide struct {
	*side
	stride   int // window and sink slot stride: the largest message and a guard byte
	sends    [][]byte
	sinks    [][]byte
	data     []request // one per slot: the batch's Sends, Writes or Reads
	ctlIn    [2]request
	ctlBuf   [2][]byte
	out      request // the control Send
	outBuf   []byte
	window   nd.MWDescriptor
	seq      uint64 // the next message's number
	answers  []ctl  // control messages received and not yet taken
	idle     bool
	duration time.Duration // -D, or 0 after a reconnection
	counts   [nOps]int     // messages verified, by kind
}

// messageSeam is what a test may install to change the bytes of message
// seq of kind o after the client filled them and before it posts it (for
// a Read: after the Read completed, before the check), as a path that
// corrupts data would. Its implementation lives with the tests; nil in
// production.
type messageSeam interface {
	alter(o op, seq uint64, b []byte)
}

// installedSeam is the test's messageSeam, or nil.
var installedSeam messageSeam

// Drive implements session.DataTool: the client's connections, one after
// the other.
func (c *config) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	base := measure()
	var errs []error
	for id := 1; id <= c.conns; id++ {
		err := c.clientConn(ctx, a, remote, id, c.retry, c.duration, base)
		if errors.Is(err, errFailed) && c.failOK && c.reconnect > 0 {
			id++
			err = c.clientConn(ctx, a, remote, id, c.reconnect, 0, base)
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

// clientConn makes connection id and runs the traffic over it for
// duration (0: once); a refused Connect is tried again for retry.
func (c *config) clientConn(ctx context.Context, a nd.Adapter, remote netip.AddrPort, id int, retry, duration time.Duration, base usage) error {
	max := c.maxSize()
	stride := max + 1
	depth := c.depth
	cs := &clientSide{stride: stride, idle: len(c.ops) == 0, duration: duration}
	sd, err := newSide(ctx, c, id, "client", a, 2*depth*stride+3*ctlSize, stride)
	if err != nil {
		return err
	}
	cs.side = sd
	mem := sd.mem
	for i := range depth {
		cs.sends = append(cs.sends, mem[i*stride:i*stride+max:i*stride+max])
		cs.sinks = append(cs.sinks, mem[(depth+i)*stride:(depth+i+1)*stride:(depth+i+1)*stride])
	}
	ctlArea := mem[2*depth*stride:]
	cs.ctlBuf[0], cs.ctlBuf[1] = ctlArea[:ctlSize:ctlSize], ctlArea[ctlSize:2*ctlSize:2*ctlSize]
	cs.outBuf = ctlArea[2*ctlSize : 3*ctlSize : 3*ctlSize]
	cs.data = make([]request, depth)
	for i := range cs.data {
		cs.data[i].slot = i
		sd.ledger.add(&cs.data[i])
	}
	for i := range cs.ctlIn {
		cs.ctlIn[i] = request{op: opReceive, slot: i}
		sd.ledger.add(&cs.ctlIn[i])
	}
	cs.out.op = opControl
	sd.ledger.add(&cs.out)

	limits := nd.EndpointLimits{
		InboundEntries: 2, OutboundEntries: depth + 2,
		InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: 0, OutboundReadLimit: min(depth, 16),
	}
	var pd [planSize]byte
	plan{max: max, depth: depth}.put(pd[:])
	start := time.Now()
	for {
		s, err := session.New(a, nil, limits)
		if err != nil {
			sd.close()
			return err
		}
		sd.attach(s)
		sd.rp.handle = cs.handle
		// The hello needs one Receive; an idle client posts nothing more.
		err = cs.postCtlReceive(0)
		if err == nil && !cs.idle {
			err = cs.postCtlReceive(1)
		}
		if err != nil {
			s.EP.Close()
			sd.rp.drain(ctx, 10*time.Second, 0)
			sd.close()
			return err
		}
		t0 := time.Now()
		err = s.Dial(ctx, remote, pd[:], nil)
		if err == nil {
			c.report("client: connection %d up at=%s: Connect took %.1f ms", id, unixTime(time.Now()), float64(time.Since(t0).Microseconds())/1000)
			break
		}
		var st nd.Status
		errors.As(err, &st)
		// The Receives posted are flushed by the closing endpoint.
		s.EP.Close()
		sd.rp.drain(ctx, 10*time.Second, 0)
		s.Close()
		sd.s, sd.rp = nil, nil
		sd.ledger.restart()
		if retryable(st) && time.Since(start) < retry && ctx.Err() == nil {
			t := time.NewTimer(200 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		sd.close()
		c.report("client: connection %d Connect FAILED at=%s after %.3f s: %s: %v", id, unixTime(time.Now()), time.Since(t0).Seconds(), st.Name(), err)
		if networkStatus(st) || st == nd.ErrConnectionRefused {
			return fmt.Errorf("connection %d: %w: Connect: %v", id, errFailed, err)
		}
		return fmt.Errorf("connection %d: %w", id, err)
	}
	sd.watch(ctx)
	return sd.end(ctx, base, cs.run(ctx))
}

// retryable reports whether a Connect that failed with st may succeed
// later: nobody listened yet, or the network did not carry it.
func retryable(st nd.Status) bool {
	switch st {
	case nd.ErrConnectionRefused, nd.ErrIOTimeout, nd.ErrNetworkUnreachable, nd.ErrHostUnreachable:
		return true
	}
	return false
}

// postCtlReceive posts control Receive i.
func (cs *clientSide) postCtlReceive(i int) error {
	r := &cs.ctlIn[i]
	return cs.post(r, cs.s.EP.Receive(&r.res, cs.sge(cs.ctlBuf[i])))
}

// handle takes a completion: a control message is kept for the run, and
// its Receive posted again.
func (cs *clientSide) handle(r *request) error {
	if r.op != opReceive || r.res.Status != nd.Success {
		return nil
	}
	m, err := parseCtl(cs.ctlBuf[r.slot][:r.res.BytesTransferred])
	if err != nil {
		return fmt.Errorf("the server sent %w", err)
	}
	cs.answers = append(cs.answers, m)
	if cs.idle && m.typ == msgHello {
		return nil
	}
	return cs.postCtlReceive(r.slot)
}

// await waits for the server's next control message.
func (cs *clientSide) await(ctx context.Context) (ctl, bool, error) {
	err := cs.rp.reapUntil(ctx, func() bool { return len(cs.answers) > 0 || cs.failed() })
	if err != nil || len(cs.answers) == 0 {
		return ctl{}, false, err
	}
	m := cs.answers[0]
	cs.answers = cs.answers[1:]
	return m, true, nil
}

// send sends control message m.
func (cs *clientSide) send(ctx context.Context, m ctl) error {
	if cs.out.posted {
		if err := cs.rp.reapUntil(ctx, func() bool { return !cs.out.posted || cs.failed() }); err != nil || cs.failed() {
			return err
		}
	}
	m.put(cs.outBuf)
	return cs.post(&cs.out, cs.s.EP.Send(&cs.out.res, cs.sge(cs.outBuf), 0))
}

// request sends m and waits for the server's answer; ok is false when the
// connection failed first.
func (cs *clientSide) request(ctx context.Context, m ctl) (ok bool, err error) {
	if err := cs.send(ctx, m); err != nil || cs.failed() {
		return false, err
	}
	a, ok, err := cs.await(ctx)
	if err != nil || !ok {
		return false, err
	}
	if a.typ != msgAnswer {
		return false, fmt.Errorf("the server sent a message of type %d, want an answer", a.typ)
	}
	return true, answerError(a)
}

// run runs the traffic on the connected side: the hello, then the sizes
// and kinds (for -D, again and again), then the done. A failed connection
// ends it with nil: end reports it.
func (cs *clientSide) run(ctx context.Context) error {
	hello, ok, err := cs.await(ctx)
	if err != nil || !ok {
		return err
	}
	if hello.typ != msgHello {
		return fmt.Errorf("the server's first message has type %d, want its hello", hello.typ)
	}
	cs.window = hello.window
	c := cs.cfg
	until := time.Now().Add(cs.duration)
	if cs.idle {
		// Nothing posted: only NotifyDisconnect can tell of a failure.
		t := time.NewTimer(cs.duration)
		defer t.Stop()
		select {
		case <-cs.ended:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := cs.postCtlReceive(1); err != nil {
			return err
		}
	} else {
		for first := true; first || time.Now().Before(until); first = false {
			for _, size := range c.sizes {
				for _, o := range c.ops {
					for left := c.n; left > 0; {
						b := min(left, c.depth)
						ok, err := cs.batch(ctx, o, size, b)
						if err != nil || !ok {
							return err
						}
						left -= b
						cs.counts[o] += b
					}
				}
			}
		}
		c.report("client: connection %d verified %d Sends, %d Writes, %d Reads of %d sizes (%d to %d bytes)",
			cs.id, cs.counts[opSend], cs.counts[opWrite], cs.counts[opRead], len(c.sizes), minOf(c.sizes), c.maxSize())
	}
	ok, err = cs.request(ctx, ctl{typ: msgDone})
	if err != nil || !ok {
		return err
	}
	cs.finished = true
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cs.s.Conn.Disconnect(dctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

func minOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// batch runs b messages of kind o and size bytes; ok is false when the
// connection failed first.
func (cs *clientSide) batch(ctx context.Context, o op, size, b int) (bool, error) {
	seq := cs.seq
	cs.seq += uint64(b)
	data := cs.data[:b]
	for i := range data {
		data[i].op, data[i].seq, data[i].size = o, seq+uint64(i), size
	}
	remote := func(i int) uint64 { return uint64(i * cs.stride) }
	switch o {
	case opSend:
		if err := cs.send(ctx, ctl{typ: msgSends, size: size, count: b, seq: seq}); err != nil || cs.failed() {
			return false, err
		}
		for i := range data {
			cs.fill(o, cs.sends[i][:size], data[i].seq)
			if err := cs.post(&data[i], cs.s.EP.Send(&data[i].res, cs.sge(cs.sends[i][:size]), 0)); err != nil {
				return false, err
			}
		}
	case opWrite:
		for i := range data {
			cs.fill(o, cs.sends[i][:size], data[i].seq)
			if err := cs.post(&data[i], cs.s.EP.Write(&data[i].res, cs.sge(cs.sends[i][:size]), cs.window, remote(i), 0)); err != nil {
				return false, err
			}
		}
		if err := cs.send(ctx, ctl{typ: msgWrites, size: size, count: b, seq: seq}); err != nil || cs.failed() {
			return false, err
		}
	case opRead:
		if ok, err := cs.request(ctx, ctl{typ: msgFill, size: size, count: b, seq: seq}); err != nil || !ok {
			return false, err
		}
		for i := range data {
			sink := cs.sinks[i]
			fillGuard(sink[:size+1])
			if err := cs.post(&data[i], cs.s.EP.Read(&data[i].res, cs.sge(sink[:size]), cs.window, remote(i), 0)); err != nil {
				return false, err
			}
		}
	}
	// Every request of the batch completes (and with -D the failure is
	// found here too).
	err := cs.rp.reapUntil(ctx, func() bool { return cs.failed() || !anyPosted(data) })
	if err != nil || cs.failed() {
		return false, err
	}
	for i := range data {
		if st := data[i].res.Status; st != nd.Success {
			return false, fmt.Errorf("%s of message %d (%d bytes) completed with %w", o, data[i].seq, size, st)
		}
		if o == opRead {
			if n := data[i].res.BytesTransferred; n != size {
				return false, fmt.Errorf("the Read of message %d: %d bytes transferred, want %d", data[i].seq, n, size)
			}
			sink := cs.sinks[i]
			if installedSeam != nil {
				installedSeam.alter(o, data[i].seq, sink[:size])
			}
			if at := mismatch(sink[:size], data[i].seq, cs.scratch); at >= 0 {
				return false, fmt.Errorf("the Read of message %d (%d bytes): wrong bytes from byte %d on", data[i].seq, size, at)
			}
			if sink[size] != guard {
				return false, fmt.Errorf("the Read of message %d (%d bytes) wrote past its end", data[i].seq, size)
			}
		}
	}
	if o == opRead {
		return true, nil
	}
	// The server's answer: every Send received right, or every Write's
	// bytes found in place.
	a, ok, err := cs.await(ctx)
	if err != nil || !ok {
		return false, err
	}
	if a.typ != msgAnswer {
		return false, fmt.Errorf("the server sent a message of type %d, want an answer", a.typ)
	}
	return true, answerError(a)
}

// fill writes message seq's bytes into b.
func (cs *clientSide) fill(o op, b []byte, seq uint64) {
	pattern(b, seq)
	if installedSeam != nil {
		installedSeam.alter(o, seq, b)
	}
}

func anyPosted(rs []request) bool {
	for i := range rs {
		if rs[i].posted {
			return true
		}
	}
	return false
}
