package session

// Connection set-up shared by the data tests: opening the provider and its
// adapters, parsing ADDRESS[:PORT], and the active (dial) and passive
// (listen, accept) halves of an ND connection.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/provider/tcp"
)

// ndProtocol is the ND protocol number the test tools listen and connect
// with: TCP's IP protocol number, what ND applications conventionally pass.
const ndProtocol = nd.ProtocolTCP

// ProviderFlag defines the -provider flag on fs.
func ProviderFlag(fs *flag.FlagSet) *string {
	return fs.String("provider", defaultProvider, "the ND provider to use, by `name` (one of: "+ProviderList()+")")
}

// ProviderList is the comma-separated list of the registered providers.
func ProviderList() string { return strings.Join(nd.Providers(), ", ") }

// OpenProvider returns the provider called name and the addresses it serves,
// at least one.
func OpenProvider(name string) (nd.Provider, []netip.Addr, error) {
	p, err := nd.OpenProvider(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (known providers: %s)", err, ProviderList())
	}
	return providerAddrs(p)
}

// providerAddrs returns p and the addresses it serves, at least one.
func providerAddrs(p nd.Provider) (nd.Provider, []netip.Addr, error) {
	addrs, err := p.Addresses()
	if err != nil {
		return nil, nil, fmt.Errorf("provider %s: QueryAddressList: %w", p.Name(), err)
	}
	if len(addrs) == 0 {
		return nil, nil, fmt.Errorf("provider %s serves no address", p.Name())
	}
	return p, addrs, nil
}

// ProviderOpts are the data tests' -provider, -crc and -congestion flags.
type ProviderOpts struct {
	Name       string
	CRC        bool   // -crc: MPA CRC32c on the tcp provider's connections
	congestion string // -congestion: their TCP congestion control
}

// Define defines -provider, -crc and -congestion on fs.
func (o *ProviderOpts) Define(fs *flag.FlagSet) {
	fs.StringVar(&o.Name, "provider", defaultProvider, "the ND provider to use, by `name` (one of: "+ProviderList()+")")
	fs.BoolVar(&o.CRC, "crc", false, "with -provider tcp: ask for MPA CRC32c on every connection (either side may ask)")
	fs.StringVar(&o.congestion, "congestion", "", "with -provider tcp: the TCP congestion control `algorithm` of every connection, or \""+tcp.CongestionSystem+"\" for the system's default (default: reno within this host, the system's default elsewhere)")
}

// Open returns the provider the flags name and its addresses. With -crc or
// -congestion it is a tcp provider of its own, made by tcp.New with
// Config.CRC and Config.CongestionControl set; adapters of one process that
// must reach each other all come from it.
func (o *ProviderOpts) Open() (nd.Provider, []netip.Addr, error) {
	if !o.CRC && o.congestion == "" {
		return OpenProvider(o.Name)
	}
	if o.Name != tcp.Name {
		flag := "-crc"
		if !o.CRC {
			flag = "-congestion"
		}
		return nil, nil, cli.Usagef("%s applies to -provider %s only, not %s", flag, tcp.Name, o.Name)
	}
	cfg := tcp.DefaultConfig()
	cfg.CRC = o.CRC
	cfg.CongestionControl = o.congestion
	return providerAddrs(tcp.New(cfg))
}

// DefaultServerAddr is the address a server listens on when none is given, and the
// server's address when both sides run in one process: the provider's first
// loopback address (IPv4 first), so that "-s" and "-c 127.0.0.1" meet on
// one host whatever order the provider lists its addresses in; a provider
// without one listens on its first address.
func DefaultServerAddr(addrs []netip.Addr) netip.Addr {
	for _, v4 := range []bool{true, false} {
		for _, a := range addrs {
			if a.IsLoopback() && a.Is4() == v4 {
				return a
			}
		}
	}
	return addrs[0]
}

// OpenAdapter opens p's adapter for addr, naming the step and the addresses
// p serves when that fails.
func OpenAdapter(p nd.Provider, addrs []netip.Addr, addr netip.Addr) (nd.Adapter, error) {
	a, err := p.OpenAdapter(addr)
	if err != nil {
		return nil, fmt.Errorf("provider %s: OpenAdapter %s: %w (the provider serves %s)",
			p.Name(), addr, err, joinAddrs(addrs))
	}
	return a, nil
}

// joinAddrs formats addrs as a space-separated list.
func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

// ResolveTarget is ParseTarget for a tool's ADDRESS[:PORT] argument and its
// -p port (portSet: -p was given): a port in both that differs is a usage
// error.
func ResolveTarget(arg string, port uint, portSet bool) (netip.AddrPort, error) {
	target, hasPort, err := ParseTarget(arg, uint16(port))
	if err != nil {
		return netip.AddrPort{}, err
	}
	if hasPort && portSet && target.Port() != uint16(port) {
		return netip.AddrPort{}, cli.Usagef("the port of %s and -p %d disagree", arg, port)
	}
	return target, nil
}

// ParseTarget parses ADDRESS or ADDRESS:PORT ("[v6]:port" for IPv6). A
// missing port is defPort; hasPort reports whether the argument named one.
func ParseTarget(arg string, defPort uint16) (ap netip.AddrPort, hasPort bool, err error) {
	if ap, err := netip.ParseAddrPort(arg); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true, nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(arg, "["), "]"))
	if err != nil {
		return netip.AddrPort{}, false, cli.Usagef("%q is not an IP address or ADDRESS:PORT", arg)
	}
	return netip.AddrPortFrom(a.Unmap(), defPort), false, nil
}

// RdmacmLocal is the address a client talking to an rdma_cm peer (rping,
// perftest -R) connects from: the server's own when the provider serves it
// (a server on this host), as rdma_cm does, otherwise pickLocal's.
func RdmacmLocal(addrs []netip.Addr, remote netip.Addr) netip.Addr {
	if slices.Contains(addrs, remote) {
		return remote
	}
	return pickLocal(addrs, remote)
}

// pickLocal chooses the local address to connect to remote from: a loopback
// address for a loopback peer (another one than remote if there is one, so
// that both ends show distinct addresses), remote itself when the provider
// serves it, otherwise an address of the same family that is not loopback,
// otherwise the first address.
func pickLocal(addrs []netip.Addr, remote netip.Addr) netip.Addr {
	pick := func(ok func(netip.Addr) bool) (netip.Addr, bool) {
		for _, a := range addrs {
			if ok(a) {
				return a, true
			}
		}
		return netip.Addr{}, false
	}
	sameFamily := func(a netip.Addr) bool { return a.Is4() == remote.Is4() }
	if remote.IsLoopback() {
		if a, ok := pick(func(a netip.Addr) bool { return a.IsLoopback() && sameFamily(a) && a != remote }); ok {
			return a
		}
		if a, ok := pick(func(a netip.Addr) bool { return a.IsLoopback() && sameFamily(a) }); ok {
			return a
		}
	}
	if a, ok := pick(func(a netip.Addr) bool { return a == remote }); ok {
		// A peer on this host at an address the provider serves: the
		// same adapter reaches it (an RDMA device reaches only itself).
		return a
	}
	if a, ok := pick(func(a netip.Addr) bool { return !a.IsLoopback() && sameFamily(a) }); ok {
		return a
	}
	if a, ok := pick(sameFamily); ok {
		return a
	}
	return addrs[0]
}

// Session is one side of one connection: a completion queue shared by both
// directions, the connector and its endpoint.
type Session struct {
	Adapter  nd.Adapter
	CQ       nd.CompletionQueue
	Conn     nd.Connector
	EP       nd.Endpoint
	sharedCQ bool // cq belongs to the caller of newSessionOn: close leaves it open
	// srq, when not nil, is the shared receive queue the endpoint takes
	// its Receives from (nd perf --use_srq).
	srq nd.SharedReceiveQueue
}

// New creates a completion queue large enough for every request the
// limits allow and an endpoint with those limits on conn, or on a new
// connector if conn is nil. On error it closes what it created (a conn it
// was given stays open).
func New(a nd.Adapter, conn nd.Connector, limits nd.EndpointLimits) (*Session, error) {
	return newSessionOn(a, conn, nil, limits)
}

// newSessionOn is New with the endpoint's completions going to cq,
// which the caller sizes for every endpoint it attaches and closes after
// their sessions; nil makes the session's own, as New.
func newSessionOn(a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue, limits nd.EndpointLimits) (*Session, error) {
	return NewWithSRQ(a, conn, cq, limits, false)
}

// NewWithSRQ is newSessionOn, with the endpoint on a shared receive
// queue of its own when useSRQ is set: of the inbound limits, its flushed
// Receives completing on the session's completion queue.
func NewWithSRQ(a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue, limits nd.EndpointLimits, useSRQ bool) (_ *Session, err error) {
	s := &Session{Adapter: a, CQ: cq, sharedCQ: cq != nil}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if conn == nil {
		if s.Conn, err = a.CreateConnector(); err != nil {
			return nil, fmt.Errorf("CreateConnector: %w", err)
		}
		conn = s.Conn
	}
	if s.CQ == nil {
		entries := limits.InboundEntries + limits.OutboundEntries
		if s.CQ, err = a.CreateCompletionQueue(entries); err != nil {
			return nil, fmt.Errorf("CreateCompletionQueue(%d): %w", entries, err)
		}
	}
	if useSRQ {
		srqLimits := nd.SharedReceiveQueueLimits{Entries: limits.InboundEntries, SGE: limits.InboundSGE}
		if s.srq, err = nd.CreateSharedReceiveQueue(a, s.CQ, srqLimits); err != nil {
			return nil, fmt.Errorf("CreateSharedReceiveQueue %+v: %w", srqLimits, err)
		}
		if s.EP, err = nd.CreateEndpointWithSRQ(conn, s.CQ, s.CQ, s.srq, limits); err != nil {
			return nil, fmt.Errorf("CreateEndpointWithSRQ %+v: %w", limits, err)
		}
	} else if s.EP, err = conn.CreateEndpoint(s.CQ, s.CQ, limits); err != nil {
		return nil, fmt.Errorf("CreateEndpoint %+v: %w", limits, err)
	}
	s.Conn = conn
	return s, nil
}

// Receiver is where the session's Receives are posted: its shared receive
// queue if it has one, else its endpoint.
func (s *Session) Receiver() datapath.Receiver {
	if s.srq != nil {
		return s.srq
	}
	return s.EP
}

// Close releases the endpoint, the connector and the completion queue (a
// connection still up is torn down). The adapter stays open.
func (s *Session) Close() {
	if s.EP != nil {
		s.EP.Close()
	}
	if s.Conn != nil {
		s.Conn.Close()
	}
	if s.srq != nil {
		s.srq.Close()
	}
	if s.CQ != nil && !s.sharedCQ {
		s.CQ.Close()
	}
}

// Dial connects the session's endpoint to the listener at remote, offering
// privateData, and completes the connection. check, if not nil, vets the
// passive side's private data first; if it fails the connection is rejected.
// Post Receives before calling dial.
func (s *Session) Dial(ctx context.Context, remote netip.AddrPort, privateData []byte, check func(peerData []byte) error) error {
	if err := s.Conn.Connect(ctx, s.EP, remote, ndProtocol, 0, privateData); err != nil {
		return fmt.Errorf("connecting to %s: %w", remote, err)
	}
	peer, err := connectionData(s.Conn)
	if err == nil && check != nil {
		err = check(peer)
	}
	if err != nil {
		s.Conn.Reject(nil)
		return fmt.Errorf("connecting to %s: %w", remote, err)
	}
	if err := s.Conn.CompleteConnect(ctx); err != nil {
		return fmt.Errorf("CompleteConnect to %s: %w", remote, err)
	}
	return nil
}

// Listen starts listening on a's address at port (0 picks one).
func Listen(a nd.Adapter, port uint16) (nd.Listener, error) {
	l, err := a.Listen(0, ndProtocol, port)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", netip.AddrPortFrom(a.Address(), port), err)
	}
	return l, nil
}

// request is a connection request taken from a listener and not yet
// accepted or rejected.
type request struct {
	Conn nd.Connector
	Peer netip.AddrPort // the active side's address
	Data []byte         // the active side's private data
}

// NextRequest waits for the next connection request on l and binds it to a
// new connector of a.
func NextRequest(ctx context.Context, a nd.Adapter, l nd.Listener) (*request, error) {
	conn, err := a.CreateConnector()
	if err != nil {
		return nil, fmt.Errorf("CreateConnector: %w", err)
	}
	if err := l.GetConnectionRequest(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("GetConnectionRequest on port %d: %w", l.Port(), err)
	}
	r := &request{Conn: conn}
	r.Peer, _ = conn.GetPeerAddress()
	if r.Data, err = connectionData(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("request from %s: %w", r.Peer, err)
	}
	return r, nil
}

// Reject refuses the request because of cause and returns cause, with the
// peer named.
func (r *request) Reject(cause error) error {
	r.Conn.Reject(nil)
	r.Conn.Close()
	return fmt.Errorf("rejected the connection from %s: %w", r.Peer, cause)
}

// Accept accepts the request on the session's endpoint (created on r.conn),
// answering privateData. Post Receives before calling accept.
func (s *Session) Accept(ctx context.Context, r *request, privateData []byte) error {
	if err := s.Conn.Accept(ctx, s.EP, privateData); err != nil {
		return fmt.Errorf("accepting the request from %s: %w", r.Peer, err)
	}
	return nil
}

// ReadLimits returns the read limits the connection of c negotiated for an
// endpoint created with mine: each is the smaller of this side's and the
// peer's offer (GetConnectionData reports the peer's from this side's point
// of view, clamped to the adapter's).
func ReadLimits(c nd.Connector, mine nd.EndpointLimits) (inbound, outbound int, err error) {
	cd, err := c.GetConnectionData(nil)
	if err != nil && !errors.Is(err, nd.ErrBufferOverflow) {
		return 0, 0, fmt.Errorf("GetConnectionData: %w", err)
	}
	return min(mine.InboundReadLimit, cd.InboundReadLimit), min(mine.OutboundReadLimit, cd.OutboundReadLimit), nil
}

// connectionData returns the peer's private data of c's connection.
func connectionData(c nd.Connector) ([]byte, error) {
	cd, err := c.GetConnectionData(nil)
	if err != nil && !errors.Is(err, nd.ErrBufferOverflow) {
		return nil, fmt.Errorf("GetConnectionData: %w", err)
	}
	if cd.PrivateDataLength == 0 {
		return nil, nil
	}
	data := make([]byte, cd.PrivateDataLength)
	if _, err := c.GetConnectionData(data); err != nil {
		return nil, fmt.Errorf("GetConnectionData: %w", err)
	}
	return data, nil
}
