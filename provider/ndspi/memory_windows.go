//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// region is an nd.MemoryRegion: the caller's buffer, pinned from before
// its registration until after its deregistration (the provider reads and
// writes it from its own threads and, on hardware, by DMA), and the name
// scatter/gather entries give it: ND v1's memory handle, ND v2's local
// token of its IND2MemoryRegion. Its methods are safe for concurrent use.
type region struct {
	a      *adapter
	buf    []byte
	pin    runtime.Pinner
	handle uint64 // v1: ND_MR_HANDLE; v2: the local token
	mr     com    // v2: the IND2MemoryRegion
	g      guard  // v2: the region's overlapped requests
	live   atomic.Bool

	mu       sync.Mutex // registration's end
	accesses int        // v2: remote accesses open on it (ErrDeviceBusy)
}

var _ nd.MemoryRegion = (*region)(nil)

// Bytes implements nd.MemoryRegion.
func (r *region) Bytes() []byte { return r.buf }

// regionRequest is an overlapped request of an ND v2 memory region.
func (a *adapter) regionRequest(mr com, g *guard, op string) request {
	return request{port: a.b.port, g: g, obj: mr, op: op, again: true,
		closed: func() nd.Status { return nd.ErrDeviceRemoved }}
}

// register registers the n bytes at addr on the adapter: ND v1's
// RegisterMemory (the memory handle), or a new IND2MemoryRegion's Register
// with flags (the region and its local token).
func (a *adapter) register(ctx context.Context, addr, n uintptr, flags uint32) (handle uint64, mr com, err error) {
	s, err := newScratch()
	if err != nil {
		return 0, 0, err
	}
	defer s.free()
	if a.v1 {
		rq := a.request("RegisterMemory", true)
		err = rq.do(ctx, func(ov uintptr) nd.Status {
			return a.obj.call(ndabi.INDAdapterRegisterMemory, addr, n, ov, s.ptr(0))
		})
		return s.word(0), 0, err
	}
	if st := a.obj.call(ndabi.IND2AdapterCreateMemoryRegion, guidArg(&ndabi.IIDIND2MemoryRegion), uintptr(a.file), s.ptr(0)); st != nd.Success {
		return 0, 0, st
	}
	mr = com(s.word(0))
	var g guard
	rq := a.regionRequest(mr, &g, "RegisterMemory")
	if err := rq.do(ctx, func(ov uintptr) nd.Status {
		return mr.call(ndabi.IND2MemoryRegionRegister, addr, n, uintptr(flags), ov)
	}); err != nil {
		mr.release()
		return 0, 0, err
	}
	return uint64(uint32(mr.raw(ndabi.IND2MemoryRegionGetLocalToken))), mr, nil
}

// deregisterHandle ends a registration that register made.
func (a *adapter) deregisterHandle(ctx context.Context, handle uint64, mr com, g *guard) error {
	if a.v1 {
		rq := a.request("DeregisterMemory", true)
		return rq.do(ctx, func(ov uintptr) nd.Status {
			return a.obj.call(ndabi.INDAdapterDeregisterMemory, uintptr(handle), ov)
		})
	}
	rq := a.regionRequest(mr, g, "DeregisterMemory")
	if err := rq.do(ctx, func(ov uintptr) nd.Status {
		return mr.call(ndabi.IND2MemoryRegionDeregister, ov)
	}); err != nil {
		return err
	}
	g.close(mr)
	mr.release()
	return nil
}

// v2RegionFlags are the ND v2 flags of nd's registrations: the provider
// may write them (Receives, Read sinks; ND_MR_FLAG_RDMA_READ_SINK for
// iWARP's Reads) and windows may be bound in them with write rights.
// Remote access is AllowRemoteAccess's, through a registration of its own.
const v2RegionFlags = ndabi.MRFlagAllowLocalWrite | ndabi.MRFlagRDMAReadSink

// RegisterMemory implements nd.Adapter: the buffer is pinned, then
// registered (ND v1 RegisterMemory; ND v2 CreateMemoryRegion and Register
// with local write and Read-sink rights). The provider checks the buffer
// (nil: ErrInvalidParameter, empty: ErrInvalidBufferSize, beyond
// MaxRegistrationSize: ErrInvalidParameter).
func (a *adapter) RegisterMemory(ctx context.Context, buf []byte) (nd.MemoryRegion, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	r := &region{a: a, buf: buf}
	if len(buf) > 0 {
		r.pin.Pin(&buf[0])
	}
	addr := uintptr(0)
	if buf != nil {
		addr = bytesAddrAny(buf)
	}
	h, mr, err := a.register(ctx, addr, uintptr(len(buf)), v2RegionFlags)
	if err != nil {
		r.pin.Unpin()
		return nil, err
	}
	r.handle, r.mr = h, mr
	r.live.Store(true)
	if !add(a, a.regions, r) {
		r.deregister(context.Background())
		return nil, nd.ErrDeviceRemoved
	}
	return r, nil
}

// DeregisterMemory implements nd.Adapter: ND's deregistration, then the
// buffer is unpinned. A region of another adapter, or one deregistered
// already, is ErrInvalidParameter1; one with a window bound is
// ErrDeviceBusy (the provider's answer), as one with a remote access open
// (ND v2); after the adapter closed (which deregistered every region) it
// returns nil.
func (a *adapter) DeregisterMemory(ctx context.Context, mr nd.MemoryRegion) error {
	r, ok := mr.(*region)
	if !ok || r == nil || r.a != a {
		return nd.ErrInvalidParameter1
	}
	if a.closed.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live.Load() {
		return nd.ErrInvalidParameter1
	}
	if r.accesses > 0 {
		return nd.ErrDeviceBusy
	}
	if err := a.deregisterHandle(ctx, r.handle, r.mr, &r.g); err != nil {
		if a.closed.Load() {
			return nil
		}
		return err
	}
	r.live.Store(false)
	r.pin.Unpin()
	remove(a, a.regions, r)
	return nil
}

// deregister ends the registration as the adapter closes: whatever the
// provider answers, the region is dead and unpinned once the adapter is
// released (the caller's Close releases it right after).
func (r *region) deregister(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live.Swap(false) {
		return
	}
	r.a.deregisterHandle(ctx, r.handle, r.mr, &r.g)
	if r.mr != 0 && !r.g.isClosed() {
		r.g.close(r.mr)
		r.mr.release() // refused (a window bound): the region goes with the adapter
	}
	r.pin.Unpin()
	remove(r.a, r.a.regions, r)
}

// regionOf is the handle a scatter/gather entry of r gives the provider:
// r's own when it is a live registration of a, else the poison
// registration's (the provider then completes the request with
// ND_ACCESS_VIOLATION, as nd asks for an entry naming no registration of
// the adapter).
func (a *adapter) regionOf(mr nd.MemoryRegion) (handle uint64, ok bool) {
	if r, isOurs := mr.(*region); isOurs && r != nil && r.a == a && r.live.Load() {
		return r.handle, true
	}
	return a.poison.handle, false
}

// poison is a small registration of memory outside the Go heap that a
// scatter/gather entry is given in place of a region that is not a live
// registration of the adapter (nil on a Receive or a Read, deregistered,
// of another adapter, of another provider): the entry then points just
// past it, so the provider refuses the request with ND_ACCESS_VIOLATION
// on its own, in order with the endpoint's other requests, and ends the
// connection, as nd says.
type poison struct {
	mem    cmem
	handle uint64
	mr     com
	g      guard
}

const poisonSize = 64

func (p *poison) register(a *adapter) error {
	m, err := allocC(poisonSize)
	if err != nil {
		return err
	}
	h, mr, err := a.register(context.Background(), m.addr, poisonSize, ndabi.MRFlagAllowLocalWrite)
	if err != nil {
		m.free()
		return err
	}
	p.mem, p.handle, p.mr = m, h, mr
	return nil
}

// addr is where an entry that names no registration points: just past
// the poison registration.
func (p *poison) addr() uintptr { return p.mem.addr + poisonSize }

func (p *poison) release(a *adapter) {
	if p.mem.addr == 0 {
		return
	}
	if err := a.deregisterHandle(context.Background(), p.handle, p.mr, &p.g); err != nil && p.mr != 0 {
		p.g.close(p.mr)
		p.mr.release()
	}
	p.mem.free()
}

// window is an nd.MemoryWindow: an ND v1 INDMemoryWindow or ND v2
// IND2MemoryWindow. Its methods are safe for concurrent use.
type window struct {
	a   *adapter
	obj com

	mu     sync.RWMutex // Bind and Invalidate hold it for reading, Close for writing
	closed bool

	// ND v1: the ND_RESULT the provider writes when the peer invalidates
	// the window (SendAndInvalidate), outside the Go heap, the caller's
	// Result it is copied to, and the status last copied.
	inv     *nd.Result
	invMem  cmem
	invSeen uint32
}

var _ nd.MemoryWindow = (*window)(nil)

// CreateMemoryWindow implements nd.Adapter. ND v1 takes invalidateResult
// as the ND_RESULT it writes when the peer invalidates the window; the
// provider writes one of ndspi's, which GetResults copies to
// invalidateResult as it reaps a Receive. ND v2 has no SendAndInvalidate:
// there invalidateResult is never written.
func (a *adapter) CreateMemoryWindow(invalidateResult *nd.Result) (nd.MemoryWindow, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	w := &window{a: a, inv: invalidateResult}
	if a.v1 {
		if w.invMem, err = allocC(ndabi.SizeofResult); err != nil {
			return nil, err
		}
		if invalidateResult != nil {
			w.invSeen = uint32(invalidateResult.Status)
			w.invMem.setU32(0, w.invSeen)
		}
		if st := a.obj.call(ndabi.INDAdapterCreateMemoryWindow, w.invMem.addr, s.ptr(0)); st != nd.Success {
			w.invMem.free()
			return nil, st
		}
	} else if st := a.obj.call(ndabi.IND2AdapterCreateMemoryWindow, guidArg(&ndabi.IIDIND2MemoryWindow), s.ptr(0)); st != nd.Success {
		return nil, st
	}
	w.obj = com(s.word(0))
	if !add(a, a.windows, w) {
		w.obj.release()
		w.invMem.free()
		return nil, nd.ErrDeviceRemoved
	}
	if a.v1 && invalidateResult != nil {
		a.mu.Lock()
		a.invalidates = append(a.invalidates, w)
		a.mu.Unlock()
	}
	return w, nil
}

// use returns the window's object for a Bind or Invalidate, holding the
// window until done (false: the window is closed, or not a.'s).
func (a *adapter) useWindow(mw nd.MemoryWindow) (*window, bool) {
	w, ok := mw.(*window)
	if !ok || w == nil || w.a != a {
		return nil, false
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return nil, false
	}
	return w, true
}

// done ends use.
func (w *window) done() { w.mu.RUnlock() }

// Close implements nd.MemoryWindow: the window is released (the provider
// invalidates it if it is bound). Bind and Invalidate naming it then
// return ErrInvalidParameter3 and ErrInvalidParameter2.
func (w *window) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	w.obj.release()
	a := w.a
	a.mu.Lock()
	delete(a.windows, w)
	for i, x := range a.invalidates {
		if x == w {
			a.invalidates = append(a.invalidates[:i], a.invalidates[i+1:]...)
			break
		}
	}
	a.mu.Unlock()
	w.syncInvalidate()
	// The provider wrote the ND_RESULT only for a window it knew; it is
	// released now.
	w.invMem.free()
	return nil
}

// syncInvalidate copies the status the provider wrote into the window's
// ND_RESULT to the caller's Result, when it changed.
func (w *window) syncInvalidate() {
	if w.inv == nil || w.invMem.addr == 0 {
		return
	}
	if st := atomic.LoadUint32((*uint32)(at(w.invMem.addr))); st != w.invSeen {
		w.invSeen = st
		w.inv.Status = nd.Status(st)
	}
}

// syncInvalidates copies every window's invalidate status (ND v1), after a
// Receive completed: a SendAndInvalidate invalidates the window as its
// Receive completes.
func (a *adapter) syncInvalidates() {
	a.mu.Lock()
	for _, w := range a.invalidates {
		w.syncInvalidate()
	}
	a.mu.Unlock()
}

// remoteAccess is an nd.RemoteAccess (ND v2 only): a registration of its
// own of the buffer, with ND_MR_FLAG_ALLOW_REMOTE_READ and/or _WRITE, whose
// remote token any connection's peer may use. Its methods are safe for
// concurrent use.
type remoteAccess struct {
	a      *adapter
	r      *region
	mr     com
	g      guard
	desc   nd.MWDescriptor
	closed atomic.Bool
}

var _ nd.RemoteAccess = (*remoteAccess)(nil)

// AllowRemoteAccess implements nd.RemoteAccessAdapter: ND v2 registers buf
// again in a new IND2MemoryRegion with remote rights, and the descriptor
// is the buffer's address, length and that region's remote token. ND v1
// has no such registration: ErrNotSupported.
func (a *adapter) AllowRemoteAccess(mr nd.MemoryRegion, buf []byte, rights nd.Flags) (nd.RemoteAccess, error) {
	if a.v1 {
		return nil, nd.ErrNotSupported
	}
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	r, ok := mr.(*region)
	if !ok || r == nil || r.a != a || !r.live.Load() {
		return nil, nd.ErrInvalidParameter1
	}
	if len(buf) == 0 || !inside(buf, r.buf) {
		return nil, nd.ErrInvalidParameter2
	}
	all := nd.FlagAllowRead | nd.FlagAllowWrite
	if rights&all == 0 || rights&^all != 0 {
		return nil, nd.ErrInvalidParameter3
	}
	flags := ndabi.MRFlagAllowLocalWrite
	if rights&nd.FlagAllowRead != 0 {
		flags |= ndabi.MRFlagAllowRemoteRead
	}
	if rights&nd.FlagAllowWrite != 0 {
		flags |= ndabi.MRFlagAllowRemoteWrite
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live.Load() {
		return nil, nd.ErrInvalidParameter1
	}
	_, obj, err := a.register(context.Background(), bytesAddr(buf), uintptr(len(buf)), flags)
	if err != nil {
		return nil, err
	}
	ra := &remoteAccess{a: a, r: r, mr: obj}
	ra.desc = nd.MWDescriptor{Base: uint64(bytesAddr(buf)), Length: uint64(len(buf)),
		Token: uint32(obj.raw(ndabi.IND2MemoryRegionGetRemoteToken))}
	if !add(a, a.accesses, ra) {
		a.deregisterHandle(context.Background(), 0, obj, &ra.g)
		return nil, nd.ErrDeviceRemoved
	}
	r.accesses++
	return ra, nil
}

// Descriptor implements nd.RemoteAccess.
func (ra *remoteAccess) Descriptor() nd.MWDescriptor { return ra.desc }

// Close implements nd.RemoteAccess: its registration is deregistered
// (which waits for the accesses under way) and released.
func (ra *remoteAccess) Close() error {
	if ra.closed.Swap(true) {
		return nil
	}
	if err := ra.a.deregisterHandle(context.Background(), 0, ra.mr, &ra.g); err != nil {
		ra.g.close(ra.mr)
		ra.mr.release()
	}
	ra.r.mu.Lock()
	ra.r.accesses--
	ra.r.mu.Unlock()
	remove(ra.a, ra.a.accesses, ra)
	return nil
}

// inside reports whether b lies within buf's bytes.
func inside(b, buf []byte) bool {
	if len(b) == 0 {
		return true
	}
	start, end := bytesAddr(buf), bytesAddr(buf)+uintptr(len(buf))
	p := bytesAddr(b)
	return len(buf) > 0 && p >= start && p+uintptr(len(b)) <= end
}
