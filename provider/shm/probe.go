//go:build linux || windows || darwin || freebsd

package shm

import "crypto/rand"

// The probe: each side names a 16-byte buffer of random bytes in its
// handshake message; the peer reads it with process_vm_readv
// (ReadProcessMemory on Windows) and reports whether it got the same
// bytes. Only then does the prober copy one-sided payloads against that
// peer's memory, in that direction.
var probe = func() *[16]byte {
	b := new([16]byte)
	rand.Read(b[:])
	return b
}()

// probeAddr returns the address of this process's probe buffer.
func probeAddr() uint64 { return addrOf(probe[:]) }
