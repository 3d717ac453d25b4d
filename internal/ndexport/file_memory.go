package ndexport

import (
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// MemoryFile is a File that keeps its completions in memory: what the
// kernel would do on Windows, for systems without completion ports and for
// tests. Complete writes the OVERLAPPED as the kernel does (Internal the
// packet's status, InternalHigh 1), records the event as set, and queues a
// packet unless the event's lowest bit is set. Its methods are safe for
// concurrent use.
type MemoryFile struct {
	mu      sync.Mutex
	cond    sync.Cond
	packets []Packet
	events  map[uintptr]int
	closed  bool
	handle  uintptr
}

// Packet is a completion MemoryFile queued: the consumer's OVERLAPPED and
// the status the packet carries (what GetQueuedCompletionStatus would
// report).
type Packet struct {
	Overlapped *ndabi.Overlapped
	Status     uintptr
}

// NewMemoryFile returns an empty MemoryFile.
func NewMemoryFile() *MemoryFile {
	f := &MemoryFile{events: map[uintptr]int{}, handle: memoryHandles.Add(4)}
	f.cond.L = &f.mu
	return f
}

var memoryHandles atomic.Uintptr

// Handle implements File: a number unique among MemoryFiles.
func (f *MemoryFile) Handle() uintptr { return f.handle }

// Complete implements File.
func (f *MemoryFile) Complete(ov *ndabi.Overlapped, st nd.Status) {
	status := uintptr(0)
	if !succeeded(st) {
		status = statusCancelled
	}
	atomic.StoreUintptr(&ov.InternalHigh, 1)
	atomic.StoreUintptr(&ov.Internal, status)
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev := ov.Event; ev != 0 {
		f.events[ev&^1]++
	}
	if ov.Event&1 == 0 {
		f.packets = append(f.packets, Packet{ov, status})
		f.cond.Broadcast()
	}
}

// Close implements File.
func (f *MemoryFile) Close(bool) {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// Dequeue returns the oldest packet, waiting for one if wait is true; ok is
// false when none is queued (or the file closed while it waited).
func (f *MemoryFile) Dequeue(wait bool) (p Packet, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.packets) == 0 {
		if !wait || f.closed {
			return Packet{}, false
		}
		f.cond.Wait()
	}
	p = f.packets[0]
	f.packets = f.packets[1:]
	return p, true
}

// Signaled returns how many times event (its lowest bit ignored) was set.
func (f *MemoryFile) Signaled(event uintptr) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events[event&^1]
}
