//go:build linux && !shmportable

package shm

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// The hostile-peer tests' platform pieces on Linux.

// fakeConnect connects a fake active side, bound to the connection name
// of local, to the listener on port.
func fakeConnect(t *testing.T, tr *transport, local netip.AddrPort, port uint16) *setupConn {
	c, err := net.DialUnix("unixpacket", &net.UnixAddr{Name: tr.connName(local.Addr(), local.Port()), Net: "unixpacket"},
		&net.UnixAddr{Name: tr.listenName(local.Addr(), 0, port), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeRequestBody is the request message as the active side at local
// sends it: the socket's name says local.
func fakeRequestBody(req *request, local netip.AddrPort) []byte { return req.append(nil) }

// badSegment is a memfd whose size is not sealed.
func badSegment(t *testing.T) (osHandle, func()) {
	bad, err := unix.MemfdCreate("bad", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(bad, 4096)
	return bad, func() { unix.Close(bad) }
}
