//go:build verbs && linux

package verbs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

func ptr[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// memRegion is an ibv_mr over a Go buffer (pinned for as long as it is
// registered) or over memory the adapter mapped outside the Go heap.
type memRegion struct {
	a       *Adapter
	buf     []byte
	base    uintptr
	mr      cMR
	lkey    uint32
	pin     runtime.Pinner
	mapped  bool // buf is an anonymous mapping made by AllocMemory
	dereg   atomic.Bool
	windows atomic.Int32
}

var _ nd.MemoryRegion = (*memRegion)(nil)

// Bytes implements nd.MemoryRegion.
func (r *memRegion) Bytes() []byte { return r.buf }

func (r *memRegion) contains(b []byte) bool {
	p := addrOf(b)
	return p >= r.base && p+uintptr(len(b)) <= r.base+uintptr(len(r.buf))
}

// memlockError explains a registration that failed for the locked-memory
// limit.
func memlockError(op string, n int, err error) error {
	var lim syscall.Rlimit
	syscall.Getrlimit(8 /* RLIMIT_MEMLOCK */, &lim)
	st := nd.ErrInsufficientResources
	if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EAGAIN) {
		return &nd.OpError{Op: op, Status: st, Err: fmt.Errorf(
			"registering %d bytes: %w (locked-memory limit RLIMIT_MEMLOCK is %d bytes; raise it with ulimit -l or limits.conf)",
			n, err, lim.Cur)}
	}
	return &nd.OpError{Op: op, Status: st, Err: err}
}

// RegisterMemory implements nd.Adapter.
func (a *Adapter) RegisterMemory(ctx context.Context, buf []byte) (nd.MemoryRegion, error) {
	if a.isClosed() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.RegisterMemory(&a.info, buf); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, canceled("RegisterMemory", ctx)
	}
	r := &memRegion{a: a, buf: buf, base: addrOf(buf)}
	r.pin.Pin(unsafe.SliceData(buf))
	if err := a.addRegion(r); err != nil {
		r.pin.Unpin()
		return nil, err
	}
	return r, nil
}

func (a *Adapter) addRegion(r *memRegion) error {
	mr, lkey, _, err := regMR(a.pd, unsafe.Pointer(unsafe.SliceData(r.buf)), len(r.buf), accLocalWrite)
	if err != nil {
		return memlockError("RegisterMemory", len(r.buf), err)
	}
	r.mr, r.lkey = mr, lkey
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		deregMR(mr)
		return nd.ErrDeviceRemoved
	}
	a.mrs[r] = struct{}{}
	return nil
}

// AllocMemory maps n bytes outside the Go heap and registers them with the
// adapter, so that no Go memory is pinned; the region's Bytes are the
// mapping. DeregisterMemory unmaps it, after which the bytes must not be
// used.
func (a *Adapter) AllocMemory(n int) (nd.MemoryRegion, error) {
	if a.isClosed() {
		return nil, nd.ErrDeviceRemoved
	}
	if n <= 0 || n > a.info.MaxRegistrationSize {
		return nil, nd.ErrInvalidBufferSize
	}
	buf, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, &nd.OpError{Op: "AllocMemory", Status: nd.ErrNoMemory, Err: err}
	}
	r := &memRegion{a: a, buf: buf, base: addrOf(buf), mapped: true}
	if err := a.addRegion(r); err != nil {
		syscall.Munmap(buf)
		return nil, err
	}
	return r, nil
}

// DeregisterMemory implements nd.Adapter.
func (a *Adapter) DeregisterMemory(ctx context.Context, mr nd.MemoryRegion) error {
	r, ok := mr.(*memRegion)
	if !ok || r.a != a {
		return ndrules.Arg("DeregisterMemory", "mr", nd.ErrInvalidParameter1, "not a registration of this adapter")
	}
	if a.isClosed() {
		return nil // cleanup: Close deregistered the adapter's regions
	}
	if r.windows.Load() > 0 {
		return nd.ErrDeviceBusy
	}
	if !a.deregister(r) {
		return ndrules.Arg("DeregisterMemory", "mr", nd.ErrInvalidParameter1, "deregistered already")
	}
	return nil
}

func (a *Adapter) deregister(r *memRegion) bool {
	a.mu.Lock()
	_, ok := a.mrs[r]
	delete(a.mrs, r)
	a.mu.Unlock()
	if !ok || r.dereg.Swap(true) {
		return false
	}
	deregMR(r.mr)
	if r.mapped {
		syscall.Munmap(r.buf)
	} else {
		r.pin.Unpin()
	}
	return true
}

// window is an emulated memory window: Bind registers the window's bytes
// as an ibv_mr of their own with the window's rights; its rkey is the token
// and the buffer's address the base, so the device checks token, range and
// rights. Invalidate (and the end of the connection) deregisters it, which
// makes the old descriptor fail.
type window struct {
	a      *Adapter
	invRes *nd.Result
	mu     sync.Mutex
	mr     cMR
	ep     *endpoint
	region *memRegion
	closed bool
}

var _ nd.MemoryWindow = (*window)(nil)

// CreateMemoryWindow implements nd.Adapter.
func (a *Adapter) CreateMemoryWindow(invalidateResult *nd.Result) (nd.MemoryWindow, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nd.ErrDeviceRemoved
	}
	w := &window{a: a, invRes: invalidateResult}
	a.mws[w] = struct{}{}
	return w, nil
}

// unbind deregisters the window's registration (w.mu held).
func (w *window) unbindLocked() {
	if w.mr == nil {
		return
	}
	deregMR(w.mr)
	w.mr = nil
	w.region.windows.Add(-1)
	ep := w.ep
	w.ep, w.region = nil, nil
	ep.wmu.Lock()
	delete(ep.windows, w)
	ep.wmu.Unlock()
}

// isClosed reports whether Close was called.
func (w *window) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Close implements nd.MemoryWindow.
func (w *window) Close() error {
	w.mu.Lock()
	w.unbindLocked()
	w.closed = true
	w.mu.Unlock()
	w.a.mu.Lock()
	delete(w.a.mws, w)
	w.a.mu.Unlock()
	return nil
}

// unbindAll unbinds the endpoint's windows when its connection ends.
func (e *endpoint) unbindAll() {
	e.wmu.Lock()
	ws := make([]*window, 0, len(e.windows))
	for w := range e.windows {
		ws = append(ws, w)
	}
	e.wmu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		if w.ep == e {
			w.unbindLocked()
		}
		w.mu.Unlock()
	}
}

// Bind implements nd.Endpoint.
func (e *endpoint) Bind(res *nd.Result, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) (nd.MWDescriptor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.a.closedErr(e.isClosed()); err != nil {
		return nd.MWDescriptor{}, err
	}
	r, _ := mr.(*memRegion)
	regionOK := r != nil && r.a == e.a && !r.dereg.Load()
	w, _ := mw.(*window)
	windowOK := w != nil && w.a == e.a && !w.isClosed()
	// The window is a registration of its own: the device registers no
	// empty range.
	inRegion := regionOK && len(buf) > 0 && r.contains(buf)
	st := ndrules.Bind(res, regionOK, windowOK, inRegion, flags)
	if st == nd.Success {
		st = e.admit()
	}
	if st != nd.Success {
		return nd.MWDescriptor{}, st
	}
	q := e.sq.q
	q.mu.Lock()
	defer q.mu.Unlock()
	x := e.sq.reserve(res, flags&nd.FlagSilentSuccess != 0, 0)
	if x == nil {
		return nd.MWDescriptor{}, nd.ErrNoMoreEntries
	}
	if e.dead.Load() {
		e.sq.finish(x, nd.ErrCanceled)
		q.evaluate()
		return nd.MWDescriptor{}, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mr != nil || w.closed {
		e.fail(e.sq, x, nd.ErrInvalidRequest)
		return nd.MWDescriptor{}, nil
	}
	acc := 0
	if flags&nd.FlagAllowRead != 0 {
		acc |= accRemoteRead
	}
	if flags&nd.FlagAllowWrite != 0 {
		acc |= accRemoteWrite | accLocalWrite
	}
	m, _, rkey, err := regMR(e.a.pd, unsafe.Pointer(unsafe.SliceData(buf)), len(buf), acc)
	if err != nil {
		e.fail(e.sq, x, nd.ErrInsufficientResources)
		return nd.MWDescriptor{}, nil
	}
	w.mr, w.ep, w.region = m, e, r
	r.windows.Add(1)
	e.wmu.Lock()
	e.windows[w] = struct{}{}
	e.wmu.Unlock()
	if w.invRes != nil {
		w.invRes.Status = nd.Pending
	}
	e.sq.finish(x, nd.Success)
	q.evaluate()
	return nd.MWDescriptor{Base: uint64(addrOf(buf)), Length: uint64(len(buf)), Token: rkey}, nil
}

// Invalidate implements nd.Endpoint.
func (e *endpoint) Invalidate(res *nd.Result, mw nd.MemoryWindow, flags nd.Flags) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.a.closedErr(e.isClosed()); err != nil {
		return err
	}
	w, _ := mw.(*window)
	windowOK := w != nil && w.a == e.a && !w.isClosed()
	st := ndrules.Invalidate(res, windowOK, flags)
	if st == nd.Success {
		st = e.admit()
	}
	if st != nd.Success {
		return st
	}
	q := e.sq.q
	q.mu.Lock()
	defer q.mu.Unlock()
	x := e.sq.reserve(res, flags&nd.FlagSilentSuccess != 0, 0)
	if x == nil {
		return nd.ErrNoMoreEntries
	}
	if e.dead.Load() {
		e.sq.finish(x, nd.ErrCanceled)
		q.evaluate()
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep != e {
		e.fail(e.sq, x, nd.ErrInvalidationError)
		return nil
	}
	w.unbindLocked()
	e.sq.finish(x, nd.Success)
	q.evaluate()
	return nil
}
