// Package linktable is the slot table of a transport's readiness set,
// shared by provider/tcp and provider/shm: the links of one provider by
// slot number, so that the kernel's readiness set can name a link by a
// small integer (an epoll event's data) instead of a pointer; a generation
// per slot, so that an event about a link removed since, whose slot was
// reused, is recognised as stale; and, while the links are few, a snapshot
// of them that application polls read without the set's lock ("direct
// mode": each poll reads every link rather than asking the kernel).
//
// A Table is not safe for concurrent use, except Direct, which any
// goroutine may call at any time: its owner guards every other method with
// one lock (the readiness set's).
package linktable

import "sync/atomic"

// Table holds links of type L by slot. The zero value is not usable: make
// one with New.
type Table[L any] struct {
	links     []*L // by slot; nil: free
	gens      []uint32
	free      []int32
	live      int
	directMax int
	direct    atomic.Pointer[[]*L]
}

// New returns an empty table that publishes a direct snapshot while it
// holds between 1 and directMax links (0: never).
func New[L any](directMax int) *Table[L] {
	return &Table[L]{directMax: directMax}
}

// Add puts l in a free slot (the most recently freed one, else a new one)
// and returns the slot and its new generation. It does not publish the
// direct snapshot: the caller does (Publish) once the kernel accepted the
// link, or gives the slot back with Undo.
func (t *Table[L]) Add(l *L) (slot int32, gen uint32) {
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		slot = int32(len(t.links))
		t.links = append(t.links, nil)
		t.gens = append(t.gens, 0)
	}
	t.gens[slot]++
	t.links[slot] = l
	t.live++
	return slot, t.gens[slot]
}

// Undo gives back the slot Add just returned, when the kernel refused the
// link.
func (t *Table[L]) Undo(slot int32) {
	t.links[slot] = nil
	t.free = append(t.free, slot)
	t.live--
}

// Remove frees l's slot and reports whether l held it (a link removed
// twice, or never added, is left alone and gives false). It does not
// publish the direct snapshot.
func (t *Table[L]) Remove(slot int32, l *L) bool {
	if slot < 0 || int(slot) >= len(t.links) || t.links[slot] != l || l == nil {
		return false
	}
	t.links[slot] = nil
	t.free = append(t.free, slot)
	t.live--
	return true
}

// Get returns the link in slot if its generation is gen, else nil (the
// slot is free, out of range, or holds a later link).
func (t *Table[L]) Get(slot int32, gen uint32) *L {
	if slot < 0 || int(slot) >= len(t.links) || t.gens[slot] != gen {
		return nil
	}
	return t.links[slot]
}

// At returns the link in slot, whatever its generation, or nil.
func (t *Table[L]) At(slot int32) *L {
	if slot < 0 || int(slot) >= len(t.links) {
		return nil
	}
	return t.links[slot]
}

// Live returns the number of links in the table.
func (t *Table[L]) Live() int { return t.live }

// Each calls f for every link in the table, in slot order.
func (t *Table[L]) Each(f func(*L)) {
	for _, l := range t.links {
		if l != nil {
			f(l)
		}
	}
}

// Publish refreshes the direct snapshot after Adds and Removes: the table's
// links while they number 1 to directMax, else none. It reports whether the
// table is now in direct mode, and whether it just left it.
func (t *Table[L]) Publish() (direct, left bool) {
	if t.live == 0 || t.live > t.directMax {
		left = t.direct.Load() != nil
		if left {
			t.direct.Store(nil)
		}
		return false, left
	}
	d := make([]*L, 0, t.live)
	t.Each(func(l *L) { d = append(d, l) })
	t.direct.Store(&d)
	return true, false
}

// Direct returns the direct snapshot, or nil outside direct mode. Safe for
// concurrent use; the slice must not be modified.
func (t *Table[L]) Direct() []*L {
	if d := t.direct.Load(); d != nil {
		return *d
	}
	return nil
}

// Reset empties the table (its owner is done with every link) and leaves
// direct mode.
func (t *Table[L]) Reset() {
	t.links, t.gens, t.free, t.live = nil, nil, nil, 0
	t.direct.Store(nil)
}
