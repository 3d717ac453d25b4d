package linktable

import "testing"

type item struct{ name string }

func TestSlotsAreReusedWithNewGenerations(t *testing.T) {
	tb := New[item](2)
	a, b, c := &item{"a"}, &item{"b"}, &item{"c"}
	sa, ga := tb.Add(a)
	sb, gb := tb.Add(b)
	if sa != 0 || sb != 1 || ga != 1 || gb != 1 {
		t.Fatalf("slots %d/%d gens %d/%d, want 0/1 and 1/1", sa, sb, ga, gb)
	}
	if !tb.Remove(sa, a) {
		t.Fatal("Remove(a) = false")
	}
	if tb.Remove(sa, a) {
		t.Fatal("second Remove(a) = true")
	}
	if tb.Remove(sb, a) {
		t.Fatal("Remove with another link's slot = true")
	}
	sc, gc := tb.Add(c)
	if sc != sa || gc != 2 {
		t.Fatalf("c: slot %d gen %d, want %d and 2", sc, gc, sa)
	}
	if got := tb.Get(sa, ga); got != nil {
		t.Fatalf("Get with a's stale generation = %v, want nil", got.name)
	}
	if got := tb.Get(sc, gc); got != c {
		t.Fatalf("Get(c) = %v", got)
	}
	if got := tb.At(sc); got != c {
		t.Fatalf("At(c's slot) = %v", got)
	}
	for _, s := range []int32{-1, 2, 100} {
		if tb.Get(s, 1) != nil || tb.At(s) != nil {
			t.Fatalf("slot %d out of range gave a link", s)
		}
	}
	if tb.Live() != 2 {
		t.Fatalf("Live = %d, want 2", tb.Live())
	}
}

func TestUndoFreesTheSlot(t *testing.T) {
	tb := New[item](4)
	a, b := &item{"a"}, &item{"b"}
	s, _ := tb.Add(a)
	tb.Undo(s)
	if tb.Live() != 0 || tb.At(s) != nil {
		t.Fatalf("after Undo: live %d, slot holds %v", tb.Live(), tb.At(s))
	}
	if s2, g2 := tb.Add(b); s2 != s || g2 != 2 {
		t.Fatalf("after Undo, Add gave slot %d gen %d, want %d and 2", s2, g2, s)
	}
}

func TestDirectSnapshotFollowsTheCount(t *testing.T) {
	tb := New[item](2)
	if d := tb.Direct(); d != nil {
		t.Fatalf("empty table's snapshot = %v", d)
	}
	if direct, left := tb.Publish(); direct || left {
		t.Fatalf("empty Publish = %v, %v", direct, left)
	}
	items := []*item{{"a"}, {"b"}, {"c"}}
	slots := make([]int32, 3)
	slots[0], _ = tb.Add(items[0])
	if direct, left := tb.Publish(); !direct || left {
		t.Fatalf("one link: Publish = %v, %v, want direct", direct, left)
	}
	slots[1], _ = tb.Add(items[1])
	tb.Publish()
	if d := tb.Direct(); len(d) != 2 || d[0] != items[0] || d[1] != items[1] {
		t.Fatalf("two links: snapshot %v", d)
	}
	slots[2], _ = tb.Add(items[2])
	if direct, left := tb.Publish(); direct || !left {
		t.Fatalf("three links (max 2): Publish = %v, %v, want left", direct, left)
	}
	if d := tb.Direct(); d != nil {
		t.Fatalf("three links: snapshot %v, want none", d)
	}
	if direct, left := tb.Publish(); direct || left {
		t.Fatalf("Publish again outside direct mode = %v, %v", direct, left)
	}
	tb.Remove(slots[0], items[0])
	if direct, _ := tb.Publish(); !direct {
		t.Fatal("back to two links: not direct")
	}
	var seen []string
	tb.Each(func(l *item) { seen = append(seen, l.name) })
	if len(seen) != 2 || seen[0] != "b" || seen[1] != "c" {
		t.Fatalf("Each saw %v, want [b c]", seen)
	}
	tb.Reset()
	if tb.Live() != 0 || tb.Direct() != nil {
		t.Fatalf("after Reset: live %d, snapshot %v", tb.Live(), tb.Direct())
	}
}

func TestNeverDirectWithZeroMax(t *testing.T) {
	tb := New[item](0)
	tb.Add(&item{"a"})
	if direct, _ := tb.Publish(); direct || tb.Direct() != nil {
		t.Fatal("a table with directMax 0 published a snapshot")
	}
}
