package engine

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// Adapter is an opened software adapter (nd.Adapter). Its methods are safe
// for concurrent use.
type Adapter struct {
	addr      netip.Addr
	info      nd.AdapterInfo
	transport Transport
	progress  Progress // transport's, if it implements it
	closed    atomic.Bool
	// closes counts the Close calls of the adapter's endpoints,
	// connectors, completion queues and shared receive queues, each
	// counted after it set the flag that refuses posts (isClosed) and
	// before it returns: an endpoint that found itself open when the
	// count was n is open while it is n (Endpoint.admitLocked).
	closes atomic.Uint64

	windowTable
	// publishMu orders what links that publish windows learn of remote
	// accesses (remote.go); taken before windowMu and any endpoint's mu.
	publishMu sync.Mutex

	mu         sync.Mutex
	cqs        map[*CQ]struct{}
	srqs       map[*SRQ]struct{}
	connectors map[*Connector]struct{}
	listeners  map[*Listener]struct{}
}

var _ nd.Adapter = (*Adapter)(nil)

// NewAdapter opens an adapter on addr with the limits of info, moving its
// traffic through t.
func NewAdapter(addr netip.Addr, info nd.AdapterInfo, t Transport) *Adapter {
	progress, _ := t.(Progress)
	return &Adapter{
		addr: addr, info: info, transport: t, progress: progress,
		windowTable: windowTable{windows: make(map[uint32]*Window)},
		cqs:         make(map[*CQ]struct{}),
		srqs:        make(map[*SRQ]struct{}),
		connectors:  make(map[*Connector]struct{}),
		listeners:   make(map[*Listener]struct{}),
	}
}

// Address implements nd.Adapter.
func (a *Adapter) Address() netip.Addr { return a.addr }

// Query implements nd.Adapter.
func (a *Adapter) Query() (nd.AdapterInfo, error) {
	if a.closed.Load() {
		return nd.AdapterInfo{}, nd.ErrDeviceRemoved
	}
	return a.info, nil
}

// CreateCompletionQueue implements nd.Adapter.
func (a *Adapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.CQEntries("CreateCompletionQueue", &a.info, entries); err != nil {
		return nil, err
	}
	q := newCQ(a, entries)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed.Load() { // Close took its list already
		return nil, nd.ErrDeviceRemoved
	}
	a.cqs[q] = struct{}{}
	return q, nil
}

// RegisterMemory implements nd.Adapter.
func (a *Adapter) RegisterMemory(ctx context.Context, buf []byte) (nd.MemoryRegion, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.RegisterMemory(&a.info, buf); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, canceled("RegisterMemory", err)
	}
	r := &Region{a: a, buf: buf}
	r.registered.Store(true)
	return r, nil
}

// DeregisterMemory implements nd.Adapter.
func (a *Adapter) DeregisterMemory(ctx context.Context, mr nd.MemoryRegion) error {
	r, ok := mr.(*Region)
	if !ok || r == nil || r.a != a {
		return ndrules.Arg("DeregisterMemory", "mr", nd.ErrInvalidParameter1, "not a registration of this adapter")
	}
	if a.closed.Load() {
		// Cleanup succeeds: the adapter's connections, and with them its
		// windows, ended when it closed.
		r.registered.Store(false)
		return nil
	}
	for {
		a.windowMu.Lock()
		if r.windows.Load() > 0 {
			a.windowMu.Unlock()
			return nd.ErrDeviceBusy
		}
		if !r.registered.Load() {
			a.windowMu.Unlock()
			return ndrules.Arg("DeregisterMemory", "mr", nd.ErrInvalidParameter1, "deregistered already")
		}
		// A window unbound by Close or by the end of its connection may
		// still have a transfer touching its bytes (hold.go).
		drained := r.drainedLocked()
		if drained == nil {
			r.registered.Store(false)
			a.windowMu.Unlock()
			return nil
		}
		a.windowMu.Unlock()
		select {
		case <-drained:
		case <-ctx.Done():
			return canceled("DeregisterMemory", ctx.Err())
		}
	}
}

// CreateMemoryWindow implements nd.Adapter.
func (a *Adapter) CreateMemoryWindow(invalidateResult *nd.Result) (nd.MemoryWindow, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	return &Window{a: a, invalidate: invalidateResult}, nil
}

// CreateConnector implements nd.Adapter.
func (a *Adapter) CreateConnector() (nd.Connector, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	c := newConnector(a)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	a.connectors[c] = struct{}{}
	return c, nil
}

// Listen implements nd.Adapter.
func (a *Adapter) Listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.Listen(backlog, protocol); err != nil {
		return nil, err
	}
	l := newListener(a, backlog, protocol)
	p, err := a.transport.Listen(l, a.addr, protocol, port)
	if err != nil {
		return nil, err
	}
	l.port = p
	a.mu.Lock()
	if a.closed.Load() {
		a.mu.Unlock()
		l.Close()
		return nil, nd.ErrDeviceRemoved
	}
	a.listeners[l] = struct{}{}
	a.mu.Unlock()
	return l, nil
}

// Close implements nd.Adapter: listeners first (no new requests), then
// connectors, which close their endpoints (their requests complete
// ErrCanceled into the queues), then the shared receive queues (their
// Receives complete ErrCanceled), then the completion queues.
func (a *Adapter) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	a.mu.Lock()
	var ls []*Listener
	for l := range a.listeners {
		ls = append(ls, l)
	}
	var cs []*Connector
	for c := range a.connectors {
		cs = append(cs, c)
	}
	var qs []*CQ
	for q := range a.cqs {
		qs = append(qs, q)
	}
	var ss []*SRQ
	for s := range a.srqs {
		ss = append(ss, s)
	}
	a.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, c := range cs {
		c.Close()
	}
	for _, s := range ss {
		s.Close()
	}
	for _, q := range qs {
		q.Close()
	}
	a.closeRemoteAccess()
	return nil
}

func (a *Adapter) forget(c *Connector) {
	a.mu.Lock()
	delete(a.connectors, c)
	a.mu.Unlock()
}

func (a *Adapter) forgetCQ(q *CQ) {
	a.mu.Lock()
	delete(a.cqs, q)
	a.mu.Unlock()
}

func (a *Adapter) forgetListener(l *Listener) {
	a.mu.Lock()
	delete(a.listeners, l)
	a.mu.Unlock()
}
