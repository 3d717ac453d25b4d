//go:build linux || windows || darwin || freebsd

package shm

import (
	"errors"
	"os"
	"sync"
)

// allocation is one AllocateMemory segment.
type allocation struct {
	mem    []byte   // the whole mapping
	fd     osHandle // the memfd (section)
	id     uint32   // unique in this process, never 0
	pinned bool     // a late copy may still hit it: never freed
}

var allocs struct {
	mu     sync.Mutex
	next   uint32
	list   []*allocation
	leaked [][]byte // windows whose unbinding timed out: never released
}

// allocationLocked finds the allocation that holds all of buf, with
// allocs.mu held.
func allocationLocked(buf []byte) (*allocation, uint64) {
	if len(buf) == 0 {
		return nil, 0
	}
	b := addrOf(buf)
	for _, a := range allocs.list {
		s := addrOf(a.mem)
		if b < s || b-s > uint64(len(a.mem)) || uint64(len(buf)) > uint64(len(a.mem))-(b-s) {
			continue
		}
		return a, b - s
	}
	return nil, 0
}

// pinMemory keeps buf's memory referenced for the life of the process: a
// peer's copy into it may still be in flight after this process gave up
// waiting for it. Go memory stays alive through the reference; memory from
// AllocateMemory also refuses FreeMemory.
func pinMemory(buf []byte) {
	if len(buf) == 0 {
		return
	}
	b := addrOf(buf)
	allocs.mu.Lock()
	defer allocs.mu.Unlock()
	allocs.leaked = append(allocs.leaked, buf)
	for _, a := range allocs.list {
		if s := addrOf(a.mem); b >= s && b-s < uint64(len(a.mem)) {
			a.pinned = true
		}
	}
}

// AllocateMemory returns size bytes inside a shared-memory segment of their
// own (a file that nothing names, mapped MAP_SHARED: a sealed memfd on
// Linux, an unlinked temporary file on macOS and FreeBSD; a pagefile-backed
// section on Windows), zeroed, for the application to register. When a
// memory window over such memory is bound on a shared-memory connection,
// the file is passed to the peer once, and the peer's Reads and Writes
// into the window become a plain copy() between its buffers and its own
// mapping of the segment: one copy, no system call, no goroutine of this
// process involved, and no need for the peer to hold rights on this
// process's memory (process_vm_readv / writev on Linux, ReadProcessMemory
// / WriteProcessMemory on Windows). On macOS and FreeBSD this is the only
// one-sided path (copies into other memory go through the rings).
//
// The memory is not Go heap memory: it does not move and the garbage
// collector does not free it. Release it with FreeMemory once no
// registration covers it any more. The peer can read and write the whole
// segment (not only the bound window) once a window over it was bound on a
// connection to that peer: allocate separate memory for data the peer must
// not see.
func AllocateMemory(size int) ([]byte, error) {
	if size <= 0 || size > Info.MaxRegistrationSize {
		return nil, errors.New("shm: AllocateMemory: bad size")
	}
	page := os.Getpagesize()
	n := (size + page - 1) / page * page
	mem, h, err := newAllocationMemory(n)
	if err != nil {
		return nil, err
	}
	allocs.mu.Lock()
	allocs.next++
	a := &allocation{mem: mem, fd: h, id: allocs.next}
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
		a.release()
		return nil
	}
	allocs.mu.Unlock()
	return errors.New("shm: FreeMemory: not memory from AllocateMemory")
}
