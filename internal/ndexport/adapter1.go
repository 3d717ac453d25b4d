package ndexport

import (
	"context"
	"math"
	"net/netip"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// Adapter1 is ND v1's INDAdapter: an nd adapter, its overlapped file
// (GetFileHandle), and the memory handles its registrations go by.
type Adapter1 struct {
	Base
	t    *Transport
	a    nd.Adapter
	info nd.AdapterInfo
	file File
	mrs  regions[nd.MemoryRegion]
}

func newAdapter1(t *Transport, addr netip.Addr) (*Adapter1, nd.Status) {
	a, info, st := t.openAdapter(addr)
	if st != nd.Success {
		return nil, st
	}
	f, err := NewFile()
	if err != nil {
		a.Close()
		return nil, nd.ErrInsufficientResources
	}
	ad := &Adapter1{t: t, a: a, info: info, file: f}
	ad.init(ad)
	return ad, nd.Success
}

func (ad *Adapter1) released() {}

func (ad *Adapter1) finalize() {
	ad.a.Close()
	ad.file.Close(true)
}

// GetFileHandle is INDAdapter::GetFileHandle: the file through which the
// overlapped requests of the adapter and of everything made from it
// complete.
func (ad *Adapter1) GetFileHandle() uintptr { return ad.file.Handle() }

// Query is INDAdapter::Query: ND_ADAPTER_INFO1 into the consumer's buffer
// of *n bytes at info, with ND's size protocol. Versions other than 1 are
// ND_NOT_SUPPORTED.
func (ad *Adapter1) Query(version uint32, info unsafe.Pointer, n *uintptr) nd.Status {
	if version != ndabi.NDVersion1 {
		return nd.ErrNotSupported
	}
	return fill(info, n, nd.ErrInvalidParameter3, ndabi.SizeofAdapterInfo1, func(b []byte) {
		*(*ndabi.AdapterInfo1)(unsafe.Pointer(&b[0])) = adapterInfo1(&ad.info)
	})
}

// adapterInfo1 is info as ND_ADAPTER_INFO1.
func adapterInfo1(info *nd.AdapterInfo) ndabi.AdapterInfo1 {
	return ndabi.AdapterInfo1{
		VendorID: info.VendorID, DeviceID: info.DeviceID,
		MaxInboundSge: uintptr(info.MaxInboundSGE), MaxInboundRequests: uintptr(info.MaxInboundRequests),
		MaxInboundLength: uintptr(info.MaxInboundLength), MaxOutboundSge: uintptr(info.MaxOutboundSGE),
		MaxOutboundRequests: uintptr(info.MaxOutboundRequests), MaxOutboundLength: uintptr(info.MaxOutboundLength),
		MaxInlineData: uintptr(info.MaxInlineData), MaxInboundReadLimit: uintptr(info.MaxInboundReadLimit),
		MaxOutboundReadLimit: uintptr(info.MaxOutboundReadLimit), MaxCqEntries: uintptr(info.MaxCQEntries),
		MaxRegistrationSize: uintptr(info.MaxRegistrationSize), MaxWindowSize: uintptr(info.MaxWindowSize),
		LargeRequestThreshold: uintptr(info.LargeRequestThreshold),
		MaxCallerData:         uintptr(info.MaxCallerData), MaxCalleeData: uintptr(info.MaxCalleeData),
	}
}

// Control is INDAdapter::Control, the vendor's escape: godirect has no
// control codes, so it is ND_NOT_SUPPORTED (and nothing completes).
func (ad *Adapter1) Control() nd.Status { return nd.ErrNotSupported }

// size converts a SIZE_T argument to an int, saturating: a value beyond
// every limit stays beyond it.
func size(n uintptr) int { return int(min(uint64(n), math.MaxInt32)) }

// CreateCompletionQueue is INDAdapter::CreateCompletionQueue.
func (ad *Adapter1) CreateCompletionQueue(entries uintptr) (*CQ1, nd.Status) {
	cq, err := ad.a.CreateCompletionQueue(size(entries))
	if err != nil {
		return nil, status(err)
	}
	q := &CQ1{ad: ad, cq: cq}
	q.init(q)
	ad.hold()
	return q, nd.Success
}

// RegisterMemory is INDAdapter::RegisterMemory: the consumer's n bytes at
// p become registered under the memory handle it returns at once (posts
// naming it before the request completes fail with ND_ACCESS_VIOLATION);
// the request completes through the adapter's file. A nil buffer or one
// beyond MaxRegistrationSize is ND_INVALID_PARAMETER, 0 bytes
// ND_INVALID_BUFFER_SIZE, memory the process cannot use
// ND_ACCESS_VIOLATION, a nil ov ND_INVALID_PARAMETER_3.
func (ad *Adapter1) RegisterMemory(p unsafe.Pointer, n uintptr, ov *ndabi.Overlapped) (uintptr, nd.Status) {
	buf, st := registrable(p, n, &ad.info, true)
	if st != nd.Success {
		return 0, st
	}
	if ov == nil {
		return 0, nd.ErrInvalidParameter3
	}
	h, ok := ad.mrs.add(unregistered{})
	if !ok {
		return 0, nd.ErrInsufficientResources
	}
	st = ad.start(ad.file, ov, nd.ErrInvalidParameter3, func(ctx context.Context) nd.Status {
		mr, err := ad.a.RegisterMemory(ctx, buf)
		if err != nil {
			ad.mrs.remove(h)
			return status(err)
		}
		if !ad.mrs.set(h, mr) { // deregistered meanwhile
			ad.a.DeregisterMemory(context.Background(), mr)
		}
		return nd.Success
	})
	if st != nd.Pending {
		ad.mrs.remove(h)
	}
	return uintptr(h), st
}

// registrable checks a buffer to register (ND v1 and v2 alike) and returns
// it as a slice.
// write says whether the memory must be writable (ND v1 always registers
// for local and remote writes; ND v2 when the flags say so).
func registrable(p unsafe.Pointer, n uintptr, info *nd.AdapterInfo, write bool) ([]byte, nd.Status) {
	switch {
	case p == nil:
		return nil, nd.ErrInvalidParameter
	case n == 0:
		return nil, nd.ErrInvalidBufferSize
	case n > uintptr(info.MaxRegistrationSize):
		return nil, nd.ErrInvalidParameter
	}
	buf, ok := consumerBytes(p, n)
	if !ok || !usableMemory(p, n, write) {
		return nil, nd.ErrAccessViolation
	}
	return buf, nd.Success
}

// DeregisterMemory is INDAdapter::DeregisterMemory: the registration of
// handle h ends when the request completes (ND_DEVICE_BUSY while a memory
// window is bound in it). An unknown handle is ND_INVALID_PARAMETER_1.
func (ad *Adapter1) DeregisterMemory(h uintptr, ov *ndabi.Overlapped) nd.Status {
	if ov == nil {
		return nd.ErrInvalidParameter2
	}
	if h > math.MaxUint32 {
		return nd.ErrInvalidParameter1
	}
	mr, ok := ad.mrs.get(uint32(h))
	if _, pending := mr.(unregistered); !ok || pending {
		return nd.ErrInvalidParameter1
	}
	return ad.start(ad.file, ov, nd.ErrInvalidParameter2, func(ctx context.Context) nd.Status {
		if err := ad.a.DeregisterMemory(ctx, mr); err != nil {
			return status(err)
		}
		ad.mrs.remove(uint32(h))
		return nd.Success
	})
}

// region is the registration of memory handle h for a scatter/gather
// entry: unregistered{} for one that names none.
func (ad *Adapter1) region(h uintptr) nd.MemoryRegion {
	if h <= math.MaxUint32 {
		if mr, ok := ad.mrs.get(uint32(h)); ok {
			return mr
		}
	}
	return unregistered{}
}

// CreateMemoryWindow is INDAdapter::CreateMemoryWindow: an unbound window
// whose invalidation by the peer (SendAndInvalidate) is written into the
// consumer's ND_RESULT res (never queued on a completion queue).
func (ad *Adapter1) CreateMemoryWindow(res *nd.Result) (*Window1, nd.Status) {
	mw, err := ad.a.CreateMemoryWindow(res)
	if err != nil {
		return nil, status(err)
	}
	w := &Window1{ad: ad, mw: mw}
	w.init(w)
	ad.hold()
	return w, nd.Success
}

// CreateConnector is INDAdapter::CreateConnector.
func (ad *Adapter1) CreateConnector() (*Connector1, nd.Status) {
	c, err := ad.a.CreateConnector()
	if err != nil {
		return nil, status(err)
	}
	cn := &Connector1{ad: ad, c: c}
	cn.init(cn)
	ad.hold()
	return cn, nd.Success
}

// Listen is INDAdapter::Listen: port and *assigned are in network byte
// order; port 0 asks for one to be assigned, which then needs assigned
// (ND_INVALID_PARAMETER_MIX without it).
func (ad *Adapter1) Listen(backlog uintptr, protocol int32, port uint16, assigned *uint16) (*Listen1, nd.Status) {
	if port == 0 && assigned == nil {
		return nil, nd.ErrInvalidParameterMix
	}
	l, err := ad.a.Listen(size(backlog), int(protocol), ntohs(port))
	if err != nil {
		return nil, status(err)
	}
	if assigned != nil {
		*assigned = ntohs(l.Port())
	}
	ls := &Listen1{ad: ad, l: l}
	ls.init(ls)
	ad.hold()
	return ls, nd.Success
}

// ntohs swaps a port between network and host byte order.
func ntohs(p uint16) uint16 { return p>>8 | p<<8 }

// Window1 is ND v1's INDMemoryWindow.
type Window1 struct {
	Base
	ad *Adapter1
	mw nd.MemoryWindow
}

func (w *Window1) released() {}
func (w *Window1) finalize() {
	w.mw.Close()
	w.ad.unhold()
}

// status is the ND status of an nd call's error.
func status(err error) nd.Status { return nd.StatusOf(err) }
