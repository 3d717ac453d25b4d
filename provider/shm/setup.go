//go:build linux || windows || darwin || freebsd

package shm

import (
	"errors"
	"math/rand/v2"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// What the three setups share: a link's doorbells, made by the active side
// and passed to the passive side as handles (handlesPerBell each: an
// eventfd on Linux, a pipe's two ends on macOS and FreeBSD, an event on
// Windows), and the passive side's hand-over of a request to its listener.

// newBells makes a link's doorbells (newBell says of which kind each is).
func newBells() (bells [numBells]*shmring.Doorbell, err error) {
	for i := range bells {
		if bells[i], err = newBell(i); err != nil {
			closeBells(bells[:i])
			return bells, err
		}
	}
	return bells, nil
}

// appendBellHandles appends the handles that pass bells to the peer.
func appendBellHandles(hs []osHandle, bells [numBells]*shmring.Doorbell) []osHandle {
	for _, b := range bells {
		hs = appendBellHandle(hs, b)
	}
	return hs
}

// bellsFromHandles takes the doorbells the peer passed, handlesPerBell
// handles each. It owns hs: on failure, what it did not take is closed.
func bellsFromHandles(hs []osHandle) (bells [numBells]*shmring.Doorbell, err error) {
	for i := range bells {
		// The doorbell owns its handles from here, also when it refuses
		// them.
		if bells[i], err = bellFromHandles(i, hs[i*handlesPerBell:(i+1)*handlesPerBell]); err != nil {
			closeBells(bells[:i])
			closeAll(hs[(i+1)*handlesPerBell:])
			return bells, err
		}
	}
	return bells, nil
}

func closeBells(bells []*shmring.Doorbell) {
	for _, b := range bells {
		b.Close()
	}
}

// deliver makes the passive link of a request that arrived on c from
// remote, whose segment and doorbells are taken, and hands the request to
// the port's ND listener; a refusal is answered and ends the link.
func (t *transport) deliver(pl *portListener, c *setupConn, req *request, seg *segment, bells [numBells]*shmring.Doorbell, remote netip.AddrPort, pid peerProc) {
	l := newLink(t, c, false, seg, bells)
	l.local = netip.AddrPortFrom(pl.addr, pl.port)
	l.remote = remote
	l.pid = pid
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

// Ephemeral ports: the active side of a connection takes a random one
// (Dial with port 0), as TCP does, trying again at most ephemeralTries
// times when it is taken.
const (
	firstEphemeral = 49152
	ephemeralTries = 256
)

func ephemeral() uint16 { return uint16(firstEphemeral + rand.IntN(65536-firstEphemeral)) }

// errPortTaken is what a try of choosePort returns for a port in use.
var errPortTaken = errors.New("shm: the port is in use")

// choosePort calls try with port, or for port 0 with up to ephemeralTries
// random ephemeral ports, until it takes one, and returns that port. It
// returns the first error of try other than errPortTaken, and errPortTaken
// when no port could be taken.
func choosePort(port uint16, try func(p uint16) error) (uint16, error) {
	tries := 1
	if port == 0 {
		tries = ephemeralTries
	}
	for range tries {
		p := port
		if p == 0 {
			p = ephemeral()
		}
		if err := try(p); !errors.Is(err, errPortTaken) {
			return p, err
		}
	}
	return 0, errPortTaken
}

// dialPort is choosePort for the active side's local port: a port asked
// for and taken is ErrAddressAlreadyAssociated, no free ephemeral port
// ErrTooManyAddresses.
func dialPort(port uint16, try func(p uint16) error) (uint16, error) {
	p, err := choosePort(port, try)
	switch {
	case !errors.Is(err, errPortTaken):
		return p, err
	case port != 0:
		return 0, &nd.OpError{Op: "Connect", Status: nd.ErrAddressAlreadyAssociated, Err: err}
	default:
		return 0, nd.ErrTooManyAddresses
	}
}

// listen serves the listener that open makes on a port (choosePort's): it
// registers it and starts its accept loop. A port asked for and taken is
// ErrAddressAlreadyExists, no free ephemeral port ErrTooManyAddresses.
func (t *transport) listen(port uint16, open func(p uint16) (*portListener, error)) (uint16, error) {
	var pl *portListener
	p, err := choosePort(port, func(p uint16) (err error) {
		pl, err = open(p)
		return err
	})
	switch {
	case errors.Is(err, errPortTaken) && port == 0:
		return 0, nd.ErrTooManyAddresses
	case errors.Is(err, errPortTaken):
		return 0, nd.ErrAddressAlreadyExists
	case err != nil:
		return 0, err
	}
	t.mu.Lock()
	t.listeners[pl.l] = pl
	t.mu.Unlock()
	pl.wg.Add(1)
	go pl.serve()
	return p, nil
}
