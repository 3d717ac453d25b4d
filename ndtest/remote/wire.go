package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/godirect/nd"
)

// The wire format: every frame is a 4-byte big-endian length followed by
// that many bytes, encoded with varints (see frame.encode). Byte strings
// distinguish nil from empty, since nd does (RegisterMemory(nil) and
// RegisterMemory([]byte{}) fail differently).

// Frame kinds.
const (
	kindRequest  = 1 // parent → child: run op on obj
	kindCancel   = 2 // parent → child: the context of request id ended
	kindBye      = 3 // parent → child: close everything; child → parent: done
	kindResponse = 4 // child → parent: the outcome of request id
	kindAck      = 5 // child → parent: request id is blocked inside the provider
)

// maxFrame bounds a frame's size, so that a corrupted length cannot make the
// reader allocate without limit.
const maxFrame = 1 << 30

// SGE kinds: how one scatter/gather entry of the parent is rebuilt in the
// child.
const (
	sgeInline  = 1 // nil Region: the bytes travel with the request
	sgeRegion  = 2 // inside a proxied region: region id, offset, length
	sgeOutside = 3 // names a proxied region but lies outside it: a fresh buffer
	sgeForeign = 4 // names a region of no proxied adapter: a fresh buffer and an unknown region
)

// Object references: 0 is nil, refForeign an object the child does not have
// (one of the parent's local adapter, say), anything else a proxied object.
const refForeign = ^uint64(0)

type wireSGE struct {
	kind   uint8
	region uint64
	off    uint64
	n      uint64
	data   []byte // sgeInline only
}

// chunk is a piece of a registration that changed on one side.
type chunk struct {
	region uint64
	off    uint64
	data   []byte
}

// winState is the state of a memory window's invalidate Result.
type winState struct {
	id     uint64
	status uint32
	bytes  int64
}

// syncSection carries memory from one side to the other: the parent's
// changes (push) in requests, the child's (pull) in responses.
type syncSection struct {
	activate []uint64 // regions to sync from now on if the call succeeds (push only)
	chunks   []chunk
	windows  []winState
}

// Error kinds on the wire.
const (
	errNone   = 0
	errStatus = 1 // a bare nd.Status
	errOp     = 2 // an *nd.OpError
	errOther  = 3 // any other error (its status is ErrUnsuccessful)
	errArg    = 4 // an *nd.ArgError (op, arg, and its reason in msg)
)

// Context error kinds on the wire.
const (
	ctxNone     = 0
	ctxCanceled = 1
	ctxDeadline = 2
)

type wireErr struct {
	kind   uint8
	status uint32
	ctx    uint8
	op     string
	msg    string
	arg    string // errArg only
}

type frame struct {
	kind     uint8
	id       uint64
	op       uint8
	obj      uint64
	deadline int64 // the request context's deadline in Unix nanoseconds, 0 for none
	ints     []int64
	blobs    [][]byte
	sges     []wireSGE
	err      wireErr
	sync     *syncSection
}

func (f *frame) int(i int) int64 {
	if i < len(f.ints) {
		return f.ints[i]
	}
	return 0
}

func (f *frame) blob(i int) []byte {
	if i < len(f.blobs) {
		return f.blobs[i]
	}
	return nil
}

type encoder struct{ b []byte }

func (e *encoder) u(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) i(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) bytes(p []byte) {
	if p == nil {
		e.u(0)
		return
	}
	e.u(uint64(len(p)) + 1)
	e.b = append(e.b, p...)
}
func (e *encoder) str(s string) { e.u(uint64(len(s))); e.b = append(e.b, s...) }

type decoder struct {
	b   []byte
	err error
}

var errMalformed = errors.New("remote: malformed frame")

func (d *decoder) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errMalformed
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errMalformed
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) raw(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.err = errMalformed
		d.b = nil
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) bytes() []byte {
	n := d.u()
	if n == 0 {
		return nil
	}
	return d.raw(n - 1)
}

func (d *decoder) str() string { return string(d.raw(d.u())) }

// count reads a length and checks it against what is left, so that a
// corrupted count cannot make the decoder allocate without limit.
func (d *decoder) count() int {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.err = errMalformed
		d.b = nil
		return 0
	}
	return int(n)
}

// encode returns the frame with its length prefix.
func (f *frame) encode() []byte {
	e := encoder{b: make([]byte, 4, 64)}
	e.b = append(e.b, f.kind, f.op)
	e.u(f.id)
	e.u(f.obj)
	e.i(f.deadline)
	e.u(uint64(len(f.ints)))
	for _, v := range f.ints {
		e.i(v)
	}
	e.u(uint64(len(f.blobs)))
	for _, b := range f.blobs {
		e.bytes(b)
	}
	e.u(uint64(len(f.sges)))
	for _, s := range f.sges {
		e.b = append(e.b, s.kind)
		e.u(s.region)
		e.u(s.off)
		e.u(s.n)
		e.bytes(s.data)
	}
	e.b = append(e.b, f.err.kind, f.err.ctx)
	if f.err.kind != errNone {
		e.u(uint64(f.err.status))
		e.str(f.err.op)
		e.str(f.err.msg)
		if f.err.kind == errArg {
			e.str(f.err.arg)
		}
	}
	if f.sync == nil {
		e.b = append(e.b, 0)
	} else {
		e.b = append(e.b, 1)
		s := f.sync
		e.u(uint64(len(s.activate)))
		for _, id := range s.activate {
			e.u(id)
		}
		e.u(uint64(len(s.chunks)))
		for _, c := range s.chunks {
			e.u(c.region)
			e.u(c.off)
			e.bytes(c.data)
		}
		e.u(uint64(len(s.windows)))
		for _, w := range s.windows {
			e.u(w.id)
			e.u(uint64(w.status))
			e.i(w.bytes)
		}
	}
	binary.BigEndian.PutUint32(e.b[:4], uint32(len(e.b)-4))
	return e.b
}

func decodeFrame(b []byte) (*frame, error) {
	if len(b) < 2 {
		return nil, errMalformed
	}
	f := &frame{kind: b[0], op: b[1]}
	d := decoder{b: b[2:]}
	f.id = d.u()
	f.obj = d.u()
	f.deadline = d.i()
	if n := d.count(); n > 0 {
		f.ints = make([]int64, n)
		for i := range f.ints {
			f.ints[i] = d.i()
		}
	}
	if n := d.count(); n > 0 {
		f.blobs = make([][]byte, n)
		for i := range f.blobs {
			f.blobs[i] = d.bytes()
		}
	}
	if n := d.count(); n > 0 {
		f.sges = make([]wireSGE, n)
		for i := range f.sges {
			k := d.raw(1)
			if len(k) == 1 {
				f.sges[i].kind = k[0]
			}
			f.sges[i].region = d.u()
			f.sges[i].off = d.u()
			f.sges[i].n = d.u()
			f.sges[i].data = d.bytes()
		}
	}
	if k := d.raw(2); len(k) == 2 {
		f.err.kind, f.err.ctx = k[0], k[1]
	}
	if f.err.kind != errNone {
		f.err.status = uint32(d.u())
		f.err.op = d.str()
		f.err.msg = d.str()
		if f.err.kind == errArg {
			f.err.arg = d.str()
		}
	}
	if has := d.raw(1); len(has) == 1 && has[0] == 1 {
		s := &syncSection{}
		if n := d.count(); n > 0 {
			s.activate = make([]uint64, n)
			for i := range s.activate {
				s.activate[i] = d.u()
			}
		}
		if n := d.count(); n > 0 {
			s.chunks = make([]chunk, n)
			for i := range s.chunks {
				s.chunks[i] = chunk{region: d.u(), off: d.u(), data: d.bytes()}
			}
		}
		if n := d.count(); n > 0 {
			s.windows = make([]winState, n)
			for i := range s.windows {
				s.windows[i] = winState{id: d.u(), status: uint32(d.u()), bytes: d.i()}
			}
		}
		f.sync = s
	}
	if d.err != nil {
		return nil, d.err
	}
	return f, nil
}

// readFrame reads one frame. Its byte strings alias a buffer of its own.
func readFrame(r *bufio.Reader) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("remote: frame of %d bytes exceeds the limit", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return decodeFrame(b)
}

// encodeErr puts err on the wire: its exact nd status, whether it was an
// *nd.OpError (and its Op) or an *nd.ArgError (its Op, Arg and Reason),
// whether a context error caused it, and its text.
func encodeErr(err error) wireErr {
	if err == nil {
		return wireErr{}
	}
	w := wireErr{status: uint32(nd.StatusOf(err)), msg: err.Error()}
	switch {
	case errors.Is(err, context.Canceled):
		w.ctx = ctxCanceled
	case errors.Is(err, context.DeadlineExceeded):
		w.ctx = ctxDeadline
	}
	var op *nd.OpError
	var arg *nd.ArgError
	switch {
	case errors.As(err, &arg):
		w.kind, w.op, w.arg, w.msg = errArg, arg.Op, arg.Arg, arg.Reason
	case errors.As(err, &op):
		w.kind, w.op = errOp, op.Op
		w.msg = ""
		if op.Err != nil {
			w.msg = op.Err.Error()
		}
	case isStatus(err):
		w.kind = errStatus
	default:
		w.kind = errOther
	}
	return w
}

func isStatus(err error) bool {
	_, ok := err.(nd.Status)
	return ok
}

// remoteError is an error of the child that is neither an nd.Status nor an
// *nd.OpError, or the cause inside an *nd.OpError; it keeps the child's text.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return "remote: " + e.msg }

// decodeErr rebuilds the child's error in the parent. A cause that was a
// context error becomes the parent context's own error (or the matching
// context sentinel), so errors.Is(err, context.Canceled) holds as it would
// in one process; the nd.Status is always the child's, exactly.
func decodeErr(ctx context.Context, w wireErr) error {
	var cause error
	switch w.ctx {
	case ctxCanceled, ctxDeadline:
		if ctx != nil && ctx.Err() != nil {
			cause = ctx.Err()
		} else if w.ctx == ctxCanceled {
			cause = context.Canceled
		} else {
			cause = context.DeadlineExceeded
		}
	}
	switch w.kind {
	case errNone:
		return nil
	case errStatus:
		return nd.Status(w.status)
	case errArg:
		return &nd.ArgError{Op: w.op, Arg: w.arg, Status: nd.Status(w.status), Reason: w.msg}
	case errOp:
		if cause == nil && w.msg != "" {
			cause = &remoteError{w.msg}
		}
		return &nd.OpError{Op: w.op, Status: nd.Status(w.status), Err: cause}
	default:
		if cause != nil {
			return fmt.Errorf("remote: %s: %w", w.msg, cause)
		}
		return &remoteError{w.msg}
	}
}

// outQueue is the sending half of a connection: callers append encoded
// frames without ever blocking on I/O, and one goroutine writes them.
// Callers never block on the connection, so a call in transit never looks
// like a call blocked inside the provider (see gate).
type outQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	q      [][]byte
	closed bool
	err    error
	done   chan struct{}
}

func newOutQueue(w io.Writer) *outQueue {
	o := &outQueue{done: make(chan struct{})}
	o.cond.L = &o.mu
	go o.run(w)
	return o
}

// put queues b; after close or a write error it drops b.
func (o *outQueue) put(b []byte) {
	o.mu.Lock()
	if !o.closed && o.err == nil {
		o.q = append(o.q, b)
		o.cond.Signal()
	}
	o.mu.Unlock()
}

// close stops the writer once everything queued has been written, and waits
// for it.
func (o *outQueue) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Signal()
	o.mu.Unlock()
	<-o.done
}

func (o *outQueue) run(w io.Writer) {
	defer close(o.done)
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		o.mu.Lock()
		for len(o.q) == 0 && !o.closed {
			o.cond.Wait()
		}
		q := o.q
		o.q = nil
		closed := o.closed
		o.mu.Unlock()
		for _, b := range q {
			if _, err := bw.Write(b); err != nil {
				o.fail(err)
				return
			}
		}
		if err := bw.Flush(); err != nil {
			o.fail(err)
			return
		}
		if closed && len(q) == 0 {
			return
		}
	}
}

func (o *outQueue) fail(err error) {
	o.mu.Lock()
	o.err = err
	o.q = nil
	o.mu.Unlock()
}
