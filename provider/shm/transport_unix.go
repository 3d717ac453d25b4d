//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// transport implements engine.Transport for every adapter of a Provider.
//
// Names (files of the directory /tmp/godirect-nd-shm-<euid>, mode 0700,
// which only this user can enter; <ns> is a hash of Config.Namespace, as
// a socket's path is short):
//
//	<ns>-l-<addr>-<protocol>-<port>        a listener's socket (SOCK_STREAM)
//	<ns>-l-<addr>-<protocol>-<port>.lock   its name lock, held by the listener
//	<ns>-c-<addr>-<port>.lock              the active end of a connection
//	<ns>-a-<addr>.lock                     an adapter serves addr (shared)
//
// The locks (namelock_unix.go) go with their process: a socket file that
// a crashed listener left behind is removed by the next holder of its
// lock. The second reserves the active side's ND port for the
// connection's life; the request names the port (and address) after its
// body, as on Windows, since the active socket is not bound to a name.
type transport struct {
	p *Provider

	mu        sync.Mutex
	dir       string // "" until made (dirLocked)
	listeners map[*engine.Listener]*portListener
	present   map[netip.Addr]*os.File // presence locks, kept for the provider's life
	reserved  map[*link]*nameLock     // the active sides' port reservations

	// Sends by rendezvous over the provider's connections (tests): sent
	// as a descriptor, and pulled from the peer.
	rvSent, rvPulled atomic.Uint64
	rvMapped         atomic.Uint64 // Sends by rendezvous copied through a mapped segment

	progress *progress // the readiness set of every link (progress.go)
}

func newTransport(p *Provider) *transport {
	return &transport{
		p: p, listeners: make(map[*engine.Listener]*portListener),
		present: make(map[netip.Addr]*os.File), reserved: make(map[*link]*nameLock),
		progress: newProgress(&p.cfg),
	}
}

// socketDir is the directory of every provider's names for this user. It
// is /tmp rather than $TMPDIR so that processes with different
// environments find each other.
func socketDir() string { return fmt.Sprintf("/tmp/godirect-nd-shm-%d", os.Geteuid()) }

// errDirectory: the names' directory exists but is not this user's
// private directory.
var errDirectory = errors.New("shm: " + socketDir() + " is not a directory of this user with mode 0700")

// names returns the prefix of the provider's names, making the directory
// if needed and checking that it is this user's alone (not a link, mode
// 0700), so that no other user can reach the sockets or replace the files.
func (t *transport) names() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dir != "" {
		return t.dir, nil
	}
	dir := socketDir()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o700 || int(st.Uid) != os.Geteuid() {
		return "", errDirectory
	}
	h := fnv.New64a()
	h.Write([]byte(t.p.cfg.Namespace))
	t.dir = filepath.Join(dir, fmt.Sprintf("%016x", h.Sum64()))
	return t.dir, nil
}

func (t *transport) listenName(prefix string, addr netip.Addr, protocol int, port uint16) string {
	return fmt.Sprintf("%s-l-%s-%d-%d", prefix, addr, protocol, port)
}

func (t *transport) connLockName(prefix string, addr netip.Addr, port uint16) string {
	return fmt.Sprintf("%s-c-%s-%d.lock", prefix, addr, port)
}

func (t *transport) presenceName(prefix string, addr netip.Addr) string {
	return fmt.Sprintf("%s-a-%s.lock", prefix, addr)
}

// announce takes, once per address, the shared presence lock that tells
// other processes an adapter serves addr (see served). It is held as long
// as the process.
func (t *transport) announce(addr netip.Addr) {
	prefix, err := t.names()
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.present[addr] != nil {
		return
	}
	if f, err := lockShared(t.presenceName(prefix, addr)); err == nil {
		t.present[addr] = f
	}
}

// served reports whether any process of this user announced addr. Only a
// refused connect asks, to tell ErrBadNetworkName from
// ErrConnectionRefused.
func (t *transport) served(addr netip.Addr) bool {
	t.mu.Lock()
	mine := t.present[addr] != nil
	t.mu.Unlock()
	if mine {
		return true
	}
	prefix, err := t.names()
	return err != nil || heldByAny(t.presenceName(prefix, addr))
}

// takeReservation returns the port reservation of l's active side, once
// (nil for a passive side).
func (t *transport) takeReservation(l *link) *nameLock {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.reserved[l]
	delete(t.reserved, l)
	return r
}

// portListener is one listening Unix socket and its name lock.
type portListener struct {
	t     *transport
	l     *engine.Listener
	ln    *net.UnixListener
	lock  *nameLock
	addr  netip.Addr
	port  uint16
	proto int
	wg    sync.WaitGroup
}

func (t *transport) Listen(l *engine.Listener, addr netip.Addr, protocol int, port uint16) (uint16, error) {
	prefix, err := t.names()
	if err != nil {
		return 0, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
	}
	return t.listen(port, func(p uint16) (*portListener, error) {
		name := t.listenName(prefix, addr, protocol, p)
		lock, err := lockExclusive(name + ".lock")
		switch {
		case errors.Is(err, errNameTaken):
			return nil, errPortTaken
		case err != nil:
			return nil, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
		}
		os.Remove(name) // a socket its last holder left behind
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			lock.release()
			return nil, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
		}
		return &portListener{t: t, l: l, ln: ln, lock: lock, addr: addr, port: p, proto: protocol}, nil
	})
}

func (t *transport) Unlisten(l *engine.Listener) {
	t.mu.Lock()
	pl := t.listeners[l]
	delete(t.listeners, l)
	t.mu.Unlock()
	if pl != nil {
		pl.ln.Close() // removes the socket's file
		pl.wg.Wait()
		pl.lock.release()
	}
}

// passive reads the connection request on c, maps the segment it passes,
// and hands the request to the ND listener.
func (t *transport) passive(pl *portListener, c *net.UnixConn) {
	pid, same := peerOf(c)
	if !same {
		c.Close()
		return
	}
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
	var req *request
	body, remote, ok := splitActive(msg)
	if ok {
		req, err = parseRequest(body)
	}
	if req == nil || err != nil || len(fds) != maxFDs || req.protocol != pl.proto {
		closeAll(fds)
		c.Close()
		return
	}
	t.takeRequest(pl, c, req, fds, remote, pid)
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	ra := d.Remote.Addr().Unmap()
	if !slices.Contains(t.p.cfg.Addresses, ra) && !t.served(ra) {
		return nil, nd.ErrBadNetworkName
	}
	prefix, err := t.names()
	if err != nil {
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: err}
	}
	var hold *nameLock
	port, err := dialPort(d.LocalPort, func(p uint16) (err error) {
		hold, err = lockExclusive(t.connLockName(prefix, d.Local, p))
		switch {
		case errors.Is(err, errNameTaken):
			return errPortTaken
		case err != nil:
			return &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("open", unwrapErrno(err))}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "unix", t.listenName(prefix, ra, d.Protocol, d.Remote.Port()))
	if err != nil {
		hold.release()
		switch {
		case (errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)) && !t.served(ra):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrBadNetworkName, Err: err}
		case short(err):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("socket", unwrapErrno(err))}
		default:
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
		}
	}
	c := nc.(*net.UnixConn)
	pid, same := peerOf(c)
	if !same {
		c.Close()
		hold.release()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: errors.New("shm: the listener runs as another user")}
	}
	fail := func(what string, err error) (engine.Link, error) {
		c.Close()
		hold.release()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError(what, unwrapErrno(err))}
	}
	seg, segfd, err := newSegment(t.p.cfg.RingSize)
	if err != nil {
		return fail("shared segment", err)
	}
	bells, err := newBells()
	if err != nil {
		closeAll([]int{segfd})
		seg.unmap()
		return fail("pipe", err)
	}
	l := newLink(t, c, true, seg, bells)
	l.local = netip.AddrPortFrom(d.Local, port)
	l.remote = d.Remote
	l.pid = pid
	l.events = events
	t.mu.Lock()
	t.reserved[l] = hold
	t.mu.Unlock()
	req := request{
		protocol: d.Protocol, ird: d.IRD, ord: d.ORD, ringSize: t.p.cfg.RingSize,
		probeAddr: probeAddr(), probe: *probe, pd: d.PrivateData,
	}
	fds := appendBellHandles([]int{segfd}, bells)
	err = l.send(appendActive(req.append(nil), netip.AddrPortFrom(d.Local, port)), fds)
	closeAll(fds[:1])
	if err != nil {
		l.shutdown(nd.ErrConnectionAborted, false)
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	l.startWatcher()
	return l, nil
}
