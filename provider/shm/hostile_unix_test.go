//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// The hostile-peer tests' platform pieces on macOS and FreeBSD (and on
// Linux with the build tag shmportable).

// fakeConnect connects a fake active side to the listener on port of
// local's address.
func fakeConnect(t *testing.T, tr *transport, local netip.AddrPort, port uint16) *setupConn {
	prefix, err := tr.names()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: tr.listenName(prefix, local.Addr(), 0, port), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeRequestBody is the request message as the active side at local
// sends it: its address and port follow the request.
func fakeRequestBody(req *request, local netip.AddrPort) []byte {
	return appendActive(req.append(nil), local)
}

// badSegment is a regular file whose size is not the one announced (8 KiB
// where the test announces 4 KiB).
func badSegment(t *testing.T) (osHandle, func()) {
	bad, err := sharedFile("bad", 8192)
	if err != nil {
		t.Fatal(err)
	}
	return bad, func() { unix.Close(bad) }
}
