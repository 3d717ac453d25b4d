package docscheck

import (
	"errors"
	"fmt"
	"go/ast"
	"io/fs"
	"regexp"
	"strings"
)

// semanticsPage is the page the rules cite.
const semanticsPage = "docs/semantics.md"

// ruleRE is the form of a case's Rule: the page, the row's name in double
// quotes (the row's first cell without its backticks), ": " and the rule.
var ruleRE = regexp.MustCompile(`^docs/semantics\.md "([^"]+)": \S`)

// caseRule is the Rule of one entry of ndtest's table.
type caseRule struct {
	pos  string // file:line of the Rule in ndtest's source
	name string // the case's name, as nameOf reads it
	rule string
}

// Rules checks that the rules of ndtest's cases cite what the repository
// holds: the Rule of every case in ndtest's table is a string literal that
// begins with the citation of a row of docs/semantics.md (ruleRE), the
// page that states what godirect does, and the page has exactly one row of
// that name (semanticsRows).
func Rules(root fs.FS) []error {
	rules, err := caseRules(root)
	if err != nil {
		return []error{err}
	}
	rows, err := semanticsRows(root)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, r := range rules {
		m := ruleRE.FindStringSubmatch(r.rule)
		switch {
		case m == nil:
			errs = append(errs, fmt.Errorf("%s: the rule of the case %s does not begin with a citation of %s (%s \"<row>\": <the rule>): %q", r.pos, r.name, semanticsPage, semanticsPage, r.rule))
		case rows[m[1]] == 0:
			errs = append(errs, fmt.Errorf("%s: the rule of the case %s cites the row %q, which %s does not have", r.pos, r.name, m[1], semanticsPage))
		case rows[m[1]] > 1:
			errs = append(errs, fmt.Errorf("%s: the rule of the case %s cites the row %q, which names %d rows of %s", r.pos, r.name, m[1], rows[m[1]], semanticsPage))
		}
	}
	return errs
}

// caseRules returns the Rule of every testCase literal of ndtest's source
// (its second field, or its Rule field), a literal elided in a
// []testCase included.
func caseRules(root fs.FS) ([]caseRule, error) {
	files, fset, err := parseDir(root, "ndtest")
	if err != nil {
		return nil, err
	}
	var rules []caseRule
	var errs []error
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			typeElided(lit)
			if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "testCase" {
				return true
			}
			name, rule := "*", ast.Expr(nil)
			for i, elt := range lit.Elts {
				key := ""
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok {
						key = id.Name
					}
					elt = kv.Value
				}
				switch {
				case key == "Name" || key == "" && i == 0:
					name = nameOf(elt)
				case key == "Rule" || key == "" && i == 1:
					rule = elt
				}
			}
			if rule == nil {
				errs = append(errs, fmt.Errorf("%s: the case %s has no rule", fset.Position(lit.Pos()), name))
				return true
			}
			pos := fset.Position(rule.Pos())
			text, err := stringLit(rule)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: the rule of the case %s: %w", pos, name, err))
				return true
			}
			rules = append(rules, caseRule{pos: fmt.Sprintf("%s:%d", pos.Filename, pos.Line), name: name, rule: text})
			return true
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

// semanticsRows counts the rows of docs/semantics.md's tables by name: the
// first cell of every table line but the header and its rule, without its
// backticks ("`GetResults`" is the row "GetResults").
func semanticsRows(root fs.FS) (map[string]int, error) {
	text, err := readFile(root, semanticsPage)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(text, "\n")
	rows := map[string]int{}
	for i, l := range lines {
		header := i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---")
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || header {
			continue
		}
		rows[strings.ReplaceAll(tableCells(l)[0], "`", "")]++
	}
	return rows, nil
}
