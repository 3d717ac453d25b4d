package shm

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/winipc"
)

// AllocateMemory returns size bytes inside a pagefile-backed section of
// their own, zeroed, for the application to register. When a memory
// window over such memory is bound on a shared-memory connection, the
// section's handle is named to the peer once, and the peer's Reads and
// Writes into the window become a plain copy() between its buffers and its
// own mapping of the section: one copy, no system call, no goroutine of
// this process involved, and no need for the peer to hold rights on this
// process's memory.
//
// The memory is not Go heap memory: it does not move and the garbage
// collector does not free it. Release it with FreeMemory once no
// registration covers it any more. The peer can read and write the whole
// section (not only the bound window) once a window over it was bound on a
// connection to that peer: allocate separate memory for data the peer must
// not see.
func AllocateMemory(size int) ([]byte, error) {
	if size <= 0 || size > Info.MaxRegistrationSize {
		return nil, errors.New("shm: AllocateMemory: bad size")
	}
	page := os.Getpagesize()
	n := (size + page - 1) / page * page
	sec, err := winipc.NewSection(n)
	if err != nil {
		return nil, err
	}
	mem := sec.Bytes()
	allocs.mu.Lock()
	allocs.next++
	a := &allocation{mem: mem, fd: sec.Handle(), id: allocs.next}
	allocs.list = append(allocs.list, a)
	allocs.mu.Unlock()
	return mem[:size:size], nil
}

// FreeMemory releases memory AllocateMemory returned (b must be that very
// slice, or start where it starts). It fails if b is not such memory, or
// if a peer may still copy into it: a window over it whose unbinding timed
// out (the connection ended with ND_IO_TIMEOUT) keeps it allocated for the
// life of the process.
func FreeMemory(b []byte) error {
	if len(b) == 0 {
		return errors.New("shm: FreeMemory: not memory from AllocateMemory")
	}
	start := addrOf(b)
	allocs.mu.Lock()
	for i, a := range allocs.list {
		if addrOf(a.mem) != start {
			continue
		}
		if a.pinned {
			allocs.mu.Unlock()
			return errors.New("shm: FreeMemory: a peer may still access this memory")
		}
		allocs.list = append(allocs.list[:i], allocs.list[i+1:]...)
		allocs.mu.Unlock()
		windows.UnmapViewOfFile(uintptr(addrOf(a.mem)))
		windows.CloseHandle(a.fd)
		return nil
	}
	allocs.mu.Unlock()
	return errors.New("shm: FreeMemory: not memory from AllocateMemory")
}

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
