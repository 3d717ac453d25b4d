package ndtest

import (
	"strings"
	"testing"
)

// TestTable checks the suite's table: every group and case is named, no
// two cases of a group share a name, and every case has a function.
// internal/docscheck checks that every case's Rule cites a row of
// docs/semantics.md.
func TestTable(t *testing.T) {
	groups := map[string]bool{}
	for _, g := range suite {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group %q: empty or repeated name", g.Name)
		}
		groups[g.Name] = true
		if len(g.Cases) == 0 {
			t.Errorf("group %s has no case", g.Name)
		}
		names := map[string]bool{}
		for _, c := range g.Cases {
			path := g.Name + "/" + c.Name
			if c.Name == "" || strings.HasPrefix(c.Name, "/") || strings.HasSuffix(c.Name, "/") || names[c.Name] {
				t.Errorf("%s: empty, badly formed or repeated name", path)
			}
			names[c.Name] = true
			if c.Run == nil {
				t.Errorf("%s has no function", path)
			}
		}
	}
}
