package ndexport

import (
	"net/netip"
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// consumerBytes is the consumer's n bytes at p as a slice, without a copy,
// or false when they cannot be memory: p is nil and n is not 0, or the
// range wraps around the address space. A 0-byte range is an empty slice.
func consumerBytes(p unsafe.Pointer, n uintptr) ([]byte, bool) {
	switch {
	case n == 0:
		return []byte{}, true
	case p == nil || uintptr(p)+n < uintptr(p):
		return nil, false
	}
	return unsafe.Slice((*byte)(p), n), true
}

// copyIn copies the consumer's n bytes at p (private data, which the
// consumer may reuse once the call returns); max bounds n (else
// ErrInvalidBufferSize), and bytes that cannot be memory are
// ErrAccessViolation.
func copyIn(p unsafe.Pointer, n uintptr, max int) ([]byte, nd.Status) {
	if n > uintptr(max) {
		return nil, nd.ErrInvalidBufferSize
	}
	b, ok := consumerBytes(p, n)
	if !ok {
		return nil, nd.ErrAccessViolation
	}
	return append([]byte(nil), b...), nd.Success
}

// unregistered is the memory region of a scatter/gather entry whose memory
// handle or token names no registration: the engine completes the request
// with ND_ACCESS_VIOLATION, as for a region of another adapter.
type unregistered struct{}

func (unregistered) Bytes() []byte { return nil }

// regions maps the 32-bit names the consumer gets for registrations (ND
// v1's ND_MR_HANDLE, ND v2's local token) to what they name. A name is an
// index and a generation: a name that was given back never names a later
// registration of the same index. Its methods are safe for concurrent use.
type regions[T any] struct {
	mu    sync.RWMutex
	slots []regionSlot[T]
	free  []uint32
}

type regionSlot[T any] struct {
	gen  uint32
	used bool
	v    T
}

// Names are 20 bits of index (plus one: 0 is no name) and 12 of
// generation.
const (
	regionIndexBits = 20
	regionIndexMask = 1<<regionIndexBits - 1
	maxRegions      = regionIndexMask - 1
)

// add names v; false when every name is in use.
func (t *regions[T]) add(v T) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.slots) >= maxRegions {
			return 0, false
		}
		i = uint32(len(t.slots))
		t.slots = append(t.slots, regionSlot[T]{})
	}
	s := &t.slots[i]
	s.used, s.v = true, v
	return s.gen<<regionIndexBits | (i + 1), true
}

// get returns what name names.
func (t *regions[T]) get(name uint32) (v T, ok bool) {
	i := name&regionIndexMask - 1
	t.mu.RLock()
	defer t.mu.RUnlock()
	if name&regionIndexMask == 0 || int(i) >= len(t.slots) {
		return v, false
	}
	s := &t.slots[i]
	if !s.used || s.gen != name>>regionIndexBits {
		return v, false
	}
	return s.v, true
}

// set replaces what name names; false if name names nothing.
func (t *regions[T]) set(name uint32, v T) bool {
	i := name&regionIndexMask - 1
	t.mu.Lock()
	defer t.mu.Unlock()
	if name&regionIndexMask == 0 || int(i) >= len(t.slots) {
		return false
	}
	s := &t.slots[i]
	if !s.used || s.gen != name>>regionIndexBits {
		return false
	}
	s.v = v
	return true
}

// remove gives name back and returns what it named.
func (t *regions[T]) remove(name uint32) (v T, ok bool) {
	i := name&regionIndexMask - 1
	t.mu.Lock()
	defer t.mu.Unlock()
	if name&regionIndexMask == 0 || int(i) >= len(t.slots) {
		return v, false
	}
	s := &t.slots[i]
	if !s.used || s.gen != name>>regionIndexBits {
		return v, false
	}
	v = s.v
	var zero T
	s.used, s.v = false, zero
	s.gen = (s.gen + 1) & (1<<(32-regionIndexBits) - 1)
	t.free = append(t.free, i)
	return v, true
}

// sizeProtocol is the width of a size the consumer passes by pointer: ND
// v1's SIZE_T, ND v2's ULONG.
type sizeProtocol interface{ ~uint32 | ~uintptr }

// fill writes need bytes into the consumer's buffer of *n bytes at p with
// ND's size protocol: a buffer that is too small, or p nil, is left
// untouched, *n becomes need and the result is ErrBufferOverflow;
// otherwise put writes the bytes and *n becomes need. A nil n is
// ErrInvalidParameter with the index nParam.
func fill[N sizeProtocol](p unsafe.Pointer, n *N, nParam nd.Status, need int, put func([]byte)) nd.Status {
	if n == nil {
		return nParam
	}
	if p == nil || uint64(*n) < uint64(need) {
		*n = N(need)
		return nd.ErrBufferOverflow
	}
	put(unsafe.Slice((*byte)(p), need))
	*n = N(need)
	return nd.Success
}

// putSockaddr writes addr as a sockaddr_in or sockaddr_in6 with fill.
func putSockaddr[N sizeProtocol](addr netip.AddrPort, p unsafe.Pointer, n *N) nd.Status {
	return fill(p, n, nd.ErrInvalidParameter2, ndabi.SockaddrSize(addr), func(b []byte) { ndabi.PutSockaddr(b, addr) })
}

// putAddressList writes a SOCKET_ADDRESS_LIST of addrs with fill.
func putAddressList[N sizeProtocol](addrs []netip.Addr, p unsafe.Pointer, n *N) nd.Status {
	return fill(p, n, nd.ErrInvalidParameter2, ndabi.AddressListSize(addrs), func(b []byte) { ndabi.PutAddressList(b, addrs) })
}

// parseSockaddr decodes the consumer's sockaddr of n bytes at p;
// ErrInvalidAddress when it is not an IPv4 or IPv6 one.
func parseSockaddr(p unsafe.Pointer, n uintptr) (netip.AddrPort, nd.Status) {
	b, ok := consumerBytes(p, min(n, 128))
	if !ok || p == nil {
		return netip.AddrPort{}, nd.ErrInvalidAddress
	}
	ap, ok := ndabi.ParseSockaddr(b)
	if !ok {
		return netip.AddrPort{}, nd.ErrInvalidAddress
	}
	return ap, nd.Success
}
