//go:build darwin || freebsd || (linux && shmportable)

package shm

import "github.com/godirect/nd/internal/shmring"

// handlesPerBell: a doorbell is a pipe and passes as its read end, then
// its write end.
const handlesPerBell = 2

// newBell creates doorbell i of a connection: every doorbell is a pipe
// here.
func newBell(int) (*shmring.Doorbell, error) { return shmring.NewDoorbell() }

// appendBellHandle appends what passes b to the peer: its pipe's ends.
func appendBellHandle(hs []osHandle, b *shmring.Doorbell) []osHandle {
	r, w := b.Fds()
	return append(hs, r, w)
}

// bellFromHandles takes doorbell i as the peer passed it.
func bellFromHandles(_ int, hs []osHandle) (*shmring.Doorbell, error) {
	return shmring.PipeBellFromFDs(hs[0], hs[1])
}
