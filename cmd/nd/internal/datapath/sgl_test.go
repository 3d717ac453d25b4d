package datapath

import (
	"testing"

	"github.com/godirect/nd"
)

type testRegion struct{ nd.MemoryRegion }

func TestSendSGL(t *testing.T) {
	buf := make([]byte, 10)
	mr := &testRegion{}
	dst := make([]nd.SGE, 4)
	for _, c := range []struct {
		size, n, inline int
		lens            []int
		inlined         bool
	}{
		{10, 3, 0, []int{3, 3, 4}, false},
		{10, 3, 10, []int{3, 3, 4}, true},
		{10, 3, 9, []int{3, 3, 4}, false},
		{2, 3, 0, []int{1, 1}, false},
		{0, 3, 0, nil, true},
	} {
		got := SendSGL(dst, buf[:c.size], mr, c.n, c.inline)
		if len(got) != len(c.lens) {
			t.Fatalf("size %d in %d entries: %d entries, want %d", c.size, c.n, len(got), len(c.lens))
		}
		total := 0
		for i, e := range got {
			if len(e.Buffer) != c.lens[i] {
				t.Errorf("size %d: entry %d of %d bytes, want %d", c.size, i, len(e.Buffer), c.lens[i])
			}
			if inl := e.Region == nil; inl != c.inlined {
				t.Errorf("size %d, inline limit %d: entry %d inline %v, want %v", c.size, c.inline, i, inl, c.inlined)
			}
			total += len(e.Buffer)
		}
		if total != c.size {
			t.Errorf("size %d: entries cover %d bytes", c.size, total)
		}
	}
}
