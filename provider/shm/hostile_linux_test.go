//go:build linux && !shmportable

package shm

import (
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd/internal/shmring"
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

// bellHandles are what passes a doorbell to the peer: its eventfd.
func bellHandles(b *shmring.Doorbell) []osHandle { return []osHandle{b.Fd()} }

// releaseSegmentHandle closes the memfd once passed.
func releaseSegmentHandle(fd osHandle) { unix.Close(fd) }

// badSegment is a memfd whose size is not sealed.
func badSegment(t *testing.T) (osHandle, func()) {
	bad, err := unix.MemfdCreate("bad", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(bad, 4096)
	return bad, func() { unix.Close(bad) }
}

// mapPrivate maps size bytes of private anonymous memory, and returns the
// call that unmaps it.
func mapPrivate(t *testing.T, size int) ([]byte, func() error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	return mem, func() error { return unix.Munmap(mem) }
}

// selfPeer is this process as a peer.
func selfPeer(t *testing.T) peerProc { return os.Getpid() }

// underWine is for the Windows tests.
func underWine() bool { return false }

// hostileEnd bounds how long TestHostilePeer scribbles before the
// connection must have ended.
const hostileEnd = 10 * time.Second
