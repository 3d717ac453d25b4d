//go:build verbs && linux

package verbs

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// cmTarget receives the rdma_cm events of one id.
type cmTarget interface{ onEvent(ev cmEvent) }

// Adapter is one opened instance of an RDMA device port, for one IPv4
// address. Its methods are safe for concurrent use.
type Adapter struct {
	p    *Provider
	addr netip.Addr
	ctx  cContext
	port int
	dev  devInfo
	info nd.AdapterInfo
	pd   cPD

	ch     cEvCh
	chFile *os.File
	ev     cEv
	dummy  unsafe.Pointer // a small registered C buffer for Receives without entries
	dumMR  cMR
	dumKey uint32
	// rnrRetry is the RNR retry count announced to peers on RoCE/IB:
	// 0, so that a peer's Send that finds no Receive ends the
	// connection (ND). Tests set it to stand for a foreign program.
	rnrRetry int
	wg       sync.WaitGroup
	done     chan struct{} // closed by Close

	gone atomic.Bool // Close started: later calls return ErrDeviceRemoved

	mu         sync.Mutex
	closed     bool
	nextHandle uintptr
	handles    map[uintptr]cmTarget
	ports      map[uint16]*portListener
	cqs        map[*cq]struct{}
	mrs        map[*memRegion]struct{}
	mws        map[*window]struct{}
	conns      map[*connector]struct{}
	eps        map[*endpoint]struct{}
	srqs       map[*srq]struct{}
	nextEP     uint32
}

var _ nd.Adapter = (*Adapter)(nil)

func newAdapter(p *Provider, addr netip.Addr, ctx cContext, port int) (*Adapter, error) {
	d, err := queryDevice(ctx, port)
	if err != nil {
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrDeviceNotReady, Err: err}
	}
	guardKeys(ctx, d)
	pd, err := allocPD(ctx)
	if err != nil {
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrInsufficientResources, Err: err}
	}
	p.mu.Lock()
	inl, ok := p.inline[d.name]
	if !ok {
		inl = probeInline(ctx, pd)
		p.inline[d.name] = inl
	}
	p.mu.Unlock()
	d.maxInline = inl
	ch, fd, err := createEventChannel()
	if err != nil {
		deallocPD(pd)
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrDeviceNotReady, Err: err}
	}
	dfd, err := syscall.Dup(fd)
	if err != nil {
		destroyEventChannel(ch)
		deallocPD(pd)
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrInsufficientResources, Err: err}
	}
	syscall.CloseOnExec(dfd)
	a := &Adapter{
		p: p, addr: addr, ctx: ctx, port: port, dev: d, info: adapterInfo(d), pd: pd,
		ch: ch, chFile: os.NewFile(uintptr(dfd), "rdma_cm"), ev: newEv(), done: make(chan struct{}),
		nextHandle: 1, handles: map[uintptr]cmTarget{}, ports: map[uint16]*portListener{},
		cqs: map[*cq]struct{}{}, mrs: map[*memRegion]struct{}{}, mws: map[*window]struct{}{},
		conns: map[*connector]struct{}{}, eps: map[*endpoint]struct{}{}, srqs: map[*srq]struct{}{},
	}
	a.dummy = cMalloc(64)
	if a.dumMR, a.dumKey, _, err = regMR(pd, a.dummy, 64, accLocalWrite); err != nil {
		a.Close()
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrInsufficientResources, Err: err}
	}
	a.wg.Add(1)
	go a.cmLoop()
	return a, nil
}

// cmLoop reads rdma_cm events when the channel's descriptor is readable in
// the Go poller, and dispatches them; it never blocks a thread in C.
func (a *Adapter) cmLoop() {
	defer a.wg.Done()
	rc, err := a.chFile.SyscallConn()
	if err != nil {
		return
	}
	for {
		var ev cmEvent
		var got bool
		var evErr error
		err := rc.Read(func(uintptr) bool {
			ev, got, evErr = getCMEvent(a.ch, a.ev)
			return got || evErr != nil
		})
		if err != nil || evErr != nil {
			return
		}
		a.dispatch(ev)
	}
}

func (a *Adapter) dispatch(ev cmEvent) {
	a.mu.Lock()
	h := ev.handle
	if ev.typ == evConnectRequest {
		h = ev.listenHandle
	}
	t := a.handles[h]
	a.mu.Unlock()
	if t == nil {
		if ev.typ == evConnectRequest {
			cmReject(ev.id, nil)
			destroyID(ev.id)
		}
		return
	}
	t.onEvent(ev)
}

// register assigns a handle for t; unregister drops it.
func (a *Adapter) register(t cmTarget) uintptr {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.nextHandle
	a.nextHandle++
	a.handles[h] = t
	return h
}

func (a *Adapter) retarget(h uintptr, t cmTarget) {
	a.mu.Lock()
	a.handles[h] = t
	a.mu.Unlock()
}

func (a *Adapter) unregister(h uintptr) {
	a.mu.Lock()
	delete(a.handles, h)
	a.mu.Unlock()
}

func (a *Adapter) isClosed() bool { return a.gone.Load() }

// closedErr is the error of a call on an object of a made after the object
// (closed) or the adapter closed, or nil (docs/semantics.md, "Closing
// objects").
func (a *Adapter) closedErr(closed bool) error {
	return ndrules.Closed(a.gone.Load(), closed).Err()
}

// withCause is the error of call op that failed with st because of err:
// st alone when there is no cause, else an *nd.OpError that carries err
// (package nd's error shape).
func withCause(op string, st nd.Status, err error) error {
	if err == nil {
		return st
	}
	return &nd.OpError{Op: op, Status: st, Err: err}
}

// Address implements nd.Adapter.
func (a *Adapter) Address() netip.Addr { return a.addr }

// Query implements nd.Adapter.
func (a *Adapter) Query() (nd.AdapterInfo, error) {
	if a.isClosed() {
		return nd.AdapterInfo{}, nd.ErrDeviceRemoved
	}
	return a.info, nil
}

// Device returns the name of the RDMA device (such as "siw0") and whether
// it is an iWARP device.
func (a *Adapter) Device() (name string, iwarp bool) { return a.dev.name, a.dev.iwarp }

// HardwareWindows reports whether memory windows are the device's own
// (false: they are emulated with memory registrations, see docs/verbs.md).
func (a *Adapter) HardwareWindows() bool { return false }

// CreateCompletionQueue implements nd.Adapter.
func (a *Adapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	if a.isClosed() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.CQEntries("CreateCompletionQueue", &a.info, entries); err != nil {
		return nil, err
	}
	q, err := newCQ(a, entries)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		q.Close()
		return nil, nd.ErrDeviceRemoved
	}
	a.cqs[q] = struct{}{}
	a.mu.Unlock()
	return q, nil
}

// CreateConnector implements nd.Adapter.
func (a *Adapter) CreateConnector() (nd.Connector, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nd.ErrDeviceRemoved
	}
	c := newConnector(a)
	a.conns[c] = struct{}{}
	return c, nil
}

// Listen implements nd.Adapter.
func (a *Adapter) Listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	if a.isClosed() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.Listen(backlog, protocol); err != nil {
		return nil, err
	}
	return a.listen(backlog, protocol, port)
}

// Close implements nd.Adapter.
func (a *Adapter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.gone.Store(true)
	close(a.done)
	var ls []*portListener
	for _, pl := range a.ports {
		ls = append(ls, pl)
	}
	var conns []*connector
	for c := range a.conns {
		conns = append(conns, c)
	}
	var eps []*endpoint
	for e := range a.eps {
		eps = append(eps, e)
	}
	var srqs []*srq
	for s := range a.srqs {
		srqs = append(srqs, s)
	}
	var mws []*window
	for w := range a.mws {
		mws = append(mws, w)
	}
	var mrs []*memRegion
	for m := range a.mrs {
		mrs = append(mrs, m)
	}
	var cqs []*cq
	for q := range a.cqs {
		cqs = append(cqs, q)
	}
	a.mu.Unlock()
	for _, pl := range ls {
		pl.closeAll()
	}
	for _, c := range conns {
		c.Close()
	}
	for _, e := range eps {
		e.Close()
	}
	for _, s := range srqs {
		s.Close()
	}
	for _, w := range mws {
		w.Close()
	}
	for _, m := range mrs {
		a.deregister(m)
	}
	for _, q := range cqs {
		q.Close()
	}
	a.chFile.Close()
	a.wg.Wait()
	destroyEventChannel(a.ch)
	cFree(ptr(a.ev))
	if a.dumMR != nil {
		deregMR(a.dumMR)
	}
	cFree(a.dummy)
	deallocPD(a.pd)
	return nil
}

// canceled is the error of a blocking call whose context ended.
func canceled(op string, ctx context.Context) error {
	return &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: ctx.Err()}
}

var errClosed = errors.New("closed")
