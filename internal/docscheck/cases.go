package docscheck

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// citationRE finds a conformance case named in backticks or quotes: the
// case's path from one of ndtest.Run's groups, after an optional
// "TestConformance/" (or "TestConformance$/") and a lower-case device or
// provider name ("siw0/"), with an optional "/*" for every case below.
// groupsPattern stands for the groups' names.
const citationPattern = "[`'](?:TestConformance\\$?/(?:[a-z][a-z0-9]*/)?)?((?:groupsPattern)(?:/[A-Za-z0-9_]+)+)(/\\*)?[`']"

// citation is a conformance case named in the text.
type citation struct {
	file string
	line int
	path string // the case's path from its group
}

// CaseNames checks that every conformance case that README.md and
// docs/*.md name (see citationPattern) is a subtest of ndtest.Run or a
// group of them.
func CaseNames(root fs.FS) []error {
	tree, err := caseTree(root)
	if err != nil {
		return []error{err}
	}
	cites, err := citations(root, tree)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, c := range cites {
		if !caseExists(tree, strings.Split(c.path, "/")) {
			errs = append(errs, fmt.Errorf("%s:%d names the conformance case %s, which ndtest does not run", c.file, c.line, c.path))
		}
	}
	return errs
}

// citations returns the conformance cases README.md and docs/*.md name,
// given ndtest's groups (tree's top level).
func citations(root fs.FS, tree []*subtest) ([]citation, error) {
	var groups []string
	for _, st := range tree {
		groups = append(groups, regexp.QuoteMeta(st.name))
	}
	re := regexp.MustCompile(strings.Replace(citationPattern, "groupsPattern", strings.Join(groups, "|"), 1))
	docs, err := fs.Glob(root, "docs/*.md")
	if err != nil {
		return nil, err
	}
	var cites []citation
	for _, name := range append([]string{"README.md"}, docs...) {
		text, err := readFile(root, name)
		if err != nil {
			return nil, err
		}
		for i, line := range strings.Split(text, "\n") {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				cites = append(cites, citation{file: path.Clean(name), line: i + 1, path: m[1]})
			}
		}
	}
	return cites, nil
}
