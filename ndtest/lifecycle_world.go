package ndtest

// The world the lifecycle cases act on: a connected pair of endpoints with
// every object that can be closed, the record of which closes started and
// finished, and the ledger that checks that every accepted request
// completes exactly once.

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// lcObject names an object of one side that a lifecycle case closes.
type lcObject int

const (
	objAdapter lcObject = iota
	objInCQ
	objOutCQ
	objConnector
	objEndpoint
	objRegion // DeregisterMemory
	objWindow
	objListener // passive side only
	objCount
)

var objNames = [objCount]string{"Adapter", "InCQ", "OutCQ", "Connector", "Endpoint", "Region", "Window", "Listener"}

func (o lcObject) String() string { return objNames[o] }

// closeMark records that an object's Close started and that it returned.
type closeMark struct{ started, done atomic.Bool }

// lcSide is one side of the world.
type lcSide struct {
	name   string
	a      nd.Adapter
	in     nd.CompletionQueue
	out    nd.CompletionQueue
	c      nd.Connector
	ep     nd.Endpoint
	l      nd.Listener // passive side
	buf    []byte
	mr     nd.MemoryRegion
	mw     nd.MemoryWindow
	remote nd.MWDescriptor // the peer's window, bound for Read and Write
	shared bool            // in == out
	marks  [objCount]closeMark
}

// deps are the objects whose closing decides what a call on o returns:
// o, the objects it was made from and, for an endpoint, its queues.
func (s *lcSide) deps(o lcObject) []lcObject {
	switch o {
	case objEndpoint:
		return []lcObject{objEndpoint, objConnector, objInCQ, objOutCQ, objAdapter}
	case objAdapter:
		return []lcObject{objAdapter}
	default:
		return []lcObject{o, objAdapter}
	}
}

// closedBefore reports whether a close of one of deps returned, and
// whether the adapter's did.
func (s *lcSide) closedBefore(deps []lcObject) (any, adapter bool) {
	for _, o := range deps {
		any = any || s.marks[o].done.Load()
	}
	return any, s.marks[objAdapter].done.Load()
}

// closingAfter reports whether a close of one of deps started, and whether
// the adapter's did.
func (s *lcSide) closingAfter(deps []lcObject) (any, adapter bool) {
	for _, o := range deps {
		any = any || s.marks[o].started.Load()
	}
	return any, s.marks[objAdapter].started.Load()
}

// close closes o, recording the start and the end; with one queue for
// both directions, closing either is closing both.
func (s *lcSide) close(o lcObject) error {
	marks := []lcObject{o}
	if s.shared && (o == objInCQ || o == objOutCQ) {
		marks = []lcObject{objInCQ, objOutCQ}
	}
	for _, m := range marks {
		s.marks[m].started.Store(true)
	}
	var err error
	switch o {
	case objAdapter:
		err = s.a.Close()
	case objInCQ:
		err = s.in.Close()
	case objOutCQ:
		err = s.out.Close()
	case objConnector:
		err = s.c.Close()
	case objEndpoint:
		err = s.ep.Close()
	case objRegion:
		err = s.a.DeregisterMemory(context.Background(), s.mr)
	case objWindow:
		if s.mw != nil {
			err = s.mw.Close()
		}
	case objListener:
		if s.l != nil {
			err = s.l.Close()
		}
	}
	for _, m := range marks {
		s.marks[m].done.Store(true)
	}
	return err
}

// lcWorld is a connected pair and the ledger of its requests.
type lcWorld struct {
	t               testing.TB
	active, passive *lcSide
	ledger          ledger
	memoryGone      atomic.Bool // a region or window closed: requests may complete ErrAccessViolation
	// The connection may have ended (a close, Flush, Disconnect, an error
	// completion): the windows of both sides go with it, and on tcp and
	// shm a Read or Write that reached the peer just then may complete
	// ErrAccessViolation (docs/semantics.md).
	mayEnd           atomic.Bool
	failed           atomic.Bool
	mu               sync.Mutex
	errs             []string
	notifyTimeout    time.Duration
	racyAccess       bool // a one-sided request may race the end (see mayEnd)
	postedOK, closes atomic.Int64
}

// errorf records a failure; it may be called from any goroutine.
func (w *lcWorld) errorf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 20 {
		w.errs = append(w.errs, fmt.Sprintf(format, args...))
	}
	w.failed.Store(true)
}

// report fails t with what errorf recorded.
func (w *lcWorld) report(t testing.TB, what string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Errorf("%s: %s", what, e)
	}
	if len(w.errs) > 0 {
		t.FailNow()
	}
}

// lcLimits are the endpoints' limits; queues hold every request both
// endpoints can have outstanding, so no queue overruns.
var lcLimits = nd.EndpointLimits{
	InboundEntries: 8, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 2, OutboundReadLimit: 2,
}

const (
	lcCQEntries = 32
	lcMsg       = 16 // bytes of every Send and Receive
	lcBuf       = 4096
)

// newLCWorld opens two adapters of p, connects them, registers a buffer
// and binds a window on each side (the peer's descriptor is the side's
// remote), and pre-posts Receives on both sides (in the ledger).
func newLCWorld(t testing.TB, p nd.Provider, shared bool) (*lcWorld, error) {
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("setting up: Addresses() = %v, %v", addrs, err)
	}
	second := addrs[0]
	if len(addrs) > 1 {
		second = addrs[1]
	}
	// loop too: its peer's check of the access can still race with the
	// end of the connection (seen once in CI, seed 1); the fix is in
	// the transports (docs/semantics.md).
	w := &lcWorld{t: t, notifyTimeout: 2 * time.Millisecond, racyAccess: true}
	w.ledger.init()
	w.active = &lcSide{name: "active", shared: shared}
	w.passive = &lcSide{name: "passive", shared: shared}
	ok := false
	defer func() {
		if !ok {
			w.closeEverything(nil)
		}
	}()
	for i, s := range []*lcSide{w.active, w.passive} {
		addr := addrs[0]
		if i == 1 {
			addr = second
		}
		if s.a, err = p.OpenAdapter(addr); err != nil {
			return nil, fmt.Errorf("setting up: OpenAdapter: %w", err)
		}
		if s.in, err = s.a.CreateCompletionQueue(lcCQEntries); err != nil {
			return nil, fmt.Errorf("setting up: CreateCompletionQueue: %w", err)
		}
		s.out = s.in
		if !shared {
			if s.out, err = s.a.CreateCompletionQueue(lcCQEntries); err != nil {
				return nil, fmt.Errorf("setting up: CreateCompletionQueue: %w", err)
			}
		}
		if s.c, err = s.a.CreateConnector(); err != nil {
			return nil, fmt.Errorf("setting up: CreateConnector: %w", err)
		}
		s.buf = make([]byte, lcBuf)
		c, cancel := context.WithTimeout(context.Background(), Timeout)
		s.mr, err = s.a.RegisterMemory(c, s.buf)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("setting up: RegisterMemory: %w", err)
		}
		if s.mw, err = s.a.CreateMemoryWindow(nil); err != nil {
			return nil, fmt.Errorf("setting up: CreateMemoryWindow: %w", err)
		}
	}
	if err := w.connect(); err != nil {
		return nil, err
	}
	for _, s := range []*lcSide{w.active, w.passive} {
		for range 4 {
			w.post(s, opReceive)
		}
	}
	// Each side binds its window over the second half of its buffer; the
	// peer reads and writes through it.
	for _, s := range []*lcSide{w.active, w.passive} {
		res := w.ledger.add(s.name+" Bind", s.out, s)
		desc, err := s.ep.Bind(res, s.mr, s.mw, s.buf[lcBuf/2:], nd.FlagAllowRead|nd.FlagAllowWrite)
		w.ledger.posted(res, err)
		if err != nil {
			return nil, fmt.Errorf("setting up: Bind: %w", err)
		}
		w.peer(s).remote = desc
	}
	ok = true
	return w, nil
}

func (w *lcWorld) peer(s *lcSide) *lcSide {
	if s == w.active {
		return w.passive
	}
	return w.active
}

// connect makes the connection: active Connect and CompleteConnect,
// passive Listen, GetConnectionRequest, CreateEndpoint and Accept.
func (w *lcWorld) connect() error {
	a, b := w.active, w.passive
	var err error
	if a.ep, err = a.c.CreateEndpoint(a.in, a.out, lcLimits); err != nil {
		return fmt.Errorf("setting up: CreateEndpoint: %w", err)
	}
	if b.l, err = b.a.Listen(0, Protocol, 0); err != nil {
		return fmt.Errorf("setting up: Listen: %w", err)
	}
	c, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	connected := make(chan error, 1)
	go func() {
		err := a.c.Connect(c, a.ep, netip.AddrPortFrom(b.a.Address(), b.l.Port()), Protocol, 0, nil)
		if err == nil {
			err = a.c.CompleteConnect(c)
		}
		connected <- err
	}()
	if err := b.l.GetConnectionRequest(c, b.c); err != nil {
		cancel()
		<-connected
		return fmt.Errorf("setting up: GetConnectionRequest: %w", err)
	}
	if b.ep, err = b.c.CreateEndpoint(b.in, b.out, lcLimits); err != nil {
		cancel()
		<-connected
		return fmt.Errorf("passive CreateEndpoint: %w", err)
	}
	if err := b.c.Accept(c, b.ep, nil); err != nil {
		cancel()
		<-connected
		return fmt.Errorf("setting up: Accept: %w", err)
	}
	if err := <-connected; err != nil {
		return fmt.Errorf("setting up: Connect: %w", err)
	}
	return nil
}

// close closes o on s and checks what Close returned.
func (w *lcWorld) close(s *lcSide, o lcObject) {
	if o == objRegion || o == objWindow {
		w.memoryGone.Store(true)
	}
	w.closeStarts(s)
	w.closes.Add(1)
	err := s.close(o)
	st := nd.StatusOf(err)
	switch {
	case o == objRegion && (st == nd.ErrDeviceBusy || st == nd.ErrInvalidParameter1):
		// A window is bound in it; or it was deregistered already.
	case err != nil:
		w.errorf("%s %v.Close returned %v; want nil", s.name, o, err)
	}
}

// closeStarts records that a close starts on s.
func (w *lcWorld) closeStarts(*lcSide) { w.mayEnd.Store(true) }

// lcAllObjects is the order closeEverything uses unless told otherwise.
var lcAllObjects = []lcObject{objEndpoint, objConnector, objListener, objWindow, objRegion, objInCQ, objOutCQ, objAdapter}

// closeEverything closes every object of both sides (order: the active
// side's order, then the passive side's; nil: lcAllObjects).
func (w *lcWorld) closeEverything(order []lcObject) {
	if order == nil {
		order = lcAllObjects
	}
	for _, s := range []*lcSide{w.active, w.passive} {
		for _, o := range order {
			if (o == objAdapter && s.a == nil) || (o == objInCQ && s.in == nil) || (o == objOutCQ && s.out == nil) ||
				(o == objConnector && s.c == nil) || (o == objEndpoint && s.ep == nil) || (o == objRegion && s.mr == nil) {
				continue
			}
			if o == objRegion || o == objWindow {
				w.memoryGone.Store(true)
			}
			w.closeStarts(s)
			s.close(o)
		}
	}
}

// ctxTimeout is a context that ends after Timeout.
func ctxTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}

// lcOp is a posting call of the world.
type lcOp int

const (
	opSend lcOp = iota
	opReceive
	opRead
	opWrite
	opBindAgain // Bind of the side's window, bound already: completes ErrInvalidRequest
)

// post makes one posting call on s, checks its immediate result against the
// lifecycle rules, and records the request in the ledger if it was
// accepted.
func (w *lcWorld) post(s *lcSide, op lcOp) {
	cq := s.out
	if op == opReceive {
		cq = s.in
	}
	names := [...]string{"Send", "Receive", "Read", "Write", "Bind"}
	what := s.name + " " + names[op]
	res := w.ledger.add(what, cq, s)
	deps := s.deps(objEndpoint)
	anyBefore, adapterBefore := s.closedBefore(deps)
	var err error
	var sgl [1]nd.SGE
	switch op {
	case opSend:
		sgl[0] = nd.SGE{Buffer: s.buf[:lcMsg], Region: s.mr}
		err = s.ep.Send(res, sgl[:], 0)
	case opReceive:
		sgl[0] = nd.SGE{Buffer: s.buf[lcMsg : 2*lcMsg], Region: s.mr}
		err = s.ep.Receive(res, sgl[:])
	case opRead:
		sgl[0] = nd.SGE{Buffer: s.buf[2*lcMsg : 3*lcMsg], Region: s.mr}
		err = s.ep.Read(res, sgl[:], s.remote, 0, 0)
	case opWrite:
		sgl[0] = nd.SGE{Buffer: s.buf[3*lcMsg : 4*lcMsg], Region: s.mr}
		err = s.ep.Write(res, sgl[:], s.remote, 64, 0)
	case opBindAgain:
		w.mayEnd.Store(true) // it completes ErrInvalidRequest, which ends the connection
		_, err = s.ep.Bind(res, s.mr, s.mw, s.buf[lcBuf/2:], nd.FlagAllowRead)
	}
	w.ledger.posted(res, err)
	if err == nil {
		w.postedOK.Add(1)
	}
	extra := []nd.Status{nd.ErrNoMoreEntries}
	if op == opBindAgain {
		// The region deregistered, the window closed (parameter 3).
		extra = append(extra, nd.ErrAccessViolation, nd.ErrInvalidParameter3)
	}
	w.checkCall(s, what, deps, anyBefore, adapterBefore, err, extra...)
}

// checkCall applies the lifecycle rules to a call on an object of s whose
// closing deps decide its status: a call made after one of them closed
// returns ErrInvalidHandle, or ErrDeviceRemoved once the adapter closed;
// a call returns one of those only if such a close started; any other
// error must be in extra.
func (w *lcWorld) checkCall(s *lcSide, what string, deps []lcObject, anyBefore, adapterBefore bool, err error, extra ...nd.Status) {
	st := nd.StatusOf(err)
	anyAfter, adapterAfter := s.closingAfter(deps)
	closedSt := st == nd.ErrInvalidHandle || st == nd.ErrDeviceRemoved
	switch {
	case adapterBefore && st != nd.ErrDeviceRemoved:
		w.errorf("%s after Adapter.Close returned %v; want %v", what, err, nd.ErrDeviceRemoved)
	case anyBefore && !closedSt:
		w.errorf("%s after the close of %v returned %v; want %v", what, deps, err, nd.ErrInvalidHandle)
	case st == nd.ErrDeviceRemoved && !adapterAfter:
		w.errorf("%s returned %v with the adapter open", what, err)
	case closedSt && !anyAfter:
		w.errorf("%s returned %v though none of %v was closed", what, err, deps)
	case err != nil && !closedSt && !slices.Contains(extra, st):
		w.errorf("%s returned %v", what, err)
	}
}

// poll reaps what cq holds and checks each completion in the ledger.
func (w *lcWorld) poll(s *lcSide, cq nd.CompletionQueue) int {
	var out [8]*nd.Result
	total := 0
	for {
		n := cq.GetResults(out[:])
		for _, r := range out[:n] {
			w.ledger.complete(w, r, cq)
		}
		total += n
		if n < len(out) {
			return total
		}
	}
}

// notify waits briefly in Notify(NotifyAny) on the side's queue and checks
// the result.
func (w *lcWorld) notify(s *lcSide, o lcObject) {
	cq := s.in
	if o == objOutCQ {
		cq = s.out
	}
	deps := s.deps(o)
	anyBefore, adapterBefore := s.closedBefore(deps)
	c, cancel := context.WithTimeout(context.Background(), w.notifyTimeout)
	err := cq.Notify(c, nd.NotifyAny)
	cancel()
	w.checkCall(s, s.name+" "+o.String()+".Notify", deps, anyBefore, adapterBefore, err, nd.ErrCanceled)
	if st := nd.StatusOf(err); st == nd.ErrCanceled && anyBefore {
		w.errorf("%s.Notify after its close returned %v, the status of a call that was waiting", o, err)
	}
}

// ledger is the record of every request posted: a request accepted must
// come back from GetResults exactly once, from its own queue, with a
// status the rules allow.
type ledger struct {
	mu   sync.Mutex
	reqs map[*nd.Result]*lcReq
}

type lcReq struct {
	what      string
	cq        nd.CompletionQueue
	side      *lcSide
	refused   bool // the post returned an error
	returned  bool // the post returned
	completed int
	status    nd.Status
}

func (l *ledger) init() { l.reqs = make(map[*nd.Result]*lcReq) }

// add records a request about to be posted and returns its Result.
func (l *ledger) add(what string, cq nd.CompletionQueue, s *lcSide) *nd.Result {
	r := new(nd.Result)
	l.mu.Lock()
	l.reqs[r] = &lcReq{what: what, cq: cq, side: s}
	l.mu.Unlock()
	return r
}

// posted records what the posting call returned.
func (l *ledger) posted(r *nd.Result, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.reqs[r]
	q.returned = true
	q.refused = err != nil
}

// complete checks one completion handed back by cq.
func (l *ledger) complete(w *lcWorld, r *nd.Result, cq nd.CompletionQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.reqs[r]
	switch {
	case q == nil:
		w.errorf("GetResults returned %p, a Result never posted", r)
		return
	case q.cq != cq:
		w.errorf("%s completed on the wrong queue", q.what)
	}
	q.completed++
	q.status = r.Status
	if q.completed > 1 {
		w.errorf("%s completed %d times (status %v)", q.what, q.completed, r.Status)
	}
	if q.returned && q.refused {
		w.errorf("%s was refused by its posting call and completed with %v", q.what, r.Status)
	}
	allowed := []nd.Status{nd.Success, nd.ErrCanceled, nd.ErrRemoteError, nd.ErrInvalidRequest}
	oneSided := strings.HasSuffix(q.what, " Read") || strings.HasSuffix(q.what, " Write")
	if w.memoryGone.Load() || (oneSided && w.mayEnd.Load() && w.racyAccess) {
		allowed = append(allowed, nd.ErrAccessViolation)
	}
	if !slices.Contains(allowed, r.Status) {
		w.errorf("%s completed with %v", q.what, r.Status)
	}
}

// outstanding lists the requests accepted and not completed.
func (l *ledger) outstanding() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, q := range l.reqs {
		if (!q.returned || !q.refused) && q.completed == 0 {
			out = append(out, q.what)
		}
	}
	slices.Sort(out)
	return out
}

// drain polls every queue of the world until every accepted request has
// completed, or fails after Timeout: a request that never completes is the
// bug the lifecycle cases look for.
func (w *lcWorld) drain() {
	deadline := time.Now().Add(Timeout)
	pause := 50 * time.Microsecond
	for {
		for _, s := range []*lcSide{w.active, w.passive} {
			w.poll(s, s.in)
			if !s.shared {
				w.poll(s, s.out)
			}
		}
		left := w.ledger.outstanding()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.errorf("%d requests accepted and never completed within %v: %v", len(left), Timeout, left)
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}
