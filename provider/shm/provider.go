package shm

import (
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// Name is the provider's registered name.
const Name = "shm"

func init() { nd.RegisterProvider(New(DefaultConfig())) }

// OneSided selects how RDMA Reads and Writes move their payload.
type OneSided int

// The one-sided modes.
const (
	// OneSidedAuto uses process_vm_readv / process_vm_writev when the
	// probe made at connection setup shows the kernel allows it, and the
	// rings otherwise.
	OneSidedAuto OneSided = iota
	// OneSidedRing always moves Read and Write payloads through the rings.
	OneSidedRing
)

// Config tunes the transport. Use DefaultConfig and change what you need.
type Config struct {
	// Addresses are the ND addresses the provider serves; the default is
	// DefaultAddresses. They are names only: no IP socket is opened.
	Addresses []netip.Addr
	// Namespace prefixes the abstract Unix socket names (on macOS and
	// FreeBSD, a hash of it prefixes the names' files); processes that
	// should reach each other must use the same one.
	Namespace string
	// RingSize is the data size of each direction's ring, a power of two
	// (default 1 MiB).
	RingSize int
	// Spin is how long a reader spins on an empty ring before it sleeps on
	// its doorbell (default 20µs).
	Spin time.Duration
	// HandshakeTimeout bounds the connection request on an accepted socket.
	HandshakeTimeout time.Duration
	// ResponseTimeout bounds how long requests may wait for the peer's
	// confirmation while nothing arrives from it; past it (and before
	// twice it) the connection ends and they complete ErrIOTimeout (a peer
	// that is stopped but not dead).
	ResponseTimeout time.Duration
	// OneSided selects the one-sided data path.
	OneSided OneSided
	// SendThreshold is the size from which a Send goes by rendezvous: the
	// ring carries only a descriptor of the sender's buffers and the
	// receiver copies the payload straight into its Receive with
	// process_vm_readv, when the connection's probe shows the receiver may
	// read the sender's memory. 0 means DefaultSendThreshold; a negative
	// value turns the rendezvous off in both directions (every Send
	// through the ring). It is independent of OneSided.
	SendThreshold int
}

// DefaultSendThreshold is the default Config.SendThreshold: from this size
// on a one-copy rendezvous beats copying into the ring and out again.
const DefaultSendThreshold = 32 << 10

// DefaultAddresses are the loopback addresses the default provider serves.
var DefaultAddresses = []netip.Addr{
	netip.AddrFrom4([4]byte{127, 0, 0, 1}),
	netip.AddrFrom4([4]byte{127, 0, 0, 2}),
}

// DefaultConfig is the configuration of the registered "shm" provider.
func DefaultConfig() Config {
	return Config{
		Addresses:        DefaultAddresses,
		Namespace:        "godirect-nd-shm",
		RingSize:         1 << 20,
		Spin:             20 * time.Microsecond,
		HandshakeTimeout: 10 * time.Second,
		ResponseTimeout:  30 * time.Second,
		SendThreshold:    DefaultSendThreshold,
	}
}

// MaxPrivateData is the most private data a Connect, Accept or Reject
// carries over shared memory: Info's MaxCallerData and MaxCalleeData. More
// is refused with ND_INVALID_BUFFER_SIZE.
const MaxPrivateData = 504

// maxReadLimit bounds the read limits.
const maxReadLimit = 128

// Info is what Query reports for a shared-memory adapter.
var Info = nd.AdapterInfo{
	VendorID:              0x00474F44, // "GOD"
	DeviceID:              3,
	MaxInboundSGE:         32,
	MaxInboundRequests:    16384,
	MaxInboundLength:      1 << 30,
	MaxOutboundSGE:        32,
	MaxOutboundRequests:   16384,
	MaxOutboundLength:     1 << 30,
	MaxInlineData:         256,
	MaxInboundReadLimit:   maxReadLimit,
	MaxOutboundReadLimit:  maxReadLimit,
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

// Provider serves ND addresses of this host over shared memory. It is safe
// for concurrent use.
type Provider struct {
	cfg Config
	t   *transport
}

var _ nd.Provider = (*Provider)(nil)

// New returns a provider with configuration cfg (zero fields take their
// DefaultConfig values).
func New(cfg Config) *Provider {
	d := DefaultConfig()
	if len(cfg.Addresses) == 0 {
		cfg.Addresses = d.Addresses
	}
	cfg.Addresses = slices.Clone(cfg.Addresses)
	if cfg.Namespace == "" {
		cfg.Namespace = d.Namespace
	}
	if !shmring.ValidDataSize(cfg.RingSize) || cfg.RingSize < 64<<10 {
		cfg.RingSize = d.RingSize
	}
	if cfg.Spin <= 0 {
		cfg.Spin = d.Spin
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = d.HandshakeTimeout
	}
	if cfg.ResponseTimeout <= 0 {
		cfg.ResponseTimeout = d.ResponseTimeout
	}
	if cfg.SendThreshold == 0 {
		cfg.SendThreshold = d.SendThreshold
	}
	p := &Provider{cfg: cfg}
	p.t = newTransport(p)
	return p
}

// Config returns the provider's configuration.
func (p *Provider) Config() Config { return p.cfg }

// Name implements nd.Provider.
func (p *Provider) Name() string { return Name }

// Addresses implements nd.Provider.
func (p *Provider) Addresses() ([]netip.Addr, error) { return slices.Clone(p.cfg.Addresses), nil }
