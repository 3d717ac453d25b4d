package tcp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// transport implements engine.Transport for every adapter of a Provider.
// One TCP listener serves each listening address and port; the ND protocol
// number, carried in godirect's private-data prefix, picks the ND listener.
type transport struct {
	p *Provider

	mu        sync.Mutex
	listeners map[netip.AddrPort]*portListener

	progress *progress // the readiness set of every link of the provider
}

func newTransport(p *Provider) *transport {
	return &transport{p: p, listeners: make(map[netip.AddrPort]*portListener), progress: newProgress(&p.cfg)}
}

// portListener is one TCP listening socket and the ND listeners on it, by
// protocol.
type portListener struct {
	t       *transport
	ln      *net.TCPListener
	addr    netip.AddrPort
	mu      sync.Mutex
	byProto map[int]*engine.Listener
}

func (t *transport) Listen(l *engine.Listener, addr netip.Addr, protocol int, port uint16) (uint16, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if port != 0 {
		if pl := t.listeners[netip.AddrPortFrom(addr, port)]; pl != nil {
			pl.mu.Lock()
			defer pl.mu.Unlock()
			if pl.byProto[protocol] != nil {
				return 0, nd.ErrAddressAlreadyExists
			}
			pl.byProto[protocol] = l
			return port, nil
		}
	}
	lc := net.ListenConfig{KeepAliveConfig: t.keepAlive()}
	var ccErr error
	cc := t.p.cfg.CongestionControl
	lc.Control = func(_, _ string, raw syscall.RawConn) error {
		// Accepted connections inherit the listener's choice (passive
		// sets the user timeout again, where inheriting it is not sure).
		setUserTimeout(raw, t.p.cfg.UserTimeout)
		if cc != "" && cc != CongestionSystem {
			ccErr = setConnCongestion(raw, cc)
		}
		return ccErr
	}
	ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(addr, port).String())
	if err != nil {
		switch {
		case ccErr != nil:
			return 0, congestionError("Listen", t.p.cfg.CongestionControl, ccErr)
		case errors.Is(err, errAddrInUse):
			return 0, nd.ErrAddressAlreadyExists
		}
		if e, ok := resourceError("Listen", err); ok {
			return 0, e
		}
		return 0, &nd.OpError{Op: "Listen", Status: nd.ErrInsufficientResources, Err: err}
	}
	tl := ln.(*net.TCPListener)
	ap := tl.Addr().(*net.TCPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	pl := &portListener{t: t, ln: tl, addr: ap, byProto: map[int]*engine.Listener{protocol: l}}
	t.listeners[ap] = pl
	go pl.serve()
	return ap.Port(), nil
}

func (t *transport) Unlisten(l *engine.Listener) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ap, pl := range t.listeners {
		pl.mu.Lock()
		for proto, x := range pl.byProto {
			if x == l {
				delete(pl.byProto, proto)
			}
		}
		empty := len(pl.byProto) == 0
		pl.mu.Unlock()
		if empty {
			delete(t.listeners, ap)
			pl.ln.Close()
		}
	}
}

// match returns the ND listener for a request with the given protocol; a
// peer that is not godirect names no protocol (-1) and gets the port's
// listener with the lowest protocol number.
func (pl *portListener) match(protocol int) *engine.Listener {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if protocol >= 0 {
		return pl.byProto[protocol]
	}
	var best *engine.Listener
	for _, l := range pl.byProto {
		if best == nil || l.Protocol() < best.Protocol() {
			best = l
		}
	}
	return best
}

// serve accepts TCP connections until the listener closes; each one runs
// the passive side of the MPA handshake in its own goroutine. When the
// process is out of descriptors or memory, it waits a little longer after
// each failure (up to acceptBackoffMax) instead of spinning: the waiting
// connection stays in the listen queue, and its peer's Connect waits for
// the reply.
//
// Requests reach the ND listener in the order their TCP connections were
// accepted: each handshake waits, after reading its request, until the one
// accepted before it handed its request over or gave up, but at most
// requestOrderGrace. A client that opens several connections one after the
// other (perftest's -q) sees them accepted in that order, as a kernel CM
// does, while one that never sends its request holds the others back no
// longer than that.
func (pl *portListener) serve() {
	var backoff time.Duration
	prev := make(chan struct{})
	close(prev)
	for {
		c, err := pl.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if exhausted(err) != "" {
				backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
				time.Sleep(backoff)
			}
			continue
		}
		backoff = 0
		mine := make(chan struct{})
		go pl.t.passive(pl, c, prev, mine)
		prev = mine
	}
}

func (t *transport) keepAlive() net.KeepAliveConfig {
	c := t.p.cfg
	return net.KeepAliveConfig{Enable: true, Idle: c.KeepAlive, Interval: c.KeepAliveInterval, Count: c.KeepAliveCount}
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	dialer := net.Dialer{
		LocalAddr:       net.TCPAddrFromAddrPort(netip.AddrPortFrom(d.Local, d.LocalPort)),
		KeepAliveConfig: t.keepAlive(),
	}
	var ccErr error
	cc, required := t.congestionFor(d.Remote.Addr())
	dialer.Control = func(_, _ string, raw syscall.RawConn) error {
		// Set before the connect, the user timeout bounds it too.
		setUserTimeout(raw, t.p.cfg.UserTimeout)
		if cc == "" {
			return nil
		}
		if err := setConnCongestion(raw, cc); required {
			ccErr = err
		}
		return ccErr
	}
	c, err := dialer.DialContext(ctx, "tcp", d.Remote.String())
	if err != nil {
		if ccErr != nil {
			return nil, congestionError("Connect", cc, ccErr)
		}
		return nil, dialError(err)
	}
	return t.active(ctx, c.(*net.TCPConn), d, events)
}

// dialError maps a failed TCP connect to an ND status.
func dialError(err error) error {
	if e, ok := resourceError("Connect", err); ok {
		return e
	}
	st := nd.ErrConnectionRefused
	switch {
	case errors.Is(err, errAddrInUse), errors.Is(err, errAddrNotAvail):
		st = nd.ErrAddressAlreadyAssociated
	case errors.Is(err, errNetUnreach):
		st = nd.ErrNetworkUnreachable
	case errors.Is(err, errHostUnreach):
		st = nd.ErrHostUnreachable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		st = nd.ErrCanceled
	case isTimeout(err):
		st = nd.ErrIOTimeout
	}
	return &nd.OpError{Op: "Connect", Status: st, Err: err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
