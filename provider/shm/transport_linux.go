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
	"github.com/godirect/nd/internal/shmring"
	"golang.org/x/sys/unix"
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

// Ephemeral ports.
const (
	firstEphemeral = 49152
	ephemeralTries = 256
)

func ephemeral() uint16 { return uint16(firstEphemeral + rand.IntN(65536-firstEphemeral)) }

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
	tries := 1
	if port == 0 {
		tries = ephemeralTries
	}
	for range tries {
		p := port
		if p == 0 {
			p = ephemeral()
		}
		ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: t.listenName(addr, protocol, p), Net: "unixpacket"})
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			return 0, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
		}
		pl := &portListener{t: t, l: l, ln: ln, addr: addr, port: p, proto: protocol}
		t.mu.Lock()
		t.listeners[l] = pl
		t.mu.Unlock()
		pl.wg.Add(1)
		go pl.serve()
		return p, nil
	}
	if port == 0 {
		return 0, nd.ErrTooManyAddresses
	}
	return 0, nd.ErrAddressAlreadyExists
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

// serve accepts connections until the listener closes; each runs the
// passive side of the setup in its own goroutine.
//
// Out of descriptors, it answers the waiting connection that it cannot
// serve it (short), through a descriptor it keeps spare for that, so that
// the peer's Connect fails at once with ND_INSUFFICIENT_RESOURCES; without
// a spare it waits a little before it tries again.
func (pl *portListener) serve() {
	defer pl.wg.Done()
	spare, _ := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	defer func() {
		if spare >= 0 {
			unix.Close(spare)
		}
	}()
	for {
		c, err := pl.ln.AcceptUnix()
		if err == nil {
			go pl.t.passive(pl, c)
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) {
			continue
		}
		if spare < 0 {
			time.Sleep(acceptBackoff)
			spare, _ = unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			continue
		}
		unix.Close(spare)
		if c, err := pl.ln.AcceptUnix(); err == nil {
			c.SetWriteDeadline(time.Now().Add(pl.t.p.cfg.HandshakeTimeout))
			c.Write([]byte{msgShort, shortFDs})
			c.Close()
		}
		spare, _ = unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
}

// answerShort tells the active side of c that this side lacks the resource
// named by err to serve its request, and closes c.
func answerShort(c *net.UnixConn, err error) {
	what := byte(shortFDs)
	if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EAGAIN) {
		what = shortMemory
	}
	c.Write([]byte{msgShort, what})
	c.Close()
}

// short reports whether err is a lack of descriptors or memory.
func short(err error) bool {
	return errors.Is(err, errNoDescriptors) || errors.Is(err, unix.EMFILE) ||
		errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOMEM)
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
	if err != nil || len(fds) != 1+numBells || !ok || req.protocol != pl.proto {
		closeAll(fds)
		c.Close()
		return
	}
	seg, err := mapSegment(fds[0], req.ringSize)
	closeAll(fds[:1])
	if err != nil {
		closeAll(fds[1:])
		if short(err) {
			answerShort(c, err)
			return
		}
		c.Close()
		return
	}
	var bells [numBells]*shmring.Doorbell
	for i := range bells {
		bells[i], err = bellFromFD(i, fds[1+i])
		if err != nil {
			for j := range bells[:i] {
				bells[j].Close()
			}
			closeAll(fds[2+i:])
			seg.unmap()
			c.Close()
			return
		}
	}
	l := newLink(t, c, false, seg, bells)
	l.local = netip.AddrPortFrom(pl.addr, pl.port)
	l.remote = remote
	l.pid = peerPID(c)
	l.peerProbe, l.peerProbeAddr = req.probe, req.probeAddr
	events, err := pl.l.Deliver(engine.ConnRequest{
		Local: l.local, Remote: l.remote, Protocol: req.protocol,
		IRD: req.ird, ORD: req.ord, PrivateData: req.pd,
	}, l)
	if err != nil {
		l.send(appendReject(nil, nil), nil)
		l.shutdown(nd.ErrConnectionRefused, false)
		return
	}
	l.mu.Lock()
	l.events = events
	l.mu.Unlock()
	l.startWatcher()
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	if ra := d.Remote.Addr().Unmap(); !ra.IsLoopback() || (!slices.Contains(t.p.cfg.Addresses, ra) && !t.served(ra)) {
		return nil, nd.ErrBadNetworkName
	}
	raddr := &net.UnixAddr{Name: t.listenName(d.Remote.Addr().Unmap(), d.Protocol, d.Remote.Port()), Net: "unixpacket"}
	var c *net.UnixConn
	port := d.LocalPort
	tries := 1
	if port == 0 {
		tries = ephemeralTries
	}
	for range tries {
		p := port
		if p == 0 {
			p = ephemeral()
		}
		laddr := &net.UnixAddr{Name: t.connName(d.Local, p), Net: "unixpacket"}
		var err error
		c, err = net.DialUnix("unixpacket", laddr, raddr)
		if err == nil {
			port = p
			break
		}
		switch {
		case errors.Is(err, syscall.EADDRINUSE) && d.LocalPort == 0:
			continue
		case errors.Is(err, syscall.EADDRINUSE):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrAddressAlreadyAssociated, Err: err}
		case errors.Is(err, syscall.ECONNREFUSED) && !t.served(d.Remote.Addr().Unmap()):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrBadNetworkName, Err: err}
		case short(err):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("socket", unwrapErrno(err))}
		default:
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
		}
	}
	if c == nil {
		return nil, nd.ErrTooManyAddresses
	}
	seg, memfd, err := newSegment(t.p.cfg.RingSize)
	if err != nil {
		c.Close()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("shared segment", unwrapErrno(err))}
	}
	var bells [numBells]*shmring.Doorbell
	for i := range bells {
		if bells[i], err = newBell(i); err != nil {
			for j := range bells[:i] {
				bells[j].Close()
			}
			closeAll([]int{memfd})
			seg.unmap()
			c.Close()
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("eventfd", unwrapErrno(err))}
		}
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
	fds := []int{memfd}
	for _, b := range bells {
		fds = append(fds, b.Fd())
	}
	err = l.send(req.append(nil), fds)
	closeAll(fds[:1])
	if err != nil {
		l.shutdown(nd.ErrConnectionAborted, false)
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	l.startWatcher()
	return l, nil
}

// newBell creates doorbell i of a connection (handshake.go's order): the
// data doorbells are raw, watched by the readiness sets of both sides
// rather than by the Go runtime; the room doorbells are waited on by the
// writer goroutines.
func newBell(i int) (*shmring.Doorbell, error) {
	if i == bellA2PData || i == bellP2AData {
		return shmring.NewRawDoorbell()
	}
	return shmring.NewDoorbell()
}

// bellFromFD is newBell for a doorbell the peer passed.
func bellFromFD(i, fd int) (*shmring.Doorbell, error) {
	if i == bellA2PData || i == bellP2AData {
		return shmring.RawDoorbellFromFD(fd)
	}
	return shmring.DoorbellFromFD(fd)
}

// unwrapErrno returns the system error err wraps, or err.
func unwrapErrno(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
