package iwarp

import "testing"

func TestPrefix(t *testing.T) {
	pd := AppendPrefix(nil, PrefixVerbs, 7)
	pd = append(pd, "hello"...)
	if p, v, u := SplitPrefix(pd); p != 7 || v != PrefixVerbs || string(u) != "hello" {
		t.Errorf("SplitPrefix(%q) = %d, %d, %q; want 7, %d, hello", pd, p, v, u, PrefixVerbs)
	}
	if p, v, u := SplitPrefix(AppendPrefix(nil, PrefixTCP, 0)); p != 0 || v != PrefixTCP || len(u) != 0 {
		t.Errorf("a bare provider/tcp prefix: %d, %d, %q", p, v, u)
	}
	for _, pd := range []string{"", "gd", "gd\x03\x01rest", "xd\x01\x01", "abcdef"} {
		if p, v, u := SplitPrefix([]byte(pd)); p != -1 || v != 0 || string(u) != pd {
			t.Errorf("SplitPrefix(%q) = %d, %d, %q; want no prefix", pd, p, v, u)
		}
	}
}
