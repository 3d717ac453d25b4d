package tcp

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"github.com/godirect/nd"
)

// CongestionSystem as Config.CongestionControl leaves every connection
// with the system's default congestion control.
const CongestionSystem = "system"

// sameHostCongestion is the algorithm the default policy sets on
// connections within the host. Linux lets every process choose reno.
const sameHostCongestion = "reno"

// congestionFor returns the congestion control to set on a connection
// with the peer at remote ("" for the system's default), and whether the
// connection must fail when the kernel refuses it (the configuration named
// it).
func (t *transport) congestionFor(remote netip.Addr) (name string, required bool) {
	switch cc := t.p.cfg.CongestionControl; cc {
	case CongestionSystem:
		return "", false
	case "":
		if congestionSupported && sameHost(remote) {
			return sameHostCongestion, false
		}
		return "", false
	default:
		return cc, true
	}
}

// sameHost reports whether addr is this host's: a loopback address or one
// of its interfaces' addresses.
func sameHost(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if addr.IsLoopback() {
		return true
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ifa := range ifas {
		if pfx, err := netip.ParsePrefix(ifa.String()); err == nil && pfx.Addr().Unmap() == addr {
			return true
		}
	}
	return false
}

// congestionError is the error of a connection whose configured congestion
// control the kernel refused.
func congestionError(op, name string, err error) error {
	return &nd.OpError{Op: op, Status: nd.ErrInvalidParameter,
		Err: fmt.Errorf("tcp: Config.CongestionControl %q: %w", name, err)}
}

// setConnCongestion sets congestion control name on raw's socket.
func setConnCongestion(raw syscall.RawConn, name string) error {
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = setCongestion(fd, name) }); err != nil {
		return err
	}
	return serr
}

// connCongestion returns c's TCP congestion control algorithm.
func connCongestion(c *net.TCPConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := raw.Control(func(fd uintptr) { name, gerr = congestionOf(fd) }); err != nil {
		return "", err
	}
	return name, gerr
}

// applyCongestion sets the default policy's congestion control on an
// accepted connection c with the peer at remote; a refusal is logged. (A
// name the configuration gave was set on the listener, and c inherited
// it.)
func (t *transport) applyCongestion(c *net.TCPConn, remote netip.Addr) {
	name, required := t.congestionFor(remote)
	if name == "" || required {
		return
	}
	raw, err := c.SyscallConn()
	if err == nil {
		err = setConnCongestion(raw, name)
	}
	if lg := t.p.cfg.Logger; lg != nil && err != nil {
		lg.Warn("tcp: congestion control not set", "name", name, "remote", remote, "err", err)
	}
}

// bulkBufferSuits reports whether c's reader buffer should grow for bulk
// traffic (link.go): on Linux unless its congestion control is BBR (or
// cannot be read); elsewhere always, the systems' defaults there being
// loss-based.
func bulkBufferSuits(c *net.TCPConn) bool {
	if !congestionSupported {
		return true
	}
	name, err := connCongestion(c)
	return err == nil && !strings.HasPrefix(name, "bbr")
}
