package shm

import (
	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/winipc"
)

// allocationOf returns the allocation that holds all of buf: its id, size
// and buf's offset in it, and with dup its section handle (which stays the
// allocation's: closeShared leaves it open until FreeMemory, so that the
// peer can take it); ok is false if buf is not in one.
func allocationOf(buf []byte, dup bool) (id uint32, size int, off uint64, h osHandle, ok bool) {
	allocs.mu.Lock()
	defer allocs.mu.Unlock()
	a, off := allocationLocked(buf)
	if a == nil {
		return 0, 0, 0, 0, false
	}
	return a.id, len(a.mem), off, a.fd, true
}

// closeShared leaves the section handle to its allocation.
func closeShared(osHandle) {}

// newAllocationMemory makes and maps the pagefile-backed section of an
// allocation of n bytes, and returns its mapping and handle.
func newAllocationMemory(n int) ([]byte, osHandle, error) {
	sec, err := winipc.NewSection(n)
	if err != nil {
		return nil, 0, err
	}
	return sec.Bytes(), sec.Handle(), nil
}

// release unmaps the allocation and closes its section's handle.
func (a *allocation) release() {
	windows.UnmapViewOfFile(uintptr(addrOf(a.mem)))
	windows.CloseHandle(a.fd)
}
