package main

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
	"github.com/godirect/nd/provider/tcp"
)

// ndProtocol is the ND protocol number the test tools connect with (the
// Listen and Connect "protocol" argument; 6 is TCP's IP protocol number, what
// ND applications conventionally pass).
const ndProtocol = 6

// providerFlag defines the -provider flag on fs.
func providerFlag(fs *flag.FlagSet) *string {
	return fs.String("provider", defaultProvider, "the ND provider to use, by `name` (one of: "+providerList()+")")
}

// providerList is the comma-separated list of the registered providers.
func providerList() string { return strings.Join(nd.Providers(), ", ") }

// openProvider returns the provider called name and the addresses it serves,
// at least one.
func openProvider(name string) (nd.Provider, []netip.Addr, error) {
	p, err := nd.OpenProvider(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (known providers: %s)", err, providerList())
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

// providerOpts are the data tests' -provider, -crc and -congestion flags.
type providerOpts struct {
	name       string
	crc        bool   // -crc: MPA CRC32c on the tcp provider's connections
	congestion string // -congestion: their TCP congestion control
}

// define defines -provider, -crc and -congestion on fs.
func (o *providerOpts) define(fs *flag.FlagSet) {
	fs.StringVar(&o.name, "provider", defaultProvider, "the ND provider to use, by `name` (one of: "+providerList()+")")
	fs.BoolVar(&o.crc, "crc", false, "with -provider tcp: ask for MPA CRC32c on every connection (either side may ask)")
	fs.StringVar(&o.congestion, "congestion", "", "with -provider tcp: the TCP congestion control `algorithm` of every connection, or \""+tcp.CongestionSystem+"\" for the system's default (default: reno within this host, the system's default elsewhere)")
}

// open returns the provider the flags name and its addresses. With -crc or
// -congestion it is a tcp provider of its own, made by tcp.New with
// Config.CRC and Config.CongestionControl set; adapters of one process that
// must reach each other all come from it.
func (o *providerOpts) open() (nd.Provider, []netip.Addr, error) {
	if !o.crc && o.congestion == "" {
		return openProvider(o.name)
	}
	if o.name != tcp.Name {
		flag := "-crc"
		if !o.crc {
			flag = "-congestion"
		}
		return nil, nil, usagef("%s applies to -provider %s only, not %s", flag, tcp.Name, o.name)
	}
	cfg := tcp.DefaultConfig()
	cfg.CRC = o.crc
	cfg.CongestionControl = o.congestion
	return providerAddrs(tcp.New(cfg))
}

// defaultServerAddr is the address a server listens on when none is given, and the
// server's address when both sides run in one process: the provider's first
// loopback address (IPv4 first), so that "-s" and "-c 127.0.0.1" meet on
// one host whatever order the provider lists its addresses in; a provider
// without one listens on its first address.
func defaultServerAddr(addrs []netip.Addr) netip.Addr {
	for _, v4 := range []bool{true, false} {
		for _, a := range addrs {
			if a.IsLoopback() && a.Is4() == v4 {
				return a
			}
		}
	}
	return addrs[0]
}

// openAdapter opens p's adapter for addr, naming the step and the addresses
// p serves when that fails.
func openAdapter(p nd.Provider, addrs []netip.Addr, addr netip.Addr) (nd.Adapter, error) {
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

// resolveTarget is parseTarget for a tool's ADDRESS[:PORT] argument and its
// -p port (portSet: -p was given): a port in both that differs is a usage
// error.
func resolveTarget(arg string, port uint, portSet bool) (netip.AddrPort, error) {
	target, hasPort, err := parseTarget(arg, uint16(port))
	if err != nil {
		return netip.AddrPort{}, err
	}
	if hasPort && portSet && target.Port() != uint16(port) {
		return netip.AddrPort{}, usagef("the port of %s and -p %d disagree", arg, port)
	}
	return target, nil
}

// parseTarget parses ADDRESS or ADDRESS:PORT ("[v6]:port" for IPv6). A
// missing port is defPort; hasPort reports whether the argument named one.
func parseTarget(arg string, defPort uint16) (ap netip.AddrPort, hasPort bool, err error) {
	if ap, err := netip.ParseAddrPort(arg); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true, nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(arg, "["), "]"))
	if err != nil {
		return netip.AddrPort{}, false, usagef("%q is not an IP address or ADDRESS:PORT", arg)
	}
	return netip.AddrPortFrom(a.Unmap(), defPort), false, nil
}

// rdmacmLocal is the address a client talking to an rdma_cm peer (rping,
// perftest -R) connects from: the server's own when the provider serves it
// (a server on this host), as rdma_cm does, otherwise pickLocal's.
func rdmacmLocal(addrs []netip.Addr, remote netip.Addr) netip.Addr {
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

// session is one side of one connection: a completion queue shared by both
// directions, the connector and its endpoint.
type session struct {
	adapter  nd.Adapter
	cq       nd.CompletionQueue
	conn     nd.Connector
	ep       nd.Endpoint
	sharedCQ bool // cq belongs to the caller of newSessionOn: close leaves it open
	// srq, when not nil, is the shared receive queue the endpoint takes
	// its Receives from (nd perf --use_srq).
	srq nd.SharedReceiveQueue
}

// newSession creates a completion queue large enough for every request the
// limits allow and an endpoint with those limits on conn, or on a new
// connector if conn is nil. On error it closes what it created (a conn it
// was given stays open).
func newSession(a nd.Adapter, conn nd.Connector, limits nd.EndpointLimits) (*session, error) {
	return newSessionOn(a, conn, nil, limits)
}

// newSessionOn is newSession with the endpoint's completions going to cq,
// which the caller sizes for every endpoint it attaches and closes after
// their sessions; nil makes the session's own, as newSession.
func newSessionOn(a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue, limits nd.EndpointLimits) (*session, error) {
	return newSessionSRQ(a, conn, cq, limits, false)
}

// newSessionSRQ is newSessionOn, with the endpoint on a shared receive
// queue of its own when useSRQ is set: of the inbound limits, its flushed
// Receives completing on the session's completion queue.
func newSessionSRQ(a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue, limits nd.EndpointLimits, useSRQ bool) (_ *session, err error) {
	s := &session{adapter: a, cq: cq, sharedCQ: cq != nil}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if conn == nil {
		if s.conn, err = a.CreateConnector(); err != nil {
			return nil, fmt.Errorf("CreateConnector: %w", err)
		}
		conn = s.conn
	}
	if s.cq == nil {
		entries := limits.InboundEntries + limits.OutboundEntries
		if s.cq, err = a.CreateCompletionQueue(entries); err != nil {
			return nil, fmt.Errorf("CreateCompletionQueue(%d): %w", entries, err)
		}
	}
	if useSRQ {
		srqLimits := nd.SharedReceiveQueueLimits{Entries: limits.InboundEntries, SGE: limits.InboundSGE}
		if s.srq, err = nd.CreateSharedReceiveQueue(a, s.cq, srqLimits); err != nil {
			return nil, fmt.Errorf("CreateSharedReceiveQueue %+v: %w", srqLimits, err)
		}
		if s.ep, err = nd.CreateEndpointWithSRQ(conn, s.cq, s.cq, s.srq, limits); err != nil {
			return nil, fmt.Errorf("CreateEndpointWithSRQ %+v: %w", limits, err)
		}
	} else if s.ep, err = conn.CreateEndpoint(s.cq, s.cq, limits); err != nil {
		return nil, fmt.Errorf("CreateEndpoint %+v: %w", limits, err)
	}
	s.conn = conn
	return s, nil
}

// receiver is where the session's Receives are posted: its shared receive
// queue if it has one, else its endpoint.
func (s *session) receiver() receiver {
	if s.srq != nil {
		return s.srq
	}
	return s.ep
}

// close releases the endpoint, the connector and the completion queue (a
// connection still up is torn down). The adapter stays open.
func (s *session) close() {
	if s.ep != nil {
		s.ep.Close()
	}
	if s.conn != nil {
		s.conn.Close()
	}
	if s.srq != nil {
		s.srq.Close()
	}
	if s.cq != nil && !s.sharedCQ {
		s.cq.Close()
	}
}

// dial connects the session's endpoint to the listener at remote, offering
// privateData, and completes the connection. check, if not nil, vets the
// passive side's private data first; if it fails the connection is rejected.
// Post Receives before calling dial.
func (s *session) dial(ctx context.Context, remote netip.AddrPort, privateData []byte, check func(peerData []byte) error) error {
	if err := s.conn.Connect(ctx, s.ep, remote, ndProtocol, 0, privateData); err != nil {
		return fmt.Errorf("connecting to %s: %w", remote, err)
	}
	peer, err := connectionData(s.conn)
	if err == nil && check != nil {
		err = check(peer)
	}
	if err != nil {
		s.conn.Reject(nil)
		return fmt.Errorf("connecting to %s: %w", remote, err)
	}
	if err := s.conn.CompleteConnect(ctx); err != nil {
		return fmt.Errorf("CompleteConnect to %s: %w", remote, err)
	}
	return nil
}

// listen starts listening on a's address at port (0 picks one).
func listen(a nd.Adapter, port uint16) (nd.Listener, error) {
	l, err := a.Listen(0, ndProtocol, port)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", netip.AddrPortFrom(a.Address(), port), err)
	}
	return l, nil
}

// request is a connection request taken from a listener and not yet
// accepted or rejected.
type request struct {
	conn nd.Connector
	peer netip.AddrPort // the active side's address
	data []byte         // the active side's private data
}

// nextRequest waits for the next connection request on l and binds it to a
// new connector of a.
func nextRequest(ctx context.Context, a nd.Adapter, l nd.Listener) (*request, error) {
	conn, err := a.CreateConnector()
	if err != nil {
		return nil, fmt.Errorf("CreateConnector: %w", err)
	}
	if err := l.GetConnectionRequest(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("GetConnectionRequest on port %d: %w", l.Port(), err)
	}
	r := &request{conn: conn}
	r.peer, _ = conn.GetPeerAddress()
	if r.data, err = connectionData(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("request from %s: %w", r.peer, err)
	}
	return r, nil
}

// reject refuses the request because of cause and returns cause, with the
// peer named.
func (r *request) reject(cause error) error {
	r.conn.Reject(nil)
	r.conn.Close()
	return fmt.Errorf("rejected the connection from %s: %w", r.peer, cause)
}

// accept accepts the request on the session's endpoint (created on r.conn),
// answering privateData. Post Receives before calling accept.
func (s *session) accept(ctx context.Context, r *request, privateData []byte) error {
	if err := s.conn.Accept(ctx, s.ep, privateData); err != nil {
		return fmt.Errorf("accepting the request from %s: %w", r.peer, err)
	}
	return nil
}

// readLimits returns the read limits the connection of c negotiated for an
// endpoint created with mine: each is the smaller of this side's and the
// peer's offer (GetConnectionData reports the peer's from this side's point
// of view, clamped to the adapter's).
func readLimits(c nd.Connector, mine nd.EndpointLimits) (inbound, outbound int, err error) {
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
