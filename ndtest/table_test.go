package ndtest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// citation is how a case's Rule begins: a page of the SPI reference, a
// section of the SPI digest, or a page of this repository's docs, then
// ": " and the rule (the sources may be listed with commas).
var citation = regexp.MustCompile(`^(reference/IND[A-Za-z]+-[A-Za-z]+\.txt|reference/ND_RESULT\.txt|nd-spi\.md §[0-9.]+|docs/[a-z-]+\.md).*?: \S`)

// TestTable checks the suite's table: every group and case is named, no
// two cases of a group share a name, every case has a function and cites
// the rule it checks, and every page of docs/ a rule names exists.
func TestTable(t *testing.T) {
	groups := map[string]bool{}
	docPage := regexp.MustCompile(`docs/[a-z-]+\.md`)
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
				t.Errorf("%s: rule %q does not begin with a reference page, nd-spi.md section or docs page and the rule", path, c.Rule)
			}
			for _, page := range docPage.FindAllString(c.Rule, -1) {
				if _, err := os.Stat("../" + page); err != nil {
					t.Errorf("%s cites %s: %v", path, page, err)
				}
			}
		}
	}
}
