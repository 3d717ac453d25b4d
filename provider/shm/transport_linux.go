//go:build linux && !shmportable

package shm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// transport implements engine.Transport for every adapter of a Provider.
//
// Names (abstract Unix sockets, host-wide within a network namespace):
//
//	@<namespace>/l/<addr>/<protocol>/<port>   a listener
//	@<namespace>/c/<addr>/<port>              the active end of a connection
//
// The second reserves the active side's ND port: it is bound before the
// connect, and the passive side learns the peer's port from it.
type transport struct {
	p *Provider

	mu        sync.Mutex
	listeners map[*engine.Listener]*portListener
	present   map[netip.Addr]*net.UnixConn // presence sockets, kept for the provider's life
	id        uint64

	// Sends by rendezvous over the provider's connections (tests): sent
	// as a descriptor, and pulled from the peer.
	rvSent, rvPulled atomic.Uint64
	rvMapped         atomic.Uint64 // Sends by rendezvous copied through a mapped segment

	progress *progress // the readiness set of every link (progress.go)
}

func newTransport(p *Provider) *transport {
	return &transport{
		p: p, listeners: make(map[*engine.Listener]*portListener),
		present: make(map[netip.Addr]*net.UnixConn), id: rand.Uint64(),
		progress: newProgress(&p.cfg),
	}
}

// announce binds, once per address, the presence socket
// @<namespace>/a/<addr>/<pid>-<id> that tells other processes an adapter
// serves addr (see served). It lives as long as the process.
func (t *transport) announce(addr netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.present[addr] != nil {
		return
	}
	name := fmt.Sprintf("@%s/a/%s/%d-%x", t.p.cfg.Namespace, addr, os.Getpid(), t.id)
	if c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"}); err == nil {
		t.present[addr] = c
	}
}

// served reports whether any process of the host announced addr: the
// abstract socket names in /proc/net/unix are host-wide (per network
// namespace). Only a refused connect asks, to tell ErrBadNetworkName from
// ErrConnectionRefused.
func (t *transport) served(addr netip.Addr) bool {
	t.mu.Lock()
	mine := t.present[addr] != nil
	t.mu.Unlock()
	if mine {
		return true
	}
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return true
	}
	prefix := "@" + t.p.cfg.Namespace + "/a/" + addr.String() + "/"
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[len(f)-1], prefix) {
			return true
		}
	}
	return false
}

func (t *transport) listenName(addr netip.Addr, protocol int, port uint16) string {
	return fmt.Sprintf("@%s/l/%s/%d/%d", t.p.cfg.Namespace, addr, protocol, port)
}

func (t *transport) connName(addr netip.Addr, port uint16) string {
	return fmt.Sprintf("@%s/c/%s/%d", t.p.cfg.Namespace, addr, port)
}

// parseConnName returns the ND address and port a connection name encodes.
func (t *transport) parseConnName(name string) (netip.AddrPort, bool) {
	rest, ok := strings.CutPrefix(name, "@"+t.p.cfg.Namespace+"/c/")
	if !ok {
		return netip.AddrPort{}, false
	}
	a, p, ok := strings.Cut(rest, "/")
	if !ok {
		return netip.AddrPort{}, false
	}
	addr, err := netip.ParseAddr(a)
	port, err2 := strconv.ParseUint(p, 10, 16)
	if err != nil || err2 != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// portListener is one listening Unix socket.
type portListener struct {
	t     *transport
	l     *engine.Listener
	ln    *net.UnixListener
	addr  netip.Addr
	port  uint16
	proto int
	wg    sync.WaitGroup
}

func (t *transport) Listen(l *engine.Listener, addr netip.Addr, protocol int, port uint16) (uint16, error) {
	return t.listen(port, func(p uint16) (*portListener, error) {
		ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: t.listenName(addr, protocol, p), Net: "unixpacket"})
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return nil, errPortTaken
		case err != nil:
			return nil, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
		}
		return &portListener{t: t, l: l, ln: ln, addr: addr, port: p, proto: protocol}, nil
	})
}

func (t *transport) Unlisten(l *engine.Listener) {
	t.mu.Lock()
	pl := t.listeners[l]
	delete(t.listeners, l)
	t.mu.Unlock()
	if pl != nil {
		pl.ln.Close()
		pl.wg.Wait()
	}
}

// passive reads the connection request on c, maps the segment it passes,
// and hands the request to the ND listener.
func (t *transport) passive(pl *portListener, c *net.UnixConn) {
	c.SetReadDeadline(time.Now().Add(t.p.cfg.HandshakeTimeout))
	buf := make([]byte, maxMessage+maxTrailer)
	msg, fds, err := readMessage(c, buf, nil)
	if err != nil {
		if short(err) {
			answerShort(c, err)
			return
		}
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	req, err := parseRequest(msg)
	remote, ok := t.parseConnName(c.RemoteAddr().String())
	if err != nil || len(fds) != 1+numBells*handlesPerBell || !ok || req.protocol != pl.proto {
		closeAll(fds)
		c.Close()
		return
	}
	t.takeRequest(pl, c, req, fds, remote, peerPID(c))
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	if ra := d.Remote.Addr().Unmap(); !slices.Contains(t.p.cfg.Addresses, ra) && !t.served(ra) {
		return nil, nd.ErrBadNetworkName
	}
	raddr := &net.UnixAddr{Name: t.listenName(d.Remote.Addr().Unmap(), d.Protocol, d.Remote.Port()), Net: "unixpacket"}
	var c *net.UnixConn
	port, err := dialPort(d.LocalPort, func(p uint16) (err error) {
		laddr := &net.UnixAddr{Name: t.connName(d.Local, p), Net: "unixpacket"}
		c, err = net.DialUnix("unixpacket", laddr, raddr)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EADDRINUSE):
			return errPortTaken
		case errors.Is(err, syscall.ECONNREFUSED) && !t.served(d.Remote.Addr().Unmap()):
			return &nd.OpError{Op: "Connect", Status: nd.ErrBadNetworkName, Err: err}
		case short(err):
			return &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("socket", unwrapErrno(err))}
		default:
			return &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
		}
	})
	if err != nil {
		return nil, err
	}
	seg, memfd, err := newSegment(t.p.cfg.RingSize)
	if err != nil {
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("shared segment", unwrapErrno(err))}
	}
	bells, err := newBells()
	if err != nil {
		closeAll([]int{memfd})
		seg.unmap()
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("eventfd", unwrapErrno(err))}
	}
	l := newLink(t, c, true, seg, bells)
	l.local = netip.AddrPortFrom(d.Local, port)
	l.remote = d.Remote
	l.pid = peerPID(c)
	l.events = events
	req := request{
		protocol: d.Protocol, ird: d.IRD, ord: d.ORD, ringSize: t.p.cfg.RingSize,
		probeAddr: probeAddr(), probe: *probe, pd: d.PrivateData,
	}
	fds := appendBellHandles([]int{memfd}, bells)
	err = l.send(req.append(nil), fds)
	closeAll(fds[:1])
	if err != nil {
		l.shutdown(nd.ErrConnectionAborted, false)
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	l.startWatcher()
	return l, nil
}
