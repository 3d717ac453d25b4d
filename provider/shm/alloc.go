//go:build linux || windows || darwin || freebsd

package shm

import (
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
