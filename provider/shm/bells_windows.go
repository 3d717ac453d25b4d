package shm

import "github.com/godirect/nd/internal/shmring"

// handlesPerBell: a doorbell passes as its event's handle.
const handlesPerBell = 1

// newBell creates doorbell i of a connection: every doorbell is an
// auto-reset event here.
func newBell(int) (*shmring.Doorbell, error) { return shmring.NewDoorbell() }

// appendBellHandle appends what passes b to the peer: its event's handle.
func appendBellHandle(hs []osHandle, b *shmring.Doorbell) []osHandle { return append(hs, b.Handle()) }

// bellFromHandles takes doorbell i as the peer passed it.
func bellFromHandles(_ int, hs []osHandle) (*shmring.Doorbell, error) {
	return shmring.DoorbellFromHandle(hs[0])
}
