package ndexport

import (
	"net/netip"
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// V2Protocol is the ND protocol number that ND v2's listeners and
// connectors use (ND v2 has none; godirect's transports partition their
// port space by it): 6, the number the nd tools use.
const V2Protocol = 6

// Transport is one provider the DLL serves: its class id (the ProviderId
// of its catalog entries, which DllGetClassObject receives) and the nd
// provider behind it. It is safe for concurrent use.
type Transport struct {
	// Name names the transport ("tcp", "shm").
	Name string
	// ClassID is the transport's class id.
	ClassID ndabi.GUID
	// Provider is the nd provider behind it.
	Provider nd.Provider

	mu  sync.Mutex
	ids map[netip.Addr]uint64 // ND v2's adapter ids, given out as addresses are resolved
}

// adapterID returns the ND v2 adapter id of addr (the same for the life of
// the process).
func (t *Transport) adapterID(addr netip.Addr) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[netip.Addr]uint64{}
	}
	id, ok := t.ids[addr]
	if !ok {
		id = uint64(len(t.ids)) + 1
		t.ids[addr] = id
	}
	return id
}

// address returns the address whose adapter id is id.
func (t *Transport) address(id uint64) (netip.Addr, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a, x := range t.ids {
		if x == id {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// addresses is the provider's address list (QueryAddressList).
func (t *Transport) addresses() ([]netip.Addr, nd.Status) {
	addrs, err := t.Provider.Addresses()
	if err != nil {
		return nil, nd.ErrUnsuccessful
	}
	return addrs, nd.Success
}

// openAdapter opens the adapter of addr, with the overlapped file its
// requests complete through (ND v1's GetFileHandle).
func (t *Transport) openAdapter(addr netip.Addr) (nd.Adapter, nd.AdapterInfo, nd.Status) {
	a, err := t.Provider.OpenAdapter(addr.Unmap())
	if err != nil {
		return nil, nd.AdapterInfo{}, nd.ErrInvalidAddress
	}
	info, err := a.Query()
	if err != nil {
		a.Close()
		return nil, nd.AdapterInfo{}, nd.ErrDeviceRemoved
	}
	return a, info, nd.Success
}

// Provider1 is ND v1's INDProvider of a transport.
type Provider1 struct {
	Base
	t *Transport
}

// NewProvider1 returns t's INDProvider, with one reference.
func NewProvider1(t *Transport) *Provider1 {
	p := &Provider1{t: t}
	p.init(p)
	return p
}

func (p *Provider1) released() {}
func (p *Provider1) finalize() {}

// QueryAddressList is INDProvider::QueryAddressList: the provider's
// addresses as a SOCKET_ADDRESS_LIST in the consumer's buffer of *n bytes
// at list, with ND's size protocol.
func (p *Provider1) QueryAddressList(list unsafe.Pointer, n *uintptr) nd.Status {
	addrs, st := p.t.addresses()
	if st != nd.Success {
		return st
	}
	return putAddressList(addrs, list, n)
}

// OpenAdapter is INDProvider::OpenAdapter: the adapter that serves the
// address in the consumer's sockaddr of n bytes at addr (its port is not
// looked at). ND_INVALID_ADDRESS for a sockaddr that is not IPv4 or IPv6,
// too short, or of an address the provider does not serve.
func (p *Provider1) OpenAdapter(addr unsafe.Pointer, n uintptr) (*Adapter1, nd.Status) {
	ap, st := parseSockaddr(addr, n)
	if st != nd.Success {
		return nil, st
	}
	return newAdapter1(p.t, ap.Addr())
}

// Provider2 is ND v2's IND2Provider of a transport.
type Provider2 struct {
	Base
	t *Transport
}

// NewProvider2 returns t's IND2Provider, with one reference.
func NewProvider2(t *Transport) *Provider2 {
	p := &Provider2{t: t}
	p.init(p)
	return p
}

func (p *Provider2) released() {}
func (p *Provider2) finalize() {}

// QueryAddressList is IND2Provider::QueryAddressList.
func (p *Provider2) QueryAddressList(list unsafe.Pointer, n *uint32) nd.Status {
	addrs, st := p.t.addresses()
	if st != nd.Success {
		return st
	}
	return putAddressList(addrs, list, n)
}

// ResolveAddress is IND2Provider::ResolveAddress: the adapter id of the
// address in the consumer's sockaddr (its port is not looked at).
func (p *Provider2) ResolveAddress(addr unsafe.Pointer, n uintptr, id *uint64) nd.Status {
	if id == nil {
		return nd.ErrInvalidParameter3
	}
	ap, st := parseSockaddr(addr, n)
	if st != nd.Success {
		return st
	}
	addrs, st := p.t.addresses()
	if st != nd.Success {
		return st
	}
	for _, a := range addrs {
		if a == ap.Addr().Unmap() {
			*id = p.t.adapterID(a)
			return nd.Success
		}
	}
	return nd.ErrInvalidAddress
}

// OpenAdapter is IND2Provider::OpenAdapter: the adapter with the id that
// ResolveAddress gave. An iid other than IND2Adapter's is E_NOINTERFACE, an
// unknown id ND_INVALID_PARAMETER_2.
func (p *Provider2) OpenAdapter(iid ndabi.GUID, id uint64) (*Adapter2, nd.Status) {
	if iid != ndabi.IIDIND2Adapter {
		return nil, nd.Status(ndabi.E_NOINTERFACE)
	}
	addr, ok := p.t.address(id)
	if !ok {
		return nil, nd.ErrInvalidParameter2
	}
	return newAdapter2(p.t, addr, id)
}
