package ndexport

import (
	"math"
	"net/netip"
	"runtime"
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/ndabi"
)

// Adapter2 is ND v2's IND2Adapter: an nd adapter, the overlapped files
// CreateOverlappedFile made, and the local tokens of its memory regions.
type Adapter2 struct {
	Base
	t    *Transport
	a    nd.Adapter
	info nd.AdapterInfo
	addr netip.Addr
	id   uint64

	filesMu sync.Mutex
	files   map[uintptr]File

	tokens regions[nd.MemoryRegion]
}

func newAdapter2(t *Transport, addr netip.Addr, id uint64) (*Adapter2, nd.Status) {
	a, info, st := t.openAdapter(addr)
	if st != nd.Success {
		return nil, st
	}
	if _, ok := a.(*engine.Adapter); !ok {
		a.Close()
		return nil, nd.ErrNotSupported // ND v2's objects need the engine's (see engine/v2.go)
	}
	ad := &Adapter2{t: t, a: a, info: info, addr: addr, id: id, files: map[uintptr]File{}}
	ad.init(ad)
	return ad, nd.Success
}

func (ad *Adapter2) released() {}

func (ad *Adapter2) finalize() {
	ad.a.Close()
	ad.filesMu.Lock()
	for _, f := range ad.files {
		f.Close(false)
	}
	ad.files = nil
	ad.filesMu.Unlock()
}

// CreateOverlappedFile is IND2Adapter::CreateOverlappedFile: a new file
// for the overlapped requests of the objects created with it. The consumer
// may close its handle at any time; the provider keeps its own side open
// until the adapter goes.
func (ad *Adapter2) CreateOverlappedFile(h *uintptr) nd.Status {
	if h == nil {
		return nd.ErrInvalidParameter1
	}
	f, err := NewFile()
	if err != nil {
		return nd.ErrInsufficientResources
	}
	ad.filesMu.Lock()
	ad.files[f.Handle()] = f
	ad.filesMu.Unlock()
	*h = f.Handle()
	return nd.Success
}

// file returns the file of handle h, which CreateOverlappedFile gave.
func (ad *Adapter2) file(h uintptr) (File, bool) {
	ad.filesMu.Lock()
	defer ad.filesMu.Unlock()
	f, ok := ad.files[h]
	return f, ok
}

// Query is IND2Adapter::Query: ND2_ADAPTER_INFO into the consumer's buffer
// of *n bytes at info, with ND's size protocol. The InfoVersion the
// consumer set must be ND_VERSION_2 (or 1, which the documentation names);
// another is ND_NOT_SUPPORTED.
func (ad *Adapter2) Query(info unsafe.Pointer, n *uint32) nd.Status {
	if info != nil && n != nil && uint64(*n) >= uint64(ndabi.SizeofAdapterInfo2) {
		if v := (*ndabi.AdapterInfo2)(info).InfoVersion; v != ndabi.NDVersion2 && v != 1 {
			return nd.ErrNotSupported
		}
	}
	return fill(info, n, nd.ErrInvalidParameter2, ndabi.SizeofAdapterInfo2, func(b []byte) {
		*(*ndabi.AdapterInfo2)(unsafe.Pointer(&b[0])) = adapterInfo2(&ad.info, ad.id)
	})
}

// adapterInfo2 is info as ND2_ADAPTER_INFO.
func adapterInfo2(info *nd.AdapterInfo, id uint64) ndabi.AdapterInfo2 {
	u32 := func(n int) uint32 { return uint32(min(uint64(n), math.MaxUint32)) }
	return ndabi.AdapterInfo2{
		InfoVersion: ndabi.NDVersion2,
		VendorID:    uint16(info.VendorID), DeviceID: uint16(info.DeviceID), AdapterID: id,
		MaxRegistrationSize: uintptr(info.MaxRegistrationSize), MaxWindowSize: uintptr(info.MaxWindowSize),
		MaxInitiatorSge: u32(info.MaxOutboundSGE), MaxReceiveSge: u32(info.MaxInboundSGE),
		MaxReadSge:                 u32(info.MaxOutboundSGE),
		MaxTransferLength:          u32(min(info.MaxOutboundLength, info.MaxInboundLength)),
		MaxInlineDataSize:          u32(info.MaxInlineData),
		MaxInboundReadLimit:        u32(info.MaxInboundReadLimit),
		MaxOutboundReadLimit:       u32(info.MaxOutboundReadLimit),
		MaxReceiveQueueDepth:       u32(info.MaxInboundRequests),
		MaxInitiatorQueueDepth:     u32(info.MaxOutboundRequests),
		MaxSharedReceiveQueueDepth: u32(info.MaxSharedReceiveQueueDepth),
		MaxCompletionQueueDepth:    u32(info.MaxCQEntries),
		InlineRequestThreshold:     u32(info.MaxInlineData),
		LargeRequestThreshold:      u32(info.LargeRequestThreshold),
		MaxCallerData:              u32(info.MaxCallerData),
		MaxCalleeData:              u32(info.MaxCalleeData),
		AdapterFlags:               uint32(info.Flags),
	}
}

// QueryAddressList is IND2Adapter::QueryAddressList: the adapter's own
// address.
func (ad *Adapter2) QueryAddressList(list unsafe.Pointer, n *uint32) nd.Status {
	return putAddressList([]netip.Addr{ad.addr}, list, n)
}

// created checks what every Create method gets: the interface asked for
// (E_NOINTERFACE for another) and, when fileParam is not 0, the overlapped
// file (fileParam if it is not one of the adapter's).
func (ad *Adapter2) created(iid, want ndabi.GUID, h uintptr, fileParam nd.Status) (File, nd.Status) {
	if iid != want {
		return nil, nd.Status(ndabi.E_NOINTERFACE)
	}
	if fileParam == 0 {
		return nil, nd.Success
	}
	f, ok := ad.file(h)
	if !ok {
		return nil, fileParam
	}
	return f, nd.Success
}

// GetNotifyAffinity is the notification affinity ND v2's completion and
// shared receive queues report: group 0, every processor (godirect's
// notifications wake Go's scheduler, not a processor of the caller's
// choice).
func GetNotifyAffinity(group *uint16, affinity *uintptr) nd.Status {
	if group == nil {
		return nd.ErrInvalidParameter1
	}
	if affinity == nil {
		return nd.ErrInvalidParameter2
	}
	*group = 0
	n := min(runtime.NumCPU(), int(8*unsafe.Sizeof(uintptr(0))))
	*affinity = uintptr(1)<<n - 1
	if n == int(8*unsafe.Sizeof(uintptr(0))) {
		*affinity = ^uintptr(0)
	}
	return nd.Success
}

// CreateCompletionQueue is IND2Adapter::CreateCompletionQueue: depth 1 to
// MaxCompletionQueueDepth (else ND_INVALID_PARAMETER_3); the group and
// affinity are hints, not used.
func (ad *Adapter2) CreateCompletionQueue(iid ndabi.GUID, h uintptr, depth uint32) (*CQ2, nd.Status) {
	f, st := ad.created(iid, ndabi.IIDIND2CompletionQueue, h, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return nil, st
	}
	if depth == 0 || uint64(depth) > uint64(ad.info.MaxCQEntries) {
		return nil, nd.ErrInvalidParameter3
	}
	cq, err := ad.a.CreateCompletionQueue(int(depth))
	if err != nil {
		return nil, status(err)
	}
	q := &CQ2{ad: ad, file: f, cq: cq, scratch: make([]*nd.Result, 64)}
	q.init(q)
	ad.hold()
	return q, nd.Success
}

// CreateMemoryRegion is IND2Adapter::CreateMemoryRegion.
func (ad *Adapter2) CreateMemoryRegion(iid ndabi.GUID, h uintptr) (*Region2, nd.Status) {
	f, st := ad.created(iid, ndabi.IIDIND2MemoryRegion, h, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return nil, st
	}
	r := &Region2{ad: ad, file: f}
	r.init(r)
	ad.hold()
	return r, nd.Success
}

// CreateMemoryWindow is IND2Adapter::CreateMemoryWindow.
func (ad *Adapter2) CreateMemoryWindow(iid ndabi.GUID) (*Window2, nd.Status) {
	if _, st := ad.created(iid, ndabi.IIDIND2MemoryWindow, 0, 0); st != nd.Success {
		return nil, st
	}
	mw, err := ad.a.CreateMemoryWindow(nil)
	if err != nil {
		return nil, status(err)
	}
	w := &Window2{ad: ad, mw: mw}
	w.init(w)
	ad.hold()
	return w, nd.Success
}

// CreateConnector is IND2Adapter::CreateConnector.
func (ad *Adapter2) CreateConnector(iid ndabi.GUID, h uintptr) (*Connector2, nd.Status) {
	f, st := ad.created(iid, ndabi.IIDIND2Connector, h, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return nil, st
	}
	c, err := ad.a.CreateConnector()
	if err != nil {
		return nil, status(err)
	}
	cn := &Connector2{ad: ad, file: f, own: c.(*engine.Connector)}
	cn.cur = cn.own
	cn.init(cn)
	ad.hold()
	return cn, nd.Success
}

// CreateListener is IND2Adapter::CreateListener.
func (ad *Adapter2) CreateListener(iid ndabi.GUID, h uintptr) (*Listener2, nd.Status) {
	f, st := ad.created(iid, ndabi.IIDIND2Listener, h, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return nil, st
	}
	l := &Listener2{ad: ad, file: f}
	l.init(l)
	ad.hold()
	return l, nd.Success
}
