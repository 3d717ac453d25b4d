//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndrules"
)

// adapter is an nd.Adapter over an ND v1 INDAdapter or an ND v2
// IND2Adapter. It keeps what nd's contracts need beyond ND's: the objects
// made from it, so that its Close closes them (ND's objects only hold
// their parents), the names of its queues (table), and a small
// registration that stands for the regions a scatter/gather entry names
// wrongly (poison). Its methods are safe for concurrent use.
type adapter struct {
	p    *Provider
	b    *backend
	v1   bool
	obj  com
	file windows.Handle // the overlapped file: v1 the adapter's own, v2 one CreateOverlappedFile made
	addr netip.Addr
	info nd.AdapterInfo
	g    guard // the adapter's own overlapped requests (v1 RegisterMemory and DeregisterMemory)

	slots  table
	poison poison

	closed     atomic.Bool
	mu         sync.Mutex // the sets below
	cqs        map[*cq]struct{}
	srqs       map[*srq]struct{}
	connectors map[*connector]struct{}
	listeners  map[*listener]struct{}
	regions    map[*region]struct{}
	windows    map[*window]struct{}
	accesses   map[*remoteAccess]struct{}
	// invalidates are the ND v1 windows with an invalidate Result, whose
	// status GetResults copies to the caller's Result (invalidate.go).
	invalidates []*window
}

var _ nd.Adapter = (*adapter)(nil)

// openAdapter opens b's adapter of addr.
func openAdapter(p *Provider, b *backend, addr netip.Addr) (nd.Adapter, error) {
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	a := &adapter{p: p, b: b, v1: b.version == 1, addr: addr,
		cqs: map[*cq]struct{}{}, srqs: map[*srq]struct{}{}, connectors: map[*connector]struct{}{},
		listeners: map[*listener]struct{}{}, regions: map[*region]struct{}{}, windows: map[*window]struct{}{},
		accesses: map[*remoteAccess]struct{}{}}
	sa := s.ptr(64)
	n := ndabi.PutSockaddr(s.bytes()[64:], netip.AddrPortFrom(addr, 0))
	if a.v1 {
		if st := b.prov.call(ndabi.INDProviderOpenAdapter, sa, uintptr(n), s.ptr(0)); st != nd.Success {
			return nil, st
		}
		a.obj = com(s.word(0))
		a.file = windows.Handle(a.obj.raw(ndabi.INDAdapterGetFileHandle))
		if a.file == windows.InvalidHandle || a.file == 0 {
			a.obj.release()
			return nil, &nd.OpError{Op: "GetFileHandle", Status: nd.ErrInsufficientResources}
		}
	} else {
		if st := b.prov.call(ndabi.IND2ProviderResolveAddress, sa, uintptr(n), s.ptr(0)); st != nd.Success {
			return nil, st
		}
		id := s.word(0)
		if st := b.prov.call(ndabi.IND2ProviderOpenAdapter, guidArg(&ndabi.IIDIND2Adapter), uintptr(id), s.ptr(8)); st != nd.Success {
			return nil, st
		}
		a.obj = com(s.word(8))
		if st := a.obj.call(ndabi.IND2AdapterCreateOverlappedFile, s.ptr(16)); st != nd.Success {
			a.obj.release()
			return nil, &nd.OpError{Op: "CreateOverlappedFile", Status: st}
		}
		a.file = windows.Handle(s.word(16))
	}
	if err := b.port.bind(a.file); err != nil {
		a.release()
		return nil, err
	}
	// An overlapped call that completes at once (ND_SUCCESS) queues no
	// packet (ND v2 asks the provider to open its files so; for ND v1
	// files it is set here).
	windows.SetFileCompletionNotificationModes(a.file, windows.FILE_SKIP_COMPLETION_PORT_ON_SUCCESS)
	if err := a.query(); err != nil {
		a.release()
		return nil, err
	}
	if err := a.poison.register(a); err != nil {
		a.release()
		return nil, err
	}
	return a, nil
}

// query reads the adapter's limits (INDAdapter::Query, version 1, or
// IND2Adapter::Query with InfoVersion ND_VERSION_2).
func (a *adapter) query() error {
	s, err := newScratch()
	if err != nil {
		return err
	}
	defer s.free()
	if a.v1 {
		s.setWord(0, uint64(ndabi.SizeofAdapterInfo1))
		if st := a.obj.call(ndabi.INDAdapterQuery, ndabi.NDVersion1, s.ptr(64), s.ptr(0)); st != nd.Success {
			return &nd.OpError{Op: "Query", Status: st}
		}
		a.info = adapterInfo1((*ndabi.AdapterInfo1)(at(s.ptr(64))))
		return nil
	}
	s.setU32(0, uint32(ndabi.SizeofAdapterInfo2))
	info := (*ndabi.AdapterInfo2)(at(s.ptr(64)))
	info.InfoVersion = ndabi.NDVersion2
	if st := a.obj.call(ndabi.IND2AdapterQuery, s.ptr(64), s.ptr(0)); st != nd.Success {
		return &nd.OpError{Op: "Query", Status: st}
	}
	a.info = adapterInfo2(info)
	return nil
}

// release lets go of the adapter's own COM object and file (open's
// failures, and the end of Close).
func (a *adapter) release() {
	a.poison.release(a)
	if !a.v1 && a.file != 0 {
		windows.CloseHandle(a.file)
	}
	a.obj.release()
	a.obj = 0
}

// status is the status of a call on an object of the adapter whose own
// closed flag is objClosed (ndrules.Closed).
func (a *adapter) status(objClosed bool) nd.Status {
	return ndrules.Closed(a.closed.Load(), objClosed)
}

// Address implements nd.Adapter.
func (a *adapter) Address() netip.Addr { return a.addr }

// Query implements nd.Adapter: the limits Query reported when the adapter
// opened (ND v1's ND_ADAPTER_INFO1 or ND v2's ND2_ADAPTER_INFO, as
// adapterInfo1 and adapterInfo2 map them).
func (a *adapter) Query() (nd.AdapterInfo, error) {
	if a.closed.Load() {
		return nd.AdapterInfo{}, nd.ErrDeviceRemoved
	}
	return a.info, nil
}

// request is an overlapped request of the adapter itself (ND v1's
// RegisterMemory and DeregisterMemory).
func (a *adapter) request(op string, again bool) request {
	return request{port: a.b.port, g: &a.g, obj: a.obj, v1: a.v1, op: op, again: again,
		closed: func() nd.Status { return nd.ErrDeviceRemoved }}
}

// add records an object made from the adapter in its set, unless the
// adapter closed meanwhile (false: the caller undoes what it made).
func add[T comparable](a *adapter, set map[T]struct{}, x T) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed.Load() {
		return false
	}
	set[x] = struct{}{}
	return true
}

// remove takes an object out of its set.
func remove[T comparable](a *adapter, set map[T]struct{}, x T) {
	a.mu.Lock()
	delete(set, x)
	a.mu.Unlock()
}

// snapshot lists a set.
func snapshot[T comparable](a *adapter, set map[T]struct{}) []T {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]T, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	return out
}

// Close implements nd.Adapter: listeners first (no new requests), then
// connectors, which close their endpoints (Flush: their requests complete
// ErrCanceled into their queues), shared receive queues, completion queues
// (which drain what the provider holds for them, so that GetResults still
// returns it), remote accesses, windows, registrations, and the adapter
// itself.
func (a *adapter) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	for _, l := range snapshot(a, a.listeners) {
		l.Close()
	}
	for _, c := range snapshot(a, a.connectors) {
		c.Close()
	}
	for _, s := range snapshot(a, a.srqs) {
		s.Close()
	}
	for _, q := range snapshot(a, a.cqs) {
		q.Close()
	}
	for _, r := range snapshot(a, a.accesses) {
		r.Close()
	}
	for _, w := range snapshot(a, a.windows) {
		w.Close()
	}
	for _, r := range snapshot(a, a.regions) {
		r.deregister(context.Background())
	}
	a.poison.release(a) // while the adapter's own requests still run
	a.g.close(a.obj)
	a.release()
	return nil
}

// words writes a sockaddr of ap at byte off of s and returns its address
// and size.
func sockaddrArg(s cmem, off int, ap netip.AddrPort) (uintptr, uintptr) {
	n := ndabi.PutSockaddr(s.bytes()[off:], ap)
	return s.ptr(off), uintptr(n)
}

// bytesAddr is the address of b's first byte, as a number (0 for none).
func bytesAddr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// bytesAddrAny is the address of b's first byte even when b is empty (a
// non-nil empty slice has one; nil has 0), for RegisterMemory's nil and
// empty buffers, which the provider tells apart.
func bytesAddrAny(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
