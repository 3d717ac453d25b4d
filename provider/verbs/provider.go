//go:build verbs && linux

package verbs

import (
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/godirect/nd"
)

// Name is the provider's registered name.
const Name = "verbs"

func init() { nd.RegisterProvider(New()) }

// Provider serves the IPv4 addresses of the host's RDMA device ports. It is
// safe for concurrent use.
type Provider struct {
	mu      sync.Mutex
	inline  map[string]int // granted inline size per device, probed once
	async   map[cContext]bool
	srqs    map[uintptr]*srq // by the handle in srq_context
	nextSRQ uintptr
}

var _ nd.Provider = (*Provider)(nil)

// New returns a provider.
func New() *Provider {
	return &Provider{inline: map[string]int{}, async: map[cContext]bool{}, srqs: map[uintptr]*srq{}}
}

// Name implements nd.Provider.
func (p *Provider) Name() string { return Name }

// Addresses implements nd.Provider: every IPv4 interface address that
// rdma_cm binds to an RDMA device port, sorted. It returns an empty list on
// a host without RDMA devices.
func (p *Provider) Addresses() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, &nd.OpError{Op: "Addresses", Status: nd.ErrUnsuccessful, Err: err}
	}
	var addrs []netip.Addr
	for _, ifa := range ifas {
		n, ok := ifa.(*net.IPNet)
		if !ok {
			continue
		}
		a, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if !a.Is4() || a.IsLoopback() {
			continue
		}
		if _, _, err := probe(a); err == nil {
			addrs = append(addrs, a)
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(addrs), nil
}

// OpenAdapter implements nd.Provider: a new adapter instance on the device
// port that owns addr.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	addr = addr.Unmap()
	if !addr.Is4() || addr.IsLoopback() {
		return nil, nd.ErrInvalidAddress
	}
	ctx, port, err := probe(addr)
	if err != nil {
		return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrInvalidAddress, Err: err}
	}
	return newAdapter(p, addr, ctx, port)
}

// Limits the provider reports regardless of the device (the private data
// sizes are in privdata.go).
const (
	maxRequests  = 1024    // per endpoint direction
	maxLength    = 1 << 26 // bytes of one request (64 MiB)
	maxCQ        = 1 << 16 // ND entries of one completion queue
	hwCQMin      = 8192    // hardware completion queue entries at least (siw cannot resize)
	largeRequest = 16 << 10
)

// adapterInfo derives Query's answer from the device.
func adapterInfo(d devInfo) nd.AdapterInfo {
	ird, ord := d.maxRdAtom, d.maxInitRdAtom
	caller, callee := ibCallerData, ibCalleeData
	if d.iwarp {
		// One Read slot is announced on top of the application's limit,
		// as provider/tcp does (docs/verbs.md).
		ird, ord = min(ird, 128)-1, min(ord, 128)-1
		caller, callee = iwarpPrivateData, iwarpPrivateData
	}
	maxMR := int(min(d.maxMR, uint64(1)<<40, uint64(math.MaxInt)))
	wr := min(d.maxQPWR, maxRequests)
	inSGE := min(d.maxSGE, 32)
	srqDepth := 0
	if d.maxSRQ > 0 && d.maxSRQWR > 0 && d.maxSRQSGE > 0 {
		// A Receive fits the shared queue's and the queue pair's limits.
		srqDepth = min(d.maxSRQWR, maxSRQDepth)
		inSGE = min(inSGE, d.maxSRQSGE)
	}
	return nd.AdapterInfo{
		VendorID:                   d.vendor,
		DeviceID:                   d.part,
		MaxInboundSGE:              inSGE,
		MaxInboundRequests:         wr,
		MaxInboundLength:           int(min(d.maxMsg, maxLength)),
		MaxOutboundSGE:             min(d.maxSGE, 32),
		MaxOutboundRequests:        wr,
		MaxOutboundLength:          int(min(d.maxMsg, maxLength)),
		MaxInlineData:              d.maxInline,
		MaxInboundReadLimit:        max(ird, 0),
		MaxOutboundReadLimit:       max(ord, 0),
		MaxCQEntries:               min(d.maxCQE, maxCQ),
		MaxSharedReceiveQueueDepth: srqDepth,
		MaxRegistrationSize:        maxMR,
		MaxWindowSize:              maxMR,
		LargeRequestThreshold:      largeRequest,
		MaxCallerData:              caller,
		MaxCalleeData:              callee,
		Flags:                      nd.AdapterInOrderDMA | nd.AdapterCQResize | nd.AdapterLoopbackConnections | nd.AdapterMultiEngine,
	}
}
