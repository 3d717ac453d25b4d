package ndspi

import (
	"testing"

	"github.com/godirect/nd"
)

type countReaper struct{ n int }

func (c *countReaper) reaped() { c.n++ }

func TestPool(t *testing.T) {
	var owner countReaper
	p := newPool(3, &owner)
	rs := make([]nd.Result, 5)
	var slots []uint32
	for i := range 3 {
		s, ok := p.take(&rs[i], 10*i, i == 1, false)
		if !ok {
			t.Fatalf("take %d: the pool is full", i)
		}
		slots = append(slots, s)
	}
	if _, ok := p.take(&rs[3], 0, false, false); ok {
		t.Fatal("a fourth take from a pool of 3 succeeded")
	}
	if p.outstanding() != 3 || p.held() != 3 {
		t.Fatalf("outstanding %d held %d, want 3 3", p.outstanding(), p.held())
	}
	// A refused post gives its slot back at once.
	p.untake(slots[2])
	s, ok := p.take(&rs[3], 30, false, false)
	if !ok || s != slots[2] {
		t.Fatalf("take after untake = %d %v, want slot %d", s, ok, slots[2])
	}
	slots[2] = s
	r, ok := p.complete(slots[1], false)
	if !ok || r.res != &rs[1] || r.bytes != 10 || !r.silent {
		t.Fatalf("complete = %+v %v", r, ok)
	}
	if _, ok := p.complete(slots[1], false); ok {
		t.Fatal("a second completion of one slot was taken")
	}
	if _, ok := p.complete(99, false); ok {
		t.Fatal("a completion of a slot the pool does not have was taken")
	}
	// Kept: the slot stays held until done.
	if _, ok := p.complete(slots[0], true); !ok {
		t.Fatal("complete(keep)")
	}
	if p.outstanding() != 1 || p.held() != 2 {
		t.Fatalf("outstanding %d held %d, want 1 2", p.outstanding(), p.held())
	}
	p.done(slots[0])
	p.done(slots[0]) // a second done does nothing
	if p.held() != 1 || p.result(slots[2]) != &rs[3] {
		t.Fatalf("held %d, result %p", p.held(), p.result(slots[2]))
	}
}

// TestPoolAbandon: the requests a shared receive queue's provider still
// holds complete in post order, and stay held until done.
func TestPoolAbandon(t *testing.T) {
	p := newPool(4, nil)
	rs := make([]nd.Result, 6)
	var slots []uint32
	for i := range 4 {
		s, _ := p.take(&rs[i], 0, false, false)
		slots = append(slots, s)
	}
	p.complete(slots[0], false)
	p.complete(slots[2], true)
	s, _ := p.take(&rs[4], 0, false, false) // reuses slot 0's
	got := p.abandon()
	want := []*nd.Result{&rs[1], &rs[3], &rs[4]}
	if len(got) != len(want) {
		t.Fatalf("abandon = %v", got)
	}
	for i, slot := range got {
		if p.result(slot) != want[i] {
			t.Fatalf("abandoned %d = result %p, want %p (post order)", i, p.result(slot), want[i])
		}
	}
	if got[2] != s || p.outstanding() != 0 || p.held() != 4 {
		t.Fatalf("outstanding %d held %d", p.outstanding(), p.held())
	}
	if _, ok := p.complete(got[0], false); ok {
		t.Fatal("an abandoned request completed again")
	}
}

func TestTable(t *testing.T) {
	var tb table
	q1, q2 := &queues{in: newPool(1, nil), out: newPool(2, nil)}, &queues{}
	if q1.pool(true) != q1.in || q1.pool(false) != q1.out || q2.pool(true) != nil {
		t.Fatal("queues.pool picks the wrong pool")
	}
	id1, _ := tb.add(q1)
	id2, _ := tb.add(q2)
	if id1 == 0 || id2 == 0 || id1 == id2 || tb.get(id1) != q1 || tb.get(id2) != q2 {
		t.Fatalf("ids %#x %#x", id1, id2)
	}
	tb.remove(id1)
	if tb.get(id1) != nil {
		t.Fatal("a removed id still names its queues")
	}
	q3 := &queues{}
	id3, _ := tb.add(q3)
	if id3 == id1 || id3&tableIndexMask != id1&tableIndexMask || tb.get(id3) != q3 || tb.get(id1) != nil {
		t.Fatalf("the index's next id %#x (was %#x)", id3, id1)
	}
	tb.remove(id1) // stale: nothing happens
	if tb.get(id3) != q3 {
		t.Fatal("removing a stale id removed its index's new queues")
	}
	for _, id := range []uint32{0, 0xFFFFFF, id2 + 1<<tableIndexBits} {
		if tb.get(id) != nil {
			t.Fatalf("get(%#x) named queues", id)
		}
	}
}

func TestContexts(t *testing.T) {
	for _, c := range []struct{ id, slot uint32 }{{1, 0}, {0x00FFFFFF, 0xFFFFFFFF}, {0x7F000001, 7}} {
		id, slot, srq := parseRequestContext(srqRequestContext(c.id, c.slot))
		if !srq || id != c.id || slot != c.slot {
			t.Errorf("shared receive queue context of %v -> %d %d %v", c, id, slot, srq)
		}
		if _, slot, srq := parseRequestContext(requestContext(c.slot)); srq || slot != c.slot {
			t.Errorf("queue pair context of slot %d -> %d %v", c.slot, slot, srq)
		}
		for _, in := range []bool{false, true} {
			id, slot, inbound := parseV1Tag(v1Tag(c.id, c.slot&^v1Inbound, in))
			if id != c.id || slot != c.slot&^v1Inbound || inbound != in {
				t.Errorf("v1 tag of %v %v -> %d %d %v", c, in, id, slot, inbound)
			}
		}
	}
}

func TestBacklog(t *testing.T) {
	var b backlog
	rs := make([]nd.Result, 100)
	p := newPool(1, nil)
	next := 0
	for round := range 10 {
		for i := range 7 {
			b.push(backlogItem{res: &rs[(round*7+i)%100], pool: p, slot: uint32(round*7 + i)})
		}
		for range 5 {
			it := b.pop()
			if it.res != &rs[next%100] || it.pool != p || it.slot != uint32(next) {
				t.Fatalf("pop %d = %p %p %d, want %p %p %d", next, it.res, it.pool, it.slot, &rs[next%100], p, next)
			}
			next++
		}
	}
	if b.len() != 20 || len(b.items) > 40 {
		t.Fatalf("len %d, %d items kept", b.len(), len(b.items))
	}
}
