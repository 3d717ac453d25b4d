package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// parseDir parses the non-test Go files of dir in root; the file set
// gives their positions.
func parseDir(root fs.FS, dir string) ([]*ast.File, *token.FileSet, error) {
	entries, err := fs.ReadDir(root, dir)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(root, path.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(fset, path.Join(dir, name), src, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return files, fset, nil
}

// ndCommands returns the names in cmd/nd's commands list, the commands its
// dispatcher runs: the first field of each element of "var commands".
func ndCommands(root fs.FS) ([]string, error) {
	files, _, err := parseDir(root, "cmd/nd")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Names) != 1 || vs.Names[0].Name != "commands" || len(vs.Values) != 1 {
					continue
				}
				list, ok := vs.Values[0].(*ast.CompositeLit)
				if !ok {
					return nil, fmt.Errorf("cmd/nd: commands is not a composite literal")
				}
				var names []string
				for _, elt := range list.Elts {
					c, ok := elt.(*ast.CompositeLit)
					if !ok || len(c.Elts) == 0 {
						return nil, fmt.Errorf("cmd/nd: an element of commands is not a literal")
					}
					name, err := stringLit(c.Elts[0])
					if err != nil {
						return nil, fmt.Errorf("cmd/nd: a command's name: %w", err)
					}
					names = append(names, name)
				}
				return names, nil
			}
		}
	}
	return nil, fmt.Errorf("cmd/nd declares no var commands")
}

// stringLit returns the value of a string literal.
func stringLit(e ast.Expr) (string, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("%T is not a string literal", e)
	}
	return strconv.Unquote(lit.Value)
}

// subtest is a t.Run of ndtest: its name (see nameOf)
// and the subtests it runs.
type subtest struct {
	name     string
	children []*subtest
}

// caseTree returns the subtests ndtest.Run runs, from ndtest's source: the
// entries of its table (a testCase or group literal is a subtest named by
// its first field, whose children are those its other fields run), the
// t.Run calls, and the package's functions and variables those name,
// nested as they run.
func caseTree(root fs.FS) ([]*subtest, error) {
	files, _, err := parseDir(root, "ndtest")
	if err != nil {
		return nil, err
	}
	w := &treeWalker{funcs: map[string]*ast.FuncDecl{}, vars: map[string]ast.Expr{}, inProgress: map[string]bool{}}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Body != nil {
					w.funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							w.vars[name.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	run := w.funcs["Run"]
	if run == nil {
		return nil, fmt.Errorf("ndtest has no func Run")
	}
	return w.subtests(run.Body), nil
}

// tableTypes are the types of ndtest's table entries: a literal of one is
// a subtest whose name is its first field (or its Name field).
var tableTypes = map[string]bool{"testCase": true, "group": true}

// typeElided gives the elements of lit that elide their type, when lit is
// a slice of table entries ([]testCase{{...}}), that type, so that they
// read as the entries they are.
func typeElided(lit *ast.CompositeLit) {
	arr, ok := lit.Type.(*ast.ArrayType)
	if !ok {
		return
	}
	id, ok := arr.Elt.(*ast.Ident)
	if !ok || !tableTypes[id.Name] {
		return
	}
	for _, elt := range lit.Elts {
		if e, ok := elt.(*ast.CompositeLit); ok && e.Type == nil {
			e.Type = id
		}
	}
}

// treeWalker finds the subtests of function bodies.
type treeWalker struct {
	funcs      map[string]*ast.FuncDecl
	vars       map[string]ast.Expr // package variables' values
	inProgress map[string]bool     // functions and variables being walked (recursion stops there)
}

// subtests returns the subtests that running node runs: a t.Run or a table
// entry becomes a subtest whose children are what its function runs; a
// package function or variable named in node adds its subtests where it
// stands. A t.Run of an entry's Name (c.Name) is the table's runner and
// adds nothing: its subtests are the entries themselves.
func (w *treeWalker) subtests(node ast.Node) []*subtest {
	var out []*subtest
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Run" || len(n.Args) != 2 {
				return true
			}
			if name, ok := n.Args[0].(*ast.SelectorExpr); ok && name.Sel.Name == "Name" {
				return false
			}
			st := &subtest{name: nameOf(n.Args[0])}
			st.children = w.subtests(n.Args[1])
			out = append(out, st)
			return false
		case *ast.CompositeLit:
			if st := w.entry(n); st != nil {
				out = append(out, st)
				return false
			}
			typeElided(n)
			return true
		case *ast.SelectorExpr:
			out = append(out, w.subtests(n.X)...) // not the field or method name
			return false
		case *ast.KeyValueExpr:
			if _, ok := n.Key.(*ast.Ident); ok {
				out = append(out, w.subtests(n.Value)...) // not the field name
				return false
			}
			return true
		case *ast.Ident:
			var body ast.Node
			if fd := w.funcs[n.Name]; fd != nil {
				body = fd.Body
			} else if v := w.vars[n.Name]; v != nil {
				body = v
			}
			if body != nil && !w.inProgress[n.Name] {
				w.inProgress[n.Name] = true
				out = append(out, w.subtests(body)...)
				delete(w.inProgress, n.Name)
			}
		}
		return true
	})
	return out
}

// entry returns the subtest that lit, a table entry, stands for, or nil
// when lit is no table entry.
func (w *treeWalker) entry(lit *ast.CompositeLit) *subtest {
	id, ok := lit.Type.(*ast.Ident)
	if !ok || !tableTypes[id.Name] || len(lit.Elts) == 0 {
		return nil
	}
	st := &subtest{name: "*"}
	for i, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Name" {
				st.name = nameOf(kv.Value)
				continue
			}
			elt = kv.Value
		} else if i == 0 {
			st.name = nameOf(elt)
			continue
		}
		st.children = append(st.children, w.subtests(elt)...)
	}
	return st
}

// nameOf returns a subtest's name as far as the source tells it: string
// literals and their concatenations, with "*" for every other part.
func nameOf(e ast.Expr) string {
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return nameOf(b.X) + nameOf(b.Y)
	}
	if s, err := stringLit(e); err == nil {
		return s
	}
	return "*"
}

// segmentMatches reports whether a name segment of the source (where "*"
// stands for any text, as nameOf writes it) matches seg.
func segmentMatches(own, seg string) bool {
	if !strings.Contains(own, "*") {
		return own == seg
	}
	parts := strings.Split(own, "*")
	if !strings.HasPrefix(seg, parts[0]) {
		return false
	}
	seg = seg[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(seg, part)
		if i < 0 {
			return false
		}
		seg = seg[i+len(part):]
	}
	return strings.HasSuffix(seg, parts[len(parts)-1])
}

// caseExists reports whether the subtest path (names split on "/", as go
// test splits them) is a subtest of tree or a group of subtests: a prefix
// of a path of tree's, where "*" in tree matches any text.
func caseExists(tree []*subtest, segs []string) bool {
	if len(segs) == 0 {
		return true
	}
	for _, st := range tree {
		own := strings.Split(st.name, "/")
		n := min(len(own), len(segs))
		match := true
		for i := range n {
			if !segmentMatches(own[i], segs[i]) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if len(segs) <= len(own) || caseExists(st.children, segs[len(own):]) {
			return true
		}
	}
	return false
}
