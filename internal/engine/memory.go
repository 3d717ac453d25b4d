package engine

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
)

// Region is a memory registration (nd.MemoryRegion). It keeps its buffer
// alive and records its bounds; it is safe for concurrent use.
type Region struct {
	a          *Adapter
	buf        []byte
	registered atomic.Bool
	windows    atomic.Int32  // windows bound inside the region
	holds      holdCount     // remote accesses in progress inside the region (hold.go)
	drained    chan struct{} // closed at the last Release while DeregisterMemory waits; guarded by a.windowMu
}

var _ nd.MemoryRegion = (*Region)(nil)

// Bytes implements nd.MemoryRegion.
func (r *Region) Bytes() []byte { return r.buf }

// Window is a memory window (nd.MemoryWindow). Its binding is guarded by the
// adapter's window lock.
type Window struct {
	a          *Adapter
	invalidate *nd.Result // the caller's Result for invalidation by the peer
	holds      holdCount  // remote accesses in progress through the window (hold.go)

	// Guarded by a.windowMu.
	pending []pendingInvalidate // Invalidates waiting for holds (hold.go)
	bound   bool
	closed  bool
	token   uint32
	region  *Region
	buf     []byte // the bound range
	base    uint64 // address of buf[0] as given in the descriptor
	rights  nd.Flags
	ep      *Endpoint
}

var _ nd.MemoryWindow = (*Window)(nil)

// Close implements nd.MemoryWindow.
func (w *Window) Close() error {
	w.a.windowMu.Lock()
	var u unbound
	if w.bound {
		u = w.a.unbindLocked(w)
	}
	w.closed = true
	w.a.windowMu.Unlock()
	u.publish()
	return nil
}

// isClosed reports whether Close was called.
func (w *Window) isClosed() bool {
	w.a.windowMu.RLock()
	defer w.a.windowMu.RUnlock()
	return w.closed
}

// unbound is a window the engine just unbound, for the endpoint's
// WindowTable (if its link has one) to learn after the locks are released.
type unbound struct {
	ep    *Endpoint
	token uint32
}

func (u unbound) publish() {
	if u.ep == nil {
		return
	}
	if t, ok := u.ep.windowTable(); ok {
		t.WindowUnbound(u.token)
	}
}

// windowTable returns the endpoint's link as a WindowTable, if it is one.
func (ep *Endpoint) windowTable() (WindowTable, bool) {
	ep.mu.Lock()
	link := ep.link
	if link == nil {
		link = ep.closeLink
	}
	ep.mu.Unlock()
	t, ok := link.(WindowTable)
	return t, ok
}

// windowTable maps tokens to bound windows.
type windowTable struct {
	windowMu sync.RWMutex
	windows  map[uint32]*Window
}

// bindLocked binds w and returns its descriptor. The token is random and
// never reused while bound; a stale token from an earlier binding fails.
func (a *Adapter) bindLocked(w *Window, r *Region, buf []byte, rights nd.Flags, ep *Endpoint) nd.MWDescriptor {
	var token uint32
	for {
		token = rand.Uint32()
		if _, taken := a.windows[token]; token != 0 && !taken {
			break
		}
	}
	w.bound, w.token, w.region, w.buf, w.rights, w.ep = true, token, r, buf, rights, ep
	w.base = uint64(addrOf(buf))
	if len(buf) == 0 {
		w.base = uint64(addrOf(r.buf))
	}
	a.windows[token] = w
	r.windows.Add(1)
	return nd.MWDescriptor{Base: w.base, Length: uint64(len(buf)), Token: token}
}

func (a *Adapter) unbindLocked(w *Window) unbound {
	u := unbound{ep: w.ep, token: w.token}
	delete(a.windows, w.token)
	w.region.windows.Add(-1)
	w.bound, w.region, w.buf, w.ep = false, nil, nil, nil
	return u
}

// unbindEndpoint unbinds every window bound to ep: a window lives no longer
// than its connection. link is the connection's link, for its WindowTable.
func (a *Adapter) unbindEndpoint(ep *Endpoint, link Link) {
	var tokens []uint32
	a.windowMu.Lock()
	for _, w := range a.windows {
		if w.ep == ep {
			tokens = append(tokens, a.unbindLocked(w).token)
		}
	}
	a.windowMu.Unlock()
	if t, ok := link.(WindowTable); ok {
		for _, token := range tokens {
			t.WindowUnbound(token)
		}
	}
}

// Fault says why a remote access was refused, for transports that report
// the reason to the peer (an iWARP Terminate carries it).
type Fault uint8

// The reasons a remote access is refused.
const (
	FaultNone          Fault = iota
	FaultInvalidToken        // no window is bound with the token
	FaultNotAssociated       // the window is bound to another endpoint
	FaultRights              // the window does not allow the access
	FaultBounds              // the range is not inside the window
	FaultWrap                // the range wraps around the address space
)

// AccessFault checks a remote request that arrived on ep against the window
// named by token: the window must be bound to ep, allow the access (write or
// read), and contain [addr, addr+length). It returns the target bytes of
// registered memory, or says why the access is refused. The bytes are not
// held: a transport that uses them after an Invalidate could complete uses
// HoldAccess, ReadAt, WriteAt or AccessWith instead. It allocates nothing.
func (ep *Endpoint) AccessFault(token uint32, addr uint64, length int, write bool) ([]byte, Fault) {
	a := ep.a
	a.windowMu.RLock()
	defer a.windowMu.RUnlock()
	mem, _, f := ep.accessLocked(token, addr, length, write)
	return mem, f
}

// WriteAt copies data to addr in the window named by token, as the next
// piece of an inbound RDMA Write that arrives in several pieces, if the
// window still allows it (the checks of Access), and says why not
// otherwise. The check and the copy are one step with respect to Bind,
// Invalidate and Close: once an invalidation is reported, no piece lands.
// It allocates nothing.
func (ep *Endpoint) WriteAt(token uint32, addr uint64, data []byte) Fault {
	return ep.copyAt(token, addr, data, true)
}

// ReadAt copies into dst the bytes at addr in the window named by token,
// as the next piece of the response to an inbound RDMA Read that leaves
// in several pieces, if the window still allows it (the checks of Access),
// and says why not otherwise. The check and the copy are one step with
// respect to Bind, Invalidate and Close: once an invalidation is reported,
// no byte of the window is read. It allocates nothing.
func (ep *Endpoint) ReadAt(token uint32, addr uint64, dst []byte) Fault {
	return ep.copyAt(token, addr, dst, false)
}

// copyAt is WriteAt (write: b into the window) and ReadAt (the window into
// b).
func (ep *Endpoint) copyAt(token uint32, addr uint64, b []byte, write bool) Fault {
	a := ep.a
	a.windowMu.RLock()
	defer a.windowMu.RUnlock()
	mem, _, f := ep.accessLocked(token, addr, len(b), write)
	switch {
	case f != FaultNone:
	case write:
		Place(mem, b)
	default:
		copy(b, mem)
	}
	return f
}

// AccessWith calls use with the bytes [addr, addr+length) of the window
// named by token if the window allows the access (the checks of Access),
// and says why not otherwise. The window stays as it is while use runs:
// Bind, Invalidate and Close of it wait, so once an invalidation is
// reported no use of its bytes is still running. use must not call back
// into the adapter's windows. It allocates nothing itself.
func (ep *Endpoint) AccessWith(token uint32, addr uint64, length int, write bool, use func(mem []byte)) Fault {
	a := ep.a
	a.windowMu.RLock()
	defer a.windowMu.RUnlock()
	mem, _, f := ep.accessLocked(token, addr, length, write)
	if f == FaultNone {
		use(mem)
	}
	return f
}

// accessLocked is AccessFault with windowMu held; it also returns the
// window. A refused access is noted for the reason of the end it leads
// to (reason.go).
func (ep *Endpoint) accessLocked(token uint32, addr uint64, length int, write bool) ([]byte, *Window, Fault) {
	mem, w, f := ep.lookupLocked(token, addr, length, write)
	if f != FaultNone {
		ep.noteRefused(f, write)
	}
	return mem, w, f
}

// lookupLocked checks an access against the window named by token.
func (ep *Endpoint) lookupLocked(token uint32, addr uint64, length int, write bool) ([]byte, *Window, Fault) {
	a := ep.a
	w := a.windows[token]
	switch {
	case w == nil:
		return nil, nil, FaultInvalidToken
	case w.ep != ep && w.ep != nil: // nil: a remote access (remote.go)
		return nil, nil, FaultNotAssociated
	case length < 0 || addr+uint64(length) < addr:
		return nil, nil, FaultWrap
	}
	need := nd.FlagAllowRead
	if write {
		need = nd.FlagAllowWrite
	}
	if w.rights&need == 0 {
		return nil, nil, FaultRights
	}
	if addr < w.base {
		return nil, nil, FaultBounds
	}
	off := addr - w.base
	if off > uint64(len(w.buf)) || uint64(length) > uint64(len(w.buf))-off {
		return nil, nil, FaultBounds
	}
	return w.buf[off : off+uint64(length)], w, FaultNone
}

// InvalidateWindow invalidates the window named by token on behalf of the
// peer of ep (SendAndInvalidate). The window must be bound to ep; otherwise
// it returns ErrInvalidationError.
func (ep *Endpoint) InvalidateWindow(token uint32) nd.Status {
	a := ep.a
	a.windowMu.Lock()
	w := a.windows[token]
	if w == nil || w.ep != ep {
		a.windowMu.Unlock()
		return nd.ErrInvalidationError
	}
	u := a.unbindLocked(w)
	if w.invalidate != nil {
		w.invalidate.Status = nd.Success
		w.invalidate.BytesTransferred = 0
	}
	a.windowMu.Unlock()
	u.publish()
	return nd.Success
}
