package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godirect/nd"
)

// Serve runs the child's end of a session: it executes, on real objects of
// p, the calls a Client sends over conn, and keeps the memory of the
// registrations made through it in step with the parent's. It returns nil
// when the client closes the session (Client.Close, or the end of conn),
// after closing every adapter opened through it and waiting for every call
// it started; it returns an error only if the session breaks (conn fails or
// carries a malformed frame), after the same cleanup. Serve closes conn.
// Several Serve calls may run at once on different connections.
func Serve(conn io.ReadWriteCloser, p nd.Provider) error {
	s := &server{
		p:        p,
		out:      newOutQueue(conn),
		objs:     make(map[uint64]any),
		owner:    make(map[uint64]uint64),
		ctxs:     make(map[uint64]context.CancelFunc),
		results:  make(map[*nd.Result]uint64),
		regions:  make(map[uint64]*sRegion),
		windows:  make(map[uint64]*sWindow),
		adapters: make(map[uint64]nd.Adapter),
	}
	base, cancelAll := context.WithCancel(context.Background())
	br := bufio.NewReaderSize(conn, 64<<10)
	var err error
	bye := false
loop:
	for {
		f, rerr := readFrame(br)
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
		switch f.kind {
		case kindRequest:
			if f.op == 0 || f.op >= opCount {
				err = errMalformed
				break loop
			}
			ctx, cancel := base, context.CancelFunc(func() {})
			if ops[f.op].blocking || f.op == opRegister || f.op == opDeregister {
				if f.deadline != 0 {
					ctx, cancel = context.WithDeadline(base, time.Unix(0, f.deadline))
				} else {
					ctx, cancel = context.WithCancel(base)
				}
				s.mu.Lock()
				s.ctxs[f.id] = cancel
				s.mu.Unlock()
			}
			s.wg.Add(1)
			go s.run(ctx, cancel, f)
		case kindCancel:
			s.mu.Lock()
			cancel := s.ctxs[f.id]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case kindBye:
			bye = true
			break loop
		}
	}
	cancelAll()
	s.mu.Lock()
	var as []nd.Adapter
	for _, a := range s.adapters {
		as = append(as, a)
	}
	s.mu.Unlock()
	for _, a := range as {
		a.Close()
	}
	s.wg.Wait()
	if bye {
		s.out.put((&frame{kind: kindBye}).encode())
	}
	s.out.close()
	conn.Close()
	return err
}

// server is the child's state of one session.
type server struct {
	p   nd.Provider
	out *outQueue
	wg  sync.WaitGroup

	mu       sync.Mutex
	objs     map[uint64]any    // id → nd object, *sRegion or *sWindow
	owner    map[uint64]uint64 // id → id of the adapter that made it
	adapters map[uint64]nd.Adapter
	ctxs     map[uint64]context.CancelFunc
	results  map[*nd.Result]uint64 // posted, not yet reaped

	// syncMu guards the memory state; the parent sends at most one
	// request carrying memory at a time.
	syncMu  sync.Mutex
	regions map[uint64]*sRegion
	windows map[uint64]*sWindow // with an invalidate Result
}

type sRegion struct {
	id, adapter uint64
	mr          nd.MemoryRegion
	buf         []byte // registered with the provider
	shadow      []byte // guarded by syncMu; allocated on first use
	active      bool
}

type sWindow struct {
	id, adapter uint64
	mw          nd.MemoryWindow
	res         *nd.Result
	status      nd.Status // res as the parent last knew it
	bytes       int
}

// Placeholders for objects the child does not have (the parent passed one
// of another adapter): the provider sees an object that is not its own, as
// it would in one process. Their methods are never meant to be called.
type (
	foreignCQ        struct{ nd.CompletionQueue }
	foreignEndpoint  struct{ nd.Endpoint }
	foreignConnector struct{ nd.Connector }
	foreignWindow    struct{ nd.MemoryWindow }
	foreignSRQ       struct{ nd.SharedReceiveQueue }
	foreignRegion    struct{ buf []byte }
)

func (r foreignRegion) Bytes() []byte { return r.buf }

func (s *server) run(ctx context.Context, cancel context.CancelFunc, f *frame) {
	defer s.wg.Done()
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.ctxs, f.id)
		s.mu.Unlock()
	}()
	if !ops[f.op].ack {
		s.out.put(s.handle(ctx, f).encode())
		return
	}
	// Run the call on its own goroutine and acknowledge it as soon as it
	// blocks inside the provider (see call in client.go).
	var resp *frame
	done := make(chan struct{})
	gid := make(chan uint64, 1)
	go func() {
		defer close(done)
		gid <- goroutineID()
		resp = s.handle(ctx, f)
	}()
	if parked(<-gid, done) {
		s.out.put((&frame{kind: kindAck, id: f.id}).encode())
	}
	<-done
	s.out.put(resp.encode())
}

// handle executes request f and returns the response.
func (s *server) handle(ctx context.Context, f *frame) *frame {
	r := &frame{kind: kindResponse, id: f.id}
	if f.sync != nil {
		s.syncMu.Lock()
		defer s.syncMu.Unlock()
		s.applyPushLocked(f.sync)
	}
	err := s.exec(ctx, f, r)
	r.err = encodeErr(err)
	if f.sync != nil {
		if err == nil {
			for _, id := range f.sync.activate {
				if rg := s.regions[id]; rg != nil {
					rg.ensureShadow()
					rg.active = true
				}
			}
		}
		r.sync = s.pullLocked()
	}
	return r
}

func (s *server) applyPushLocked(p *syncSection) {
	for _, c := range p.chunks {
		if rg := s.regions[c.region]; rg != nil {
			rg.ensureShadow()
			applyChunk(c, rg.buf, rg.shadow)
		}
	}
	for _, ws := range p.windows {
		if w := s.windows[ws.id]; w != nil {
			w.status, w.bytes = nd.Status(ws.status), int(ws.bytes)
			writeResultNoRace(w.res, w.status, w.bytes)
		}
	}
}

func (r *sRegion) ensureShadow() {
	if r.shadow == nil {
		r.shadow = make([]byte, len(r.buf))
	}
}

func (s *server) pullLocked() *syncSection {
	p := &syncSection{}
	for id, rg := range s.regions {
		if rg.active {
			p.chunks = diffNoRace(p.chunks, id, rg.buf, rg.shadow)
		}
	}
	for id, w := range s.windows {
		st, n := readResultNoRace(w.res)
		if st != w.status || n != w.bytes {
			w.status, w.bytes = st, n
			p.windows = append(p.windows, winState{id: id, status: uint32(st), bytes: int64(n)})
		}
	}
	return p
}

// errUnknown answers a call on an object the child no longer has: its
// adapter was closed, so the object is gone too.
var errUnknown = nd.ErrDeviceRemoved

func (s *server) get(id uint64) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objs[id]
}

func (s *server) put(id, adapter uint64, v any) {
	s.mu.Lock()
	s.objs[id] = v
	s.owner[id] = adapter
	s.mu.Unlock()
}

func (s *server) cq(ref uint64) nd.CompletionQueue {
	switch ref {
	case 0:
		return nil
	case refForeign:
		return foreignCQ{}
	}
	if q, ok := s.get(ref).(nd.CompletionQueue); ok {
		return q
	}
	return foreignCQ{}
}

func (s *server) srq(ref uint64) nd.SharedReceiveQueue {
	switch ref {
	case 0:
		return nil
	case refForeign:
		return foreignSRQ{}
	}
	if q, ok := s.get(ref).(nd.SharedReceiveQueue); ok {
		return q
	}
	return foreignSRQ{}
}

func (s *server) endpoint(ref uint64) nd.Endpoint {
	switch ref {
	case 0:
		return nil
	case refForeign:
		return foreignEndpoint{}
	}
	if e, ok := s.get(ref).(nd.Endpoint); ok {
		return e
	}
	return foreignEndpoint{}
}

func (s *server) connector(ref uint64) nd.Connector {
	switch ref {
	case 0:
		return nil
	case refForeign:
		return foreignConnector{}
	}
	if c, ok := s.get(ref).(nd.Connector); ok {
		return c
	}
	return foreignConnector{}
}

func (s *server) region(ref uint64) (*sRegion, nd.MemoryRegion) {
	switch ref {
	case 0:
		return nil, nil
	case refForeign:
		return nil, foreignRegion{}
	}
	if r, ok := s.get(ref).(*sRegion); ok {
		return r, r.mr
	}
	return nil, foreignRegion{}
}

func (s *server) window(ref uint64) nd.MemoryWindow {
	switch ref {
	case 0:
		return nil
	case refForeign:
		return foreignWindow{}
	}
	if w, ok := s.get(ref).(*sWindow); ok {
		return w.mw
	}
	return foreignWindow{}
}

// sgl rebuilds a scatter/gather list in the child's memory.
func (s *server) sgl(ws []wireSGE) []nd.SGE {
	if len(ws) == 0 {
		return nil
	}
	out := make([]nd.SGE, len(ws))
	for i, w := range ws {
		switch w.kind {
		case sgeInline:
			out[i] = nd.SGE{Buffer: w.data}
		case sgeRegion, sgeOutside:
			rg, mr := s.region(w.region)
			if rg != nil && w.kind == sgeRegion && w.off <= uint64(len(rg.buf)) && w.n <= uint64(len(rg.buf))-w.off {
				out[i] = nd.SGE{Buffer: rg.buf[w.off : w.off+w.n], Region: mr}
			} else {
				out[i] = nd.SGE{Buffer: make([]byte, w.n), Region: mr}
			}
		default:
			out[i] = nd.SGE{Buffer: make([]byte, w.n), Region: foreignRegion{}}
		}
	}
	return out
}

// post records a child Result for the parent's request id (0: nil).
func (s *server) newResult(id uint64) *nd.Result {
	if id == 0 {
		return nil
	}
	res := new(nd.Result)
	s.mu.Lock()
	s.results[res] = id
	s.mu.Unlock()
	return res
}

func (s *server) posted(res *nd.Result, err error) error {
	if err != nil && res != nil {
		s.mu.Lock()
		delete(s.results, res)
		s.mu.Unlock()
	}
	return err
}

func desc(f *frame, i int) nd.MWDescriptor {
	return nd.MWDescriptor{Base: uint64(f.int(i)), Length: uint64(f.int(i + 1)), Token: uint32(f.int(i + 2))}
}

// exec performs the call of request f, filling r's results.
func (s *server) exec(ctx context.Context, f *frame, r *frame) error {
	obj := s.get(f.obj)
	switch f.op {
	case opSync:
		return nil
	case opOpenAdapter:
		var addr netip.Addr
		if err := addr.UnmarshalBinary(f.blob(0)); err != nil {
			return nd.ErrInvalidAddress
		}
		a, err := s.p.OpenAdapter(addr)
		if err != nil {
			return err
		}
		id := uint64(f.int(0))
		s.put(id, id, a)
		s.mu.Lock()
		s.adapters[id] = a
		s.mu.Unlock()
		return nil
	}

	switch o := obj.(type) {
	case nd.Adapter:
		return s.execAdapter(ctx, f, r, o)
	case nd.CompletionQueue:
		switch f.op {
		case opGetResults:
			n := max(int(f.int(0)), 0)
			buf := make([]*nd.Result, min(n, 1<<16))
			got := o.GetResults(buf)
			s.mu.Lock()
			for _, res := range buf[:got] {
				id, ok := s.results[res]
				if !ok {
					continue
				}
				delete(s.results, res)
				r.ints = append(r.ints, int64(id), int64(res.Status), int64(res.BytesTransferred), int64(res.Cause))
			}
			s.mu.Unlock()
			return nil
		case opNotify:
			return o.Notify(ctx, nd.NotifyType(f.int(0)))
		case opResize:
			return o.Resize(int(f.int(0)))
		case opCQClose:
			return o.Close()
		}
	case nd.Connector:
		return s.execConnector(ctx, f, r, o)
	case nd.Listener:
		switch f.op {
		case opGetConnectionRequest:
			return o.GetConnectionRequest(ctx, s.connector(uint64(f.int(0))))
		case opListenerClose:
			return o.Close()
		}
	case nd.Endpoint:
		return s.execEndpoint(f, r, o)
	case nd.SharedReceiveQueue:
		switch f.op {
		case opSRQReceive:
			res := s.newResult(uint64(f.int(0)))
			return s.posted(res, o.Receive(res, s.sgl(f.sges)))
		case opSRQNotify:
			return o.Notify(ctx)
		case opSRQFlush:
			return o.Flush()
		case opSRQClose:
			return o.Close()
		}
	case *sWindow:
		if f.op == opWindowClose {
			err := o.mw.Close()
			delete(s.windows, f.obj) // syncMu is held: a merged call
			return err
		}
	case nil:
		// The object's adapter closed and the object went with it; as the
		// object would, fail with ErrDeviceRemoved, except for Close,
		// which is idempotent, DeregisterMemory, cleanup that succeeds,
		// and GetResults, which finds nothing.
		switch f.op {
		case opAdapterClose, opCQClose, opConnectorClose, opListenerClose, opEndpointClose, opWindowClose, opSRQClose, opDeregister, opGetResults, opStartBatch, opSubmitBatch, opDisconnectReason:
			return nil
		}
		return errUnknown
	}
	return &nd.OpError{Op: ops[f.op].name, Status: nd.ErrInvalidHandle, Err: errors.New("remote: the call does not fit the object")}
}

func (s *server) execAdapter(ctx context.Context, f *frame, r *frame, a nd.Adapter) error {
	switch f.op {
	case opQuery:
		info, err := a.Query()
		r.ints = infoInts(info)
		return err
	case opCreateCQ:
		q, err := a.CreateCompletionQueue(int(f.int(1)))
		if err == nil {
			s.put(uint64(f.int(0)), f.obj, q)
		}
		return err
	case opRegister:
		n := f.int(1)
		var buf []byte
		if f.int(2) == 0 {
			if info, err := a.Query(); err == nil && n > int64(info.MaxRegistrationSize) {
				// Too large to mirror; the provider would refuse it anyway.
				return nd.ErrInvalidParameter
			}
			buf = make([]byte, n)
		}
		mr, err := a.RegisterMemory(ctx, buf)
		if err == nil {
			id := uint64(f.int(0))
			rg := &sRegion{id: id, adapter: f.obj, mr: mr, buf: buf}
			s.put(id, f.obj, rg)
			s.regions[id] = rg // syncMu is held: a merged call
		}
		return err
	case opDeregister:
		rg, mr := s.region(uint64(f.int(0)))
		err := a.DeregisterMemory(ctx, mr)
		if err == nil && rg != nil {
			rg.active = false
		}
		return err
	case opCreateMW:
		var res *nd.Result
		if f.int(1) != 0 {
			res = &nd.Result{Status: nd.Status(f.int(2)), BytesTransferred: int(f.int(3))}
		}
		mw, err := a.CreateMemoryWindow(res)
		if err == nil {
			id := uint64(f.int(0))
			w := &sWindow{id: id, adapter: f.obj, mw: mw, res: res}
			s.put(id, f.obj, w)
			if res != nil {
				w.status, w.bytes = res.Status, res.BytesTransferred
				s.windows[id] = w
			}
		}
		return err
	case opCreateConnector:
		c, err := a.CreateConnector()
		if err == nil {
			s.put(uint64(f.int(0)), f.obj, c)
		}
		return err
	case opListen:
		l, err := a.Listen(int(f.int(1)), int(f.int(2)), uint16(f.int(3)))
		if err == nil {
			s.put(uint64(f.int(0)), f.obj, l)
			r.ints = []int64{int64(l.Port())}
		}
		return err
	case opCreateSRQ:
		l := nd.SharedReceiveQueueLimits{Entries: int(f.int(2)), SGE: int(f.int(3)), NotifyThreshold: int(f.int(4))}
		q, err := nd.CreateSharedReceiveQueue(a, s.cq(uint64(f.int(1))), l)
		if err == nil {
			s.put(uint64(f.int(0)), f.obj, q)
		}
		return err
	case opAdapterClose:
		err := a.Close()
		s.dropAdapter(f.obj)
		return err
	}
	return &nd.OpError{Op: ops[f.op].name, Status: nd.ErrInvalidHandle, Err: errors.New("remote: the call does not fit the object")}
}

// dropAdapter forgets a closed adapter and everything made on it but its
// completion queues, which GetResults still drains after the close (and
// whose other calls return what the closed queue says).
func (s *server) dropAdapter(id uint64) {
	s.mu.Lock()
	for o, a := range s.owner {
		if a == id {
			if _, ok := s.objs[o].(nd.CompletionQueue); ok {
				continue
			}
			delete(s.objs, o)
			delete(s.owner, o)
		}
	}
	delete(s.adapters, id)
	s.mu.Unlock()
	s.syncMu.Lock()
	for o, rg := range s.regions {
		if rg.adapter == id {
			delete(s.regions, o)
		}
	}
	for o, w := range s.windows {
		if w.adapter == id {
			delete(s.windows, o)
		}
	}
	s.syncMu.Unlock()
}

func (s *server) execConnector(ctx context.Context, f *frame, r *frame, c nd.Connector) error {
	switch f.op {
	case opCreateEndpoint, opCreateEndpointWithSRQ:
		l := nd.EndpointLimits{
			InboundEntries: int(f.int(3)), OutboundEntries: int(f.int(4)),
			InboundSGE: int(f.int(5)), OutboundSGE: int(f.int(6)),
			InboundReadLimit: int(f.int(7)), OutboundReadLimit: int(f.int(8)),
		}
		var ep nd.Endpoint
		var err error
		if f.op == opCreateEndpointWithSRQ {
			ep, err = nd.CreateEndpointWithSRQ(c, s.cq(uint64(f.int(1))), s.cq(uint64(f.int(2))), s.srq(uint64(f.int(9))), l)
		} else {
			ep, err = c.CreateEndpoint(s.cq(uint64(f.int(1))), s.cq(uint64(f.int(2))), l)
		}
		if err == nil {
			s.mu.Lock()
			owner := s.owner[f.obj]
			s.mu.Unlock()
			s.put(uint64(f.int(0)), owner, ep)
			r.ints = []int64{int64(ep.MaxInlineData())}
		}
		return err
	case opConnect:
		var ap netip.AddrPort
		if err := ap.UnmarshalBinary(f.blob(0)); err != nil {
			return nd.ErrInvalidParameter2
		}
		return c.Connect(ctx, s.endpoint(uint64(f.int(0))), ap, int(f.int(1)), uint16(f.int(2)), f.blob(1))
	case opCompleteConnect:
		return c.CompleteConnect(ctx)
	case opAccept:
		return c.Accept(ctx, s.endpoint(uint64(f.int(0))), f.blob(0))
	case opReject:
		return c.Reject(f.blob(0))
	case opGetConnectionData:
		var buf []byte
		if b := f.blob(0); b != nil {
			buf = bytes.Clone(b)
		}
		cd, err := c.GetConnectionData(buf)
		r.ints = []int64{int64(cd.InboundReadLimit), int64(cd.OutboundReadLimit), int64(cd.PrivateDataLength)}
		r.blobs = [][]byte{buf}
		return err
	case opGetLocalAddress, opGetPeerAddress:
		get := c.GetLocalAddress
		if f.op == opGetPeerAddress {
			get = c.GetPeerAddress
		}
		ap, err := get()
		b, _ := ap.MarshalBinary()
		r.blobs = [][]byte{b}
		return err
	case opNotifyDisconnect:
		return c.NotifyDisconnect(ctx)
	case opDisconnect:
		return c.Disconnect(ctx)
	case opConnectorClose:
		return c.Close()
	case opDisconnectReason:
		// The reason travels as the response's numbers and strings; the
		// call's error is only ErrNotSupported.
		reason := nd.DisconnectReason(c)
		var de *nd.DisconnectError
		switch {
		case reason == nil:
			r.ints = []int64{0}
		case errors.As(reason, &de):
			peer := int64(0)
			if de.Peer {
				peer = 1
			}
			r.ints = []int64{1, peer, int64(de.Status), int64(de.Cause)}
			r.blobs = [][]byte{[]byte(de.Op), []byte(de.Detail)}
		default:
			return reason
		}
		return nil
	}
	return &nd.OpError{Op: ops[f.op].name, Status: nd.ErrInvalidHandle, Err: errors.New("remote: the call does not fit the object")}
}

func (s *server) execEndpoint(f *frame, r *frame, ep nd.Endpoint) error {
	flags := func(i int) nd.Flags { return nd.Flags(f.int(i)) }
	switch f.op {
	case opSend:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.Send(res, s.sgl(f.sges), flags(1)))
	case opSendAndInvalidate:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.SendAndInvalidate(res, s.sgl(f.sges), desc(f, 2), flags(1)))
	case opReceive:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.Receive(res, s.sgl(f.sges)))
	case opBind:
		_, mr := s.region(uint64(f.int(1)))
		var buf []byte
		if sgl := s.sgl(f.sges); len(sgl) == 1 {
			buf = sgl[0].Buffer
		}
		res := s.newResult(uint64(f.int(0)))
		d, err := ep.Bind(res, mr, s.window(uint64(f.int(2))), buf, flags(3))
		r.ints = descInts(d)
		return s.posted(res, err)
	case opInvalidate:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.Invalidate(res, s.window(uint64(f.int(1))), flags(2)))
	case opRead:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.Read(res, s.sgl(f.sges), desc(f, 2), uint64(f.int(5)), flags(1)))
	case opWrite:
		res := s.newResult(uint64(f.int(0)))
		return s.posted(res, ep.Write(res, s.sgl(f.sges), desc(f, 2), uint64(f.int(5)), flags(1)))
	case opFlush:
		return ep.Flush()
	case opStartBatch:
		ep.StartRequestBatch()
		return nil
	case opSubmitBatch:
		ep.SubmitRequestBatch()
		return nil
	case opEndpointClose:
		return ep.Close()
	}
	return &nd.OpError{Op: ops[f.op].name, Status: nd.ErrInvalidHandle, Err: errors.New("remote: the call does not fit the object")}
}

// parked waits until goroutine id has returned (done closed) or is blocked
// (on a channel, select, condition, semaphore or network wait), the states
// ndtest counts as blocked, and reports whether it is blocked. It gives up
// and reports true after a while, so that a call blocked in some other way
// is still acknowledged.
func parked(id uint64, done <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	buf := make([]byte, 64<<10)
	prefix := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for {
		select {
		case <-done:
			return false
		default:
		}
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if i := bytes.Index(buf[:n], prefix); i >= 0 {
			rest := buf[i+len(prefix) : n]
			if j := bytes.IndexByte(rest, ']'); j >= 0 {
				state, _, _ := strings.Cut(string(rest[:j]), ",")
				switch state {
				case "select", "select (no cases)", "chan receive", "chan send", "chan receive (nil chan)",
					"chan send (nil chan)", "sync.Cond.Wait", "sync.WaitGroup.Wait", "semacquire", "IO wait":
					return true
				}
			}
		}
		if time.Now().After(deadline) {
			return true
		}
		runtime.Gosched()
	}
}

func goroutineID() uint64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	s, _, _ = strings.Cut(s, " ")
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}
