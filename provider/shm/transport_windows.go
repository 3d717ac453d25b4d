package shm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/winipc"
)

// transport implements engine.Transport for every adapter of a Provider.
//
// Names (in the session's namespace, host-wide for its processes):
//
//	pipe  <namespace>-l-<addr>-<protocol>-<port>      a listener (winipc)
//	event Local\<namespace>-c-<addr>-<port>           the active end of a connection
//	event Local\<namespace>-a-<addr>                  an adapter serves addr
//
// The second reserves the active side's ND port for the connection's life;
// the request names the port (and address) after its body, where Linux's
// passive side reads them from the socket's name. The third exists while
// any process holds it (every process with an adapter on addr does, for
// its life).
type transport struct {
	p *Provider

	mu        sync.Mutex
	listeners map[*engine.Listener]*portListener
	present   map[netip.Addr]windows.Handle // presence events, kept for the provider's life

	// Sends by rendezvous over the provider's connections (tests): sent
	// as a descriptor, and pulled from the peer.
	rvSent, rvPulled atomic.Uint64
	rvMapped         atomic.Uint64 // Sends by rendezvous copied through a mapped segment

	progress *progress // the readiness set of every link (progress.go)
}

func newTransport(p *Provider) *transport {
	return &transport{
		p: p, listeners: make(map[*engine.Listener]*portListener),
		present:  make(map[netip.Addr]windows.Handle),
		progress: newProgress(&p.cfg),
	}
}

// eventName returns the UTF-16 name of a named event.
func eventName(format string, a ...any) *uint16 {
	s, err := windows.UTF16PtrFromString(`Local\` + fmt.Sprintf(format, a...))
	if err != nil {
		return nil
	}
	return s
}

// announce creates, once per address, the presence event that tells other
// processes an adapter serves addr (see served).
func (t *transport) announce(addr netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.present[addr] != 0 {
		return
	}
	if h, err := windows.CreateEvent(nil, 1, 0, eventName("%s-a-%s", t.p.cfg.Namespace, addr)); err == nil || errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		if h != 0 {
			t.present[addr] = h
		}
	}
}

// served reports whether any process of the session announced addr. Only a
// refused connect asks, to tell ErrBadNetworkName from
// ErrConnectionRefused.
func (t *transport) served(addr netip.Addr) bool {
	t.mu.Lock()
	mine := t.present[addr] != 0
	t.mu.Unlock()
	if mine {
		return true
	}
	h, err := windows.OpenEvent(windows.SYNCHRONIZE, false, eventName("%s-a-%s", t.p.cfg.Namespace, addr))
	if err != nil {
		return false
	}
	windows.CloseHandle(h)
	return true
}

func (t *transport) listenName(addr netip.Addr, protocol int, port uint16) string {
	return fmt.Sprintf("%s-l-%s-%d-%d", t.p.cfg.Namespace, addr, protocol, port)
}

// reservePort holds the active side's port p on addr, or fails if another
// connection holds it.
func (t *transport) reservePort(addr netip.Addr, p uint16) (windows.Handle, bool) {
	h, err := windows.CreateEvent(nil, 1, 0, eventName("%s-c-%s-%d", t.p.cfg.Namespace, addr, p))
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		windows.CloseHandle(h)
		return 0, false
	}
	return h, err == nil
}

// portListener is one listening pipe name.
type portListener struct {
	t     *transport
	l     *engine.Listener
	ln    *winipc.Listener
	addr  netip.Addr
	port  uint16
	proto int
	wg    sync.WaitGroup
}

func (t *transport) Listen(l *engine.Listener, addr netip.Addr, protocol int, port uint16) (uint16, error) {
	return t.listen(port, func(p uint16) (*portListener, error) {
		ln, err := winipc.Listen(t.listenName(addr, protocol, p))
		switch {
		case errors.Is(err, winipc.ErrNameInUse):
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

// serve accepts connections until the listener closes; each runs the
// passive side of the setup in its own goroutine.
func (pl *portListener) serve() {
	defer pl.wg.Done()
	for {
		c, err := pl.ln.Accept()
		if err == nil {
			go pl.t.passive(pl, c)
			continue
		}
		if errors.Is(err, winipc.ErrListenerClosed) {
			return
		}
		time.Sleep(acceptBackoff)
	}
}

// answerShort tells the active side of c that this side lacks the resource
// named by err to serve its request, and closes c.
func answerShort(c *setupConn, err error) {
	what := byte(shortFDs)
	if errors.Is(err, windows.ERROR_NOT_ENOUGH_MEMORY) || errors.Is(err, windows.ERROR_OUTOFMEMORY) || errors.Is(err, windows.ERROR_COMMITMENT_LIMIT) {
		what = shortMemory
	}
	c.c.WriteMessage([]byte{msgShort, what, 0})
	c.Close()
	c.release()
}

// short reports whether err is a lack of handles or memory.
func short(err error) bool {
	return errors.Is(err, errNoDescriptors) || errors.Is(err, windows.ERROR_NO_SYSTEM_RESOURCES) ||
		errors.Is(err, windows.ERROR_NOT_ENOUGH_MEMORY) || errors.Is(err, windows.ERROR_OUTOFMEMORY) ||
		errors.Is(err, windows.ERROR_COMMITMENT_LIMIT)
}

// passive reads the connection request on c, maps the section it names,
// and hands the request to the ND listener.
func (t *transport) passive(pl *portListener, pc *winipc.Conn) {
	c, err := newSetupConn(pc)
	if err != nil {
		return
	}
	fail := func() {
		c.Close()
		c.release()
	}
	c.c.SetReadDeadline(time.Now().Add(t.p.cfg.HandshakeTimeout))
	buf := make([]byte, maxMessage+maxTrailer)
	msg, hs, err := readMessage(c, buf, nil)
	if err != nil {
		if short(err) {
			answerShort(c, err)
			return
		}
		fail()
		return
	}
	c.c.SetReadDeadline(time.Time{})
	var req *request
	body, remote, ok := splitActive(msg)
	if ok {
		req, err = parseRequest(body)
	}
	if req == nil || err != nil || len(hs) != 1+numBells*handlesPerBell || req.protocol != pl.proto {
		closeAll(hs)
		fail()
		return
	}
	seg, err := mapSegment(hs[0], req.ringSize)
	if err != nil {
		closeAll(hs[1:])
		if short(err) {
			answerShort(c, err)
			return
		}
		fail()
		return
	}
	bells, err := bellsFromHandles(hs[1:])
	if err != nil {
		seg.unmap()
		fail()
		return
	}
	t.deliver(pl, c, req, seg, bells, remote, c.proc)
}

func (t *transport) Dial(ctx context.Context, d *engine.DialRequest, events engine.LinkEvents) (engine.Link, error) {
	ra := d.Remote.Addr().Unmap()
	if !slices.Contains(t.p.cfg.Addresses, ra) && !t.served(ra) {
		return nil, nd.ErrBadNetworkName
	}
	var hold windows.Handle
	port, err := dialPort(d.LocalPort, func(p uint16) error {
		h, ok := t.reservePort(d.Local, p)
		if !ok {
			return errPortTaken
		}
		hold = h
		return nil
	})
	if err != nil {
		return nil, err
	}
	pc, err := winipc.Dial(ctx, t.listenName(ra, d.Protocol, d.Remote.Port()))
	if err != nil {
		windows.CloseHandle(hold)
		switch {
		case errors.Is(err, winipc.ErrNoListener) && !t.served(ra):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrBadNetworkName, Err: err}
		case short(err):
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError("pipe", err)}
		default:
			return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
		}
	}
	c, err := newSetupConn(pc)
	if err != nil {
		windows.CloseHandle(hold)
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	c.hold = hold
	fail := func(what string, err error) (engine.Link, error) {
		c.Close()
		c.release()
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: resourceError(what, err)}
	}
	seg, sech, err := newSegment(t.p.cfg.RingSize)
	if err != nil {
		return fail("shared segment", err)
	}
	bells, err := newBells()
	if err != nil {
		seg.unmap()
		return fail("event", err)
	}
	l := newLink(t, c, true, seg, bells)
	l.local = netip.AddrPortFrom(d.Local, port)
	l.remote = d.Remote
	l.pid = c.proc
	l.events = events
	req := request{
		protocol: d.Protocol, ird: d.IRD, ord: d.ORD, ringSize: t.p.cfg.RingSize,
		probeAddr: probeAddr(), probe: *probe, pd: d.PrivateData,
	}
	b := appendActive(req.append(nil), netip.AddrPortFrom(d.Local, port))
	hs := appendBellHandles([]osHandle{sech}, bells)
	if err := l.send(b, hs); err != nil {
		l.shutdown(nd.ErrConnectionAborted, false)
		return nil, &nd.OpError{Op: "Connect", Status: nd.ErrConnectionRefused, Err: err}
	}
	l.startWatcher()
	return l, nil
}
