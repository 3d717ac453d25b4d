package tcp

import (
	"log/slog"
	"math"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// Name is the provider's registered name.
const Name = "tcp"

func init() { nd.RegisterProvider(New(DefaultConfig())) }

// Config tunes the transport. Use DefaultConfig and change what you need;
// every timeout is a bound after which pending requests and calls end with
// an error instead of waiting.
type Config struct {
	// CRC asks for MPA CRC32c on every connection this side opens or
	// accepts (MPA lets either side turn it on).
	CRC bool
	// MaxFPDU is the largest FPDU this side sends, in bytes (at least 64,
	// at most 65540).
	MaxFPDU int
	// ReplyTimeout bounds how long Connect waits for the passive side's
	// MPA reply, which a godirect peer sends when its application calls
	// Accept or Reject; past it Connect returns ErrIOTimeout. ND asks
	// providers not to time out a slow accepting application, so it is
	// long by default; a context deadline can end Connect sooner.
	ReplyTimeout time.Duration
	// HandshakeTimeout bounds the MPA exchange on an accepted TCP
	// connection: the request must arrive, and the active side's
	// ready-to-receive frame must follow the reply, within it.
	HandshakeTimeout time.Duration
	// KeepAlive is the idle time before TCP keepalive probes start;
	// KeepAliveInterval and KeepAliveCount bound how long a dead peer or a
	// half-open connection lasts after that.
	KeepAlive         time.Duration
	KeepAliveInterval time.Duration
	KeepAliveCount    int
	// UserTimeout bounds how long bytes written to a connection may stay
	// unacknowledged by the peer's TCP, and how long a TCP connect waits
	// for the peer's answer, before the connection ends with ErrIOTimeout
	// (RFC 5482's user timeout). Keepalive probes only an idle connection:
	// without this bound, a connection whose data is in flight when the
	// path breaks retransmits for the system's limit (about 15 minutes on
	// Linux) while its application waits. 0 takes KeepAlive +
	// KeepAliveInterval × KeepAliveCount, the time keepalive gives a silent
	// idle peer, so that a broken path ends a busy connection as soon as
	// an idle one; negative leaves the system's limit. Linux
	// (TCP_USER_TIMEOUT; there it also ends an idle connection at the
	// first unanswered keepalive probe sent UserTimeout or more after the
	// last inbound byte, in place of KeepAliveCount), macOS
	// (TCP_RXT_CONNDROPTIME) and Windows (TCP_MAXRT), the latter two in
	// whole seconds, rounded up; elsewhere the system's limit applies.
	UserTimeout time.Duration
	// ResponseTimeout bounds how long an RDMA Read, or the peer's
	// confirmation of a Send or Write, may take; past it the connection
	// ends and pending requests complete ErrIOTimeout. It catches a peer
	// whose TCP stack is alive but whose process stopped.
	ResponseTimeout time.Duration
	// Spin is how long the provider's progress goroutine, once it moves
	// the bytes because no application polls (or one waits in Notify),
	// keeps polling the connections after the last bytes before it waits
	// in the kernel: a peer that answers within it is seen without a
	// wake-up, which costs tens of microseconds. While the application
	// polls, its own polls move the bytes. 0 turns that polling off (for
	// hosts where a spinning thread would steal a busy core). Linux only:
	// elsewhere each connection's reader goroutine reads blocking.
	Spin time.Duration
	// CongestionControl chooses the TCP congestion control algorithm of
	// the provider's connections (Linux). "" (the default) sets "reno" on
	// connections within this host (the peer's address is a loopback
	// address or one of the host's) and leaves the system's default on
	// the others: over loopback a pacing algorithm such as BBR, a common
	// default, holds one connection well below what reno carries, since
	// no link limits it there (figures: docs/tcp-transport.md).
	// CongestionSystem leaves every connection with the system's default.
	// Any other name ("cubic", "bbr", ...) is set on every connection; if
	// the kernel refuses it (an unprivileged process may choose only those
	// in net.ipv4.tcp_allowed_congestion_control), Listen and Connect fail
	// with ND_INVALID_PARAMETER.
	CongestionControl string
	// Addresses, when not empty, are the addresses the provider serves
	// instead of every interface address of the host (each must be local).
	Addresses []netip.Addr
	// Logger, when not nil, receives connection-level events (handshake
	// failures, Terminates). The data path never logs.
	Logger *slog.Logger
}

// DefaultConfig is the configuration of the registered "tcp" provider.
func DefaultConfig() Config {
	return Config{
		CRC:               false,
		MaxFPDU:           65536,
		ReplyTimeout:      60 * time.Second,
		HandshakeTimeout:  10 * time.Second,
		KeepAlive:         5 * time.Second,
		KeepAliveInterval: time.Second,
		KeepAliveCount:    5,
		ResponseTimeout:   30 * time.Second,
		Spin:              50 * time.Microsecond,
	}
}

// MaxPrivateData is the most private data a Connect, Accept or Reject
// carries over TCP: Info's MaxCallerData and MaxCalleeData, 247 bytes (the
// 251 user bytes of an MPA request or reply that Linux's siw carries, less
// the 4 of godirect's prefix; docs/tcp-transport.md). More is refused with
// ND_INVALID_BUFFER_SIZE.
const MaxPrivateData = 247

// MaxPrivateData is the handshake's maxPrivateData: each difference below
// is a constant that must not be negative, so the two are equal.
const (
	_ uint = MaxPrivateData - maxPrivateData
	_ uint = maxPrivateData - MaxPrivateData
)

// Info is what Query reports for a TCP adapter.
var Info = nd.AdapterInfo{
	VendorID:              0x00474F44, // "GOD"
	DeviceID:              2,
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
	Flags:                 nd.AdapterInOrderDMA | nd.AdapterCQResize | nd.AdapterLoopbackConnections | nd.AdapterMultiEngine,

	MaxSharedReceiveQueueDepth: engine.MaxSharedReceiveQueueDepth,
}

// Provider serves the host's IP addresses over TCP. It is safe for
// concurrent use.
type Provider struct {
	cfg Config
	t   *transport
}

var _ nd.Provider = (*Provider)(nil)

// New returns a provider with configuration cfg (zero fields take their
// DefaultConfig values, except Spin: 0 turns polling off, and UserTimeout:
// 0 derives it from the keepalive fields).
func New(cfg Config) *Provider {
	d := DefaultConfig()
	if cfg.MaxFPDU == 0 {
		cfg.MaxFPDU = d.MaxFPDU
	}
	cfg.MaxFPDU = min(max(cfg.MaxFPDU, 64), 65540)
	if cfg.ReplyTimeout <= 0 {
		cfg.ReplyTimeout = d.ReplyTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = d.HandshakeTimeout
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = d.KeepAlive
	}
	if cfg.KeepAliveInterval <= 0 {
		cfg.KeepAliveInterval = d.KeepAliveInterval
	}
	if cfg.KeepAliveCount <= 0 {
		cfg.KeepAliveCount = d.KeepAliveCount
	}
	if cfg.ResponseTimeout <= 0 {
		cfg.ResponseTimeout = d.ResponseTimeout
	}
	if cfg.UserTimeout == 0 {
		cfg.UserTimeout = cfg.KeepAlive + time.Duration(cfg.KeepAliveCount)*cfg.KeepAliveInterval
	}
	p := &Provider{cfg: cfg}
	p.t = newTransport(p)
	return p
}

// Config returns the provider's configuration.
func (p *Provider) Config() Config { return p.cfg }

// Name implements nd.Provider.
func (p *Provider) Name() string { return Name }

// Addresses implements nd.Provider: the host's interface addresses, or
// Config.Addresses.
func (p *Provider) Addresses() ([]netip.Addr, error) {
	if len(p.cfg.Addresses) > 0 {
		return slices.Clone(p.cfg.Addresses), nil
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, &nd.OpError{Op: "Addresses", Status: nd.ErrUnsuccessful, Err: err}
	}
	var addrs []netip.Addr
	for _, ifa := range ifas {
		if n, ok := ifa.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	return addrs, nil
}

// OpenNetwork reports true: over TCP, an address no adapter serves cannot
// be told from a host where nobody listens (see ndtest.OpenNetwork).
func (p *Provider) OpenNetwork() bool { return true }

// OpenAdapter implements nd.Provider.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	addrs, err := p.Addresses()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(addrs, addr.Unmap()) {
		return nil, nd.ErrInvalidAddress
	}
	return engine.NewAdapter(addr.Unmap(), Info, p.t), nil
}
