//go:build linux || darwin || freebsd

package shm

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// releaseSegmentHandle closes the descriptor once passed.
func releaseSegmentHandle(fd osHandle) { unix.Close(fd) }

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

// hostileEnd bounds how long TestHostilePeer scribbles before the
// connection must have ended.
const hostileEnd = 10 * time.Second
