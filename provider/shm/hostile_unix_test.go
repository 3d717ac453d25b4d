//go:build darwin || freebsd || (linux && shmportable)

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

// bellHandles are what passes a doorbell to the peer: its pipe's read and
// write ends.
func bellHandles(b *shmring.Doorbell) []osHandle {
	r, w := b.Fds()
	return []osHandle{r, w}
}

// releaseSegmentHandle closes the file once passed.
func releaseSegmentHandle(fd osHandle) { unix.Close(fd) }

// badSegment is a regular file whose size is not the one announced (8 KiB
// where the test announces 4 KiB).
func badSegment(t *testing.T) (osHandle, func()) {
	bad, err := sharedFile("bad", 8192)
	if err != nil {
		t.Fatal(err)
	}
	return bad, func() { unix.Close(bad) }
}

// mapPrivate maps size bytes of private anonymous memory, and returns the
// call that unmaps it.
func mapPrivate(t *testing.T, size int) ([]byte, func() error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
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
