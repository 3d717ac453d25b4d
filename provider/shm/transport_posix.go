//go:build linux || darwin || freebsd

package shm

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

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
			time.Sleep(acceptBackoff)
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
			writeMessage(c, []byte{msgShort, shortFDs}, nil)
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
	writeMessage(c, []byte{msgShort, what}, nil)
	c.Close()
}

// short reports whether err is a lack of descriptors or memory.
func short(err error) bool {
	return errors.Is(err, errNoDescriptors) || errors.Is(err, unix.EMFILE) ||
		errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOMEM)
}

// takeRequest maps the segment and takes the doorbells that fds pass with
// a request that arrived on c (the segment's descriptor first, closed once
// mapped), and delivers the request. On failure it ends c, answering that
// it is short when descriptors or memory ran out.
func (t *transport) takeRequest(pl *portListener, c *setupConn, req *request, fds []osHandle, remote netip.AddrPort, pid peerProc) {
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
	bells, err := bellsFromHandles(fds[1:])
	if err != nil {
		seg.unmap()
		c.Close()
		return
	}
	t.deliver(pl, c, req, seg, bells, remote, pid)
}
