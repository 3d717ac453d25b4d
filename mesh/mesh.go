package mesh

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

// Config tunes Build. The zero Config (or nil) uses provider/shm within a
// host, provider/tcp between hosts on the host's first non-loopback
// address, and DefaultLimits.
type Config struct {
	// Local connects ranks on one host; nil means shm's registered
	// provider. Its adapter opens on LocalAddr (default the provider's
	// first address).
	Local     nd.Provider
	LocalAddr netip.Addr
	// Remote connects ranks on different hosts; nil means tcp's registered
	// provider. Its adapter opens on RemoteAddr; the zero Addr picks the
	// host's first non-loopback IPv4 address (IPv6, then loopback, when
	// there is none).
	Remote     nd.Provider
	RemoteAddr netip.Addr
	// Host, when not empty, names this rank's host in its business card
	// instead of the name Build finds (see the package doc): ranks with
	// the same Host connect through Local, others through Remote. Only
	// ranks that can reach each other's Local listeners may share one.
	Host string
	// Limits are every endpoint's; the zero value means DefaultLimits.
	Limits nd.EndpointLimits
	// Protocol is the ND protocol number the ranks listen and connect
	// with (0..255); 0 means DefaultProtocol.
	Protocol int
	// Prepare, when not nil, is called for each peer's endpoint after it is
	// made and before its connection is set up, on a goroutine of Build's
	// (concurrently for different peers): the place to post the first
	// Receives, so that no Send of the peer arrives before them. An error
	// ends Build.
	Prepare func(p *Peer) error
}

// DefaultLimits are endpoints of 16 requests each way, single SGEs and
// one Read in flight.
var DefaultLimits = nd.EndpointLimits{
	InboundEntries: 16, OutboundEntries: 16, InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 1, OutboundReadLimit: 1,
}

// DefaultProtocol is the ND protocol number meshes listen on.
const DefaultProtocol = 0x4d // 'M'

// Mesh is a rank's connections to every other rank of its job. Close it to
// tear them down. Its fields are not changed after Build; the objects they
// hold follow the nd contracts.
type Mesh struct {
	Rank, Size int
	// Peers are by rank; Peers[Rank] is nil.
	Peers []*Peer
	// Local and Remote are the two transports' adapters and queues; an
	// Adapter is nil if no peer uses it.
	Local, Remote *Transport
}

// Transport is one provider's part of a mesh: one adapter, one completion
// queue for every endpoint of its peers (inbound and outbound).
type Transport struct {
	Provider nd.Provider
	Adapter  nd.Adapter
	Queue    nd.CompletionQueue
	listener nd.Listener
	addr     netip.AddrPort
	peers    []*Peer
}

// Peer is the connection to one other rank.
type Peer struct {
	Rank      int
	SameHost  bool       // connected through Local (else Remote)
	Transport *Transport // the adapter whose memory its requests use
	Connector nd.Connector
	Endpoint  nd.Endpoint
}

// Queues returns the mesh's completion queues in use (one or two).
func (m *Mesh) Queues() []nd.CompletionQueue {
	var qs []nd.CompletionQueue
	for _, t := range []*Transport{m.Local, m.Remote} {
		if t != nil && t.Queue != nil {
			qs = append(qs, t.Queue)
		}
	}
	return qs
}

// Close tears down every connection and closes the adapters. It is
// idempotent.
func (m *Mesh) Close() error {
	for _, t := range []*Transport{m.Local, m.Remote} {
		if t != nil {
			t.close()
		}
	}
	return nil
}

func (t *Transport) close() {
	if t.listener != nil {
		t.listener.Close()
		t.listener = nil
	}
	if t.Adapter != nil {
		t.Adapter.Close()
	}
}

// Build connects this rank to every other rank of job: it opens both
// providers' adapters and listens, puts its business card, fences, reads
// every other rank's card, and connects (to the ranks below, from the ranks
// above), all endpoints of a provider on one queue. Every rank of the job
// must call it; it returns once this rank's every connection is
// established, or the first error (then nothing is left open). A job of
// one gets an empty mesh.
func Build(ctx context.Context, job Job, cfg *Config) (*Mesh, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Limits == (nd.EndpointLimits{}) {
		c.Limits = DefaultLimits
	}
	if c.Protocol == 0 {
		c.Protocol = DefaultProtocol
	}
	rank, size := job.Rank(), job.Size()
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("mesh: rank %d of %d", rank, size)
	}
	m := &Mesh{Rank: rank, Size: size, Peers: make([]*Peer, size)}
	if size == 1 {
		return m, nil
	}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	var err error
	if m.Local, err = openTransport(c.Local, shm.Name, c.LocalAddr, false, size, c.Protocol); err != nil {
		return nil, fmt.Errorf("mesh: local provider: %w", err)
	}
	if m.Remote, err = openTransport(c.Remote, tcp.Name, c.RemoteAddr, true, size, c.Protocol); err != nil {
		return nil, fmt.Errorf("mesh: remote provider: %w", err)
	}
	host := c.Host
	if host == "" {
		if host, err = hostKey(); err != nil {
			return nil, fmt.Errorf("mesh: naming this host: %w", err)
		}
	}
	if strings.ContainsAny(host, "|:") {
		return nil, fmt.Errorf("mesh: host name %q holds '|' or ':'", host)
	}
	mine := card{host: host, local: m.Local.addr, localName: m.Local.Provider.Name(), remote: m.Remote.addr, remoteNm: m.Remote.Provider.Name()}
	if err := job.Put(ctx, cardKey(rank), mine.String()); err != nil {
		return nil, fmt.Errorf("mesh: publishing the business card: %w", err)
	}
	if err := job.Fence(ctx); err != nil {
		return nil, fmt.Errorf("mesh: fence after the business cards: %w", err)
	}
	cards := make([]card, size)
	for j := range size {
		if j == rank {
			cards[j] = mine
			continue
		}
		v, err := job.Get(ctx, cardKey(j))
		if err != nil {
			return nil, fmt.Errorf("mesh: rank %d's business card: %w", j, err)
		}
		if cards[j], err = parseCard(v); err != nil {
			return nil, fmt.Errorf("mesh: rank %d's %w", j, err)
		}
		same := cards[j].host == host
		t := m.Remote
		if same {
			t = m.Local
		}
		if name := map[bool]string{true: cards[j].localName, false: cards[j].remoteNm}[same]; name != t.Provider.Name() {
			return nil, fmt.Errorf("mesh: rank %d reaches this host's ranks over %s, this rank over %s", j, name, t.Provider.Name())
		}
		p := &Peer{Rank: j, SameHost: same, Transport: t}
		m.Peers[j] = p
		t.peers = append(t.peers, p)
	}
	for _, t := range []*Transport{m.Local, m.Remote} {
		if len(t.peers) == 0 {
			t.close()
			continue
		}
		depth := len(t.peers) * (c.Limits.InboundEntries + c.Limits.OutboundEntries)
		if t.Queue, err = t.Adapter.CreateCompletionQueue(depth); err != nil {
			return nil, fmt.Errorf("mesh: %s completion queue of %d: %w", t.Provider.Name(), depth, err)
		}
	}
	if err := m.connect(ctx, &c, cards, jobTag(job.JobID())); err != nil {
		return nil, err
	}
	for _, t := range []*Transport{m.Local, m.Remote} {
		if t.listener != nil {
			t.listener.Close()
			t.listener = nil
		}
		if len(t.peers) == 0 {
			t.Adapter, t.Queue = nil, nil
		}
	}
	ok = true
	return m, nil
}

// openTransport opens p (or the provider registered as name) on addr (or
// its default), and listens on a free port.
func openTransport(p nd.Provider, name string, addr netip.Addr, remote bool, size, protocol int) (*Transport, error) {
	if p == nil {
		var err error
		if p, err = nd.OpenProvider(name); err != nil {
			return nil, err
		}
	}
	if !addr.IsValid() {
		var err error
		if remote {
			addr, err = HostAddr()
		} else {
			var addrs []netip.Addr
			addrs, err = p.Addresses()
			if err == nil && len(addrs) == 0 {
				err = errors.New("no addresses")
			}
			if err == nil {
				addr = addrs[0]
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: choosing an address: %w", p.Name(), err)
		}
	}
	a, err := p.OpenAdapter(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: OpenAdapter %v: %w", p.Name(), addr, err)
	}
	l, err := a.Listen(size, protocol, 0)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: Listen on %v: %w", p.Name(), addr, err)
	}
	return &Transport{Provider: p, Adapter: a, listener: l, addr: netip.AddrPortFrom(addr, l.Port())}, nil
}

// HostAddr is the address other hosts reach this one at, where Build's
// Remote opens by default: the first
// non-loopback IPv4 address of an interface that is up, else IPv6, else
// loopback.
func HostAddr() (netip.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, err
	}
	var v6 netip.Addr
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			ip := pfx.Addr()
			switch {
			case ip.Is4():
				return ip, nil
			case !v6.IsValid() && !ip.IsLinkLocalUnicast():
				v6 = ip
			}
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
}

// jobTag is what a connection request carries to show it is of this job.
func jobTag(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()
}

// connect makes every connection: one goroutine per transport accepts the
// ranks above this one, one per rank below connects to it. The first
// failure cancels the others and is the one returned.
func (m *Mesh) connect(ctx context.Context, c *Config, cards []card, tag uint32) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var once sync.Once
	var first error
	fail := func(err error) {
		once.Do(func() { first = err; cancel(err) })
	}
	var wg sync.WaitGroup
	for _, t := range []*Transport{m.Local, m.Remote} {
		n := 0
		for _, p := range t.peers {
			if p.Rank > m.Rank {
				n++
			}
		}
		if n > 0 {
			wg.Go(func() {
				if err := m.accept(ctx, c, t, n, tag); err != nil {
					fail(fmt.Errorf("mesh: accepting over %s: %w", t.Provider.Name(), err))
				}
			})
		}
	}
	for j := range m.Rank {
		p := m.Peers[j]
		to := cards[j].remote
		if p.SameHost {
			to = cards[j].local
		}
		wg.Go(func() {
			if err := m.dial(ctx, c, p, to, tag); err != nil {
				fail(fmt.Errorf("mesh: connecting to rank %d at %v over %s: %w", p.Rank, to, p.Transport.Provider.Name(), err))
			}
		})
	}
	wg.Wait()
	return first
}

const privSize = 8 // the connecting rank and the job's tag, big-endian

func (m *Mesh) dial(ctx context.Context, c *Config, p *Peer, to netip.AddrPort, tag uint32) error {
	t := p.Transport
	conn, err := t.Adapter.CreateConnector()
	if err != nil {
		return err
	}
	p.Connector = conn
	if p.Endpoint, err = conn.CreateEndpoint(t.Queue, t.Queue, c.Limits); err != nil {
		return fmt.Errorf("CreateEndpoint: %w", err)
	}
	if c.Prepare != nil {
		if err := c.Prepare(p); err != nil {
			return err
		}
	}
	var priv [privSize]byte
	binary.BigEndian.PutUint32(priv[:], uint32(m.Rank))
	binary.BigEndian.PutUint32(priv[4:], tag)
	if err := conn.Connect(ctx, p.Endpoint, to, c.Protocol, 0, priv[:]); err != nil {
		return err
	}
	return conn.CompleteConnect(ctx)
}

// accept takes n connection requests on t's listener, each from a rank
// above this one that reaches it over t, and accepts them.
func (m *Mesh) accept(ctx context.Context, c *Config, t *Transport, n int, tag uint32) error {
	for got := 0; got < n; {
		conn, err := t.Adapter.CreateConnector()
		if err != nil {
			return err
		}
		if err := t.listener.GetConnectionRequest(ctx, conn); err != nil {
			conn.Close()
			return err
		}
		var priv [privSize]byte
		cd, err := conn.GetConnectionData(priv[:])
		j := int(binary.BigEndian.Uint32(priv[:]))
		if err != nil || cd.PrivateDataLength != privSize || binary.BigEndian.Uint32(priv[4:]) != tag ||
			j <= m.Rank || j >= m.Size || m.Peers[j] == nil || m.Peers[j].Transport != t || m.Peers[j].Connector != nil {
			// Not one of this job's ranks that should connect here.
			conn.Reject(nil)
			conn.Close()
			continue
		}
		p := m.Peers[j]
		p.Connector = conn
		if p.Endpoint, err = conn.CreateEndpoint(t.Queue, t.Queue, c.Limits); err != nil {
			return fmt.Errorf("CreateEndpoint for rank %d: %w", j, err)
		}
		if c.Prepare != nil {
			if err := c.Prepare(p); err != nil {
				return err
			}
		}
		if err := conn.Accept(ctx, p.Endpoint, nil); err != nil {
			return fmt.Errorf("accepting rank %d: %w", j, err)
		}
		got++
	}
	return nil
}
