package ndtest

import (
	"regexp"
	"strings"
	"testing"
)

// citation is the form of a case's Rule: a row of docs/semantics.md, then
// ": " and the rule (internal/docscheck checks that the row exists).
var citation = regexp.MustCompile(`^docs/semantics\.md "[^"]+": \S`)

// TestTable checks the suite's table: every group and case is named, no
// two cases of a group share a name, and every case has a function and
// cites the rule it checks.
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
			if !citation.MatchString(c.Rule) {
				t.Errorf("%s: rule %q does not begin with a row of docs/semantics.md and the rule", path, c.Rule)
			}
		}
	}
}
