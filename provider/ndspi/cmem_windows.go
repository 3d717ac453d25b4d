//go:build windows && (amd64 || arm64)

package ndspi

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
)

// cmem is memory outside the Go heap (LocalAlloc), for what the provider
// reads or writes: OVERLAPPEDs, ND v1 ND_RESULTs, scatter/gather arrays,
// inline bytes, sockaddrs, private data and out parameters. Nothing in it
// is a Go pointer to the garbage collector, and it stays where it is until
// free.
type cmem struct {
	addr uintptr
	n    int
}

// allocC returns n bytes of zeroed memory outside the Go heap.
func allocC(n int) (cmem, error) {
	if n <= 0 {
		n = 1
	}
	a, err := windows.LocalAlloc(windows.LPTR, uint32(n))
	if err != nil {
		return cmem{}, &nd.OpError{Op: "LocalAlloc", Status: nd.ErrNoMemory, Err: err}
	}
	return cmem{addr: a, n: n}, nil
}

// free gives the memory back; the provider must be done with it.
func (m *cmem) free() {
	if m.addr != 0 {
		windows.LocalFree(windows.Handle(m.addr))
		m.addr, m.n = 0, 0
	}
}

// bytes is the memory as a slice.
func (m cmem) bytes() []byte { return unsafe.Slice((*byte)(at(m.addr)), m.n) }

// ptr is the address of byte off.
func (m cmem) ptr(off int) uintptr { return m.addr + uintptr(off) }

// word and setWord read and write the machine word at byte off.
func (m cmem) word(off int) uint64       { return binary.LittleEndian.Uint64(m.bytes()[off:]) }
func (m cmem) setWord(off int, v uint64) { binary.LittleEndian.PutUint64(m.bytes()[off:], v) }

// u32 and setU32 read and write the 32-bit value at byte off.
func (m cmem) u32(off int) uint32       { return binary.LittleEndian.Uint32(m.bytes()[off:]) }
func (m cmem) setU32(off int, v uint32) { binary.LittleEndian.PutUint32(m.bytes()[off:], v) }

// scratch is a call's out parameters and small buffers: cmem of a fixed
// size, freed when the call is done with it.
const scratchSize = 512

func newScratch() (cmem, error) { return allocC(scratchSize) }

// unsafeBytes is the n bytes at address a, memory outside the Go heap.
func unsafeBytes(a uintptr, n int) []byte { return unsafe.Slice((*byte)(at(a)), n) }
