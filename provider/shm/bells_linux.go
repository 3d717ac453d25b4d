//go:build linux && !shmportable

package shm

import "github.com/godirect/nd/internal/shmring"

// handlesPerBell: a doorbell passes as its eventfd.
const handlesPerBell = 1

// newBell creates doorbell i of a connection (handshake.go's order): the
// data doorbells are raw, watched by the readiness sets of both sides
// rather than by the Go runtime; the room doorbells are waited on by the
// writer goroutines.
func newBell(i int) (*shmring.Doorbell, error) {
	if i == bellA2PData || i == bellP2AData {
		return shmring.NewRawDoorbell()
	}
	return shmring.NewDoorbell()
}

// appendBellHandle appends what passes b to the peer: its eventfd.
func appendBellHandle(hs []osHandle, b *shmring.Doorbell) []osHandle { return append(hs, b.Fd()) }

// bellFromHandles is newBell for doorbell i as the peer passed it.
func bellFromHandles(i int, hs []osHandle) (*shmring.Doorbell, error) {
	if i == bellA2PData || i == bellP2AData {
		return shmring.RawDoorbellFromFD(hs[0])
	}
	return shmring.DoorbellFromFD(hs[0])
}
