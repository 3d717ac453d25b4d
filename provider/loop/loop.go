// Package loop is the in-process transport: adapters of one process connect
// to each other through memory, with the engine's reference semantics. It is
// the fastest way to run the conformance suite and to use the nd API in a
// single process.
//
// A Provider is a private network: only adapters opened from the same
// Provider can reach each other. The package registers a process-wide
// Provider named "loop" serving 127.0.0.1 and 127.0.0.2 (names only: no
// socket is opened).
package loop

import (
	"context"
	"math"
	"net/netip"
	"slices"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// Name is the provider's registered name.
const Name = "loop"

func init() { nd.RegisterProvider(New()) }

// DefaultAddresses are the addresses a Provider from New serves.
var DefaultAddresses = []netip.Addr{
	netip.AddrFrom4([4]byte{127, 0, 0, 1}),
	netip.AddrFrom4([4]byte{127, 0, 0, 2}),
}

// MaxPrivateData is the most private data a Connect, Accept or Reject
// carries between loop adapters: Info's MaxCallerData and MaxCalleeData.
const MaxPrivateData = 504

// Info is what Query reports for a loop adapter.
var Info = nd.AdapterInfo{
	VendorID:              0x00474F44, // "GOD"
	DeviceID:              1,
	MaxInboundSGE:         32,
	MaxInboundRequests:    16384,
	MaxInboundLength:      1 << 30,
	MaxOutboundSGE:        32,
	MaxOutboundRequests:   16384,
	MaxOutboundLength:     1 << 30,
	MaxInlineData:         256,
	MaxInboundReadLimit:   128,
	MaxOutboundReadLimit:  128,
	MaxCQEntries:          1 << 20,
	MaxRegistrationSize:   int(min(uint64(1)<<40, uint64(math.MaxInt))),
	MaxWindowSize:         int(min(uint64(1)<<40, uint64(math.MaxInt))),
	LargeRequestThreshold: 16 << 10,
	MaxCallerData:         MaxPrivateData,
	MaxCalleeData:         MaxPrivateData,
	Flags: nd.AdapterInOrderDMA | nd.AdapterCQResize | nd.AdapterLoopbackConnections |
		nd.AdapterMultiEngine,

	MaxSharedReceiveQueueDepth: engine.MaxSharedReceiveQueueDepth,
}

// Provider is an in-process network of adapters. It is safe for concurrent
// use.
type Provider struct {
	addrs []netip.Addr
	net   *network
}

var _ nd.Provider = (*Provider)(nil)

// New returns a Provider with its own private network, serving
// DefaultAddresses.
func New() *Provider { return NewWithAddresses(DefaultAddresses...) }

// NewWithAddresses returns a Provider with its own private network serving
// addrs.
func NewWithAddresses(addrs ...netip.Addr) *Provider {
	return &Provider{addrs: slices.Clone(addrs), net: newNetwork()}
}

// Name implements nd.Provider.
func (p *Provider) Name() string { return Name }

// Addresses implements nd.Provider.
func (p *Provider) Addresses() ([]netip.Addr, error) { return slices.Clone(p.addrs), nil }

// OpenAdapter implements nd.Provider.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	if !slices.Contains(p.addrs, addr) {
		return nil, nd.ErrInvalidAddress
	}
	return engine.NewAdapter(addr, Info, &transport{p: p}), nil
}

// network is the port space and listener table of one Provider.
type network struct {
	mu        sync.Mutex
	listeners map[listenKey]*engine.Listener
	connPorts map[netip.AddrPort]bool
	next      uint16
}

type listenKey struct {
	addr     netip.Addr
	protocol int
	port     uint16
}

func newNetwork() *network {
	return &network{
		listeners: make(map[listenKey]*engine.Listener),
		connPorts: make(map[netip.AddrPort]bool),
		next:      49152,
	}
}

// ephemeralLocked returns a free port in 49152-65535 for which taken is
// false, or 0.
func (n *network) ephemeralLocked(taken func(uint16) bool) uint16 {
	for range 65536 - 49152 {
		p := n.next
		n.next++
		if n.next == 0 {
			n.next = 49152
		}
		if !taken(p) {
			return p
		}
	}
	return 0
}

type transport struct{ p *Provider }

func (t *transport) Listen(l *engine.Listener, addr netip.Addr, protocol int, port uint16) (uint16, error) {
	n := t.p.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == 0 {
		port = n.ephemeralLocked(func(p uint16) bool { return n.listeners[listenKey{addr, protocol, p}] != nil })
		if port == 0 {
			return 0, nd.ErrTooManyAddresses
		}
	}
	k := listenKey{addr, protocol, port}
	if n.listeners[k] != nil {
		return 0, nd.ErrAddressAlreadyExists
	}
	n.listeners[k] = l
	return port, nil
}

func (t *transport) Unlisten(l *engine.Listener) {
	n := t.p.net
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, x := range n.listeners {
		if x == l {
			delete(n.listeners, k)
		}
	}
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	if !slices.Contains(t.p.addrs, d.Remote.Addr()) {
		return nil, nd.ErrBadNetworkName
	}
	n := t.p.net
	n.mu.Lock()
	local := netip.AddrPortFrom(d.Local, d.LocalPort)
	if d.LocalPort == 0 {
		p := n.ephemeralLocked(func(p uint16) bool { return n.connPorts[netip.AddrPortFrom(d.Local, p)] })
		if p == 0 {
			n.mu.Unlock()
			return nil, nd.ErrTooManyAddresses
		}
		local = netip.AddrPortFrom(d.Local, p)
	} else if n.connPorts[local] {
		n.mu.Unlock()
		return nil, nd.ErrAddressAlreadyAssociated
	}
	l := n.listeners[listenKey{d.Remote.Addr(), d.Protocol, d.Remote.Port()}]
	if l == nil {
		n.mu.Unlock()
		return nil, nd.ErrConnectionRefused
	}
	n.connPorts[local] = true
	n.mu.Unlock()

	p := &pair{net: n, port: local}
	p.ends[0] = end{p: p, side: 0, local: local, remote: d.Remote, events: events}
	p.ends[1] = end{p: p, side: 1, local: d.Remote, remote: local}
	sink, err := l.Deliver(engine.ConnRequest{
		Local: d.Remote, Remote: local, Protocol: d.Protocol,
		IRD: d.IRD, ORD: d.ORD, PrivateData: d.PrivateData,
	}, &p.ends[1])
	if err != nil {
		p.release()
		return nil, err
	}
	p.mu.Lock()
	p.ends[1].events = sink
	p.mu.Unlock()
	return &p.ends[0], nil
}
