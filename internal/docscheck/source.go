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

// parseDir parses the non-test Go files of dir in root.
func parseDir(root fs.FS, dir string) ([]*ast.File, error) {
	entries, err := fs.ReadDir(root, dir)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		f, err := parser.ParseFile(fset, path.Join(dir, name), src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// ndCommands returns the names in cmd/nd's commands list, the commands its
// dispatcher runs: the first field of each element of "var commands".
func ndCommands(root fs.FS) ([]string, error) {
	files, err := parseDir(root, "cmd/nd")
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
// t.Run calls in Run's body, in the bodies of their functions and in the
// package's functions those call, nested as they run.
func caseTree(root fs.FS) ([]*subtest, error) {
	files, err := parseDir(root, "ndtest")
	if err != nil {
		return nil, err
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	run := funcs["Run"]
	if run == nil {
		return nil, fmt.Errorf("ndtest has no func Run")
	}
	w := &treeWalker{funcs: funcs, inProgress: map[string]bool{}}
	return w.subtests(run.Body), nil
}

// treeWalker finds the subtests of function bodies.
type treeWalker struct {
	funcs      map[string]*ast.FuncDecl
	inProgress map[string]bool // functions being walked (recursion stops there)
}

// subtests returns the subtests that running node runs: a t.Run becomes a
// subtest whose children are its function's; a call of a package function
// adds that function's subtests where it stands.
func (w *treeWalker) subtests(node ast.Node) []*subtest {
	var out []*subtest
	ast.Inspect(node, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && len(call.Args) == 2 {
			st := &subtest{name: nameOf(call.Args[0])}
			st.children = w.subtests(call.Args[1])
			out = append(out, st)
			return false
		}
		if id, ok := call.Fun.(*ast.Ident); ok {
			if fd := w.funcs[id.Name]; fd != nil && !w.inProgress[id.Name] {
				w.inProgress[id.Name] = true
				out = append(out, w.subtests(fd.Body)...)
				delete(w.inProgress, id.Name)
			}
		}
		return true
	})
	return out
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

// caseExists reports whether the subtest path (names split on "/", as go
// test splits them) is a subtest of tree or a group of subtests: a prefix
// of a path of tree's, where "*" in tree matches any name.
func caseExists(tree []*subtest, segs []string) bool {
	if len(segs) == 0 {
		return true
	}
	for _, st := range tree {
		own := strings.Split(st.name, "/")
		n := min(len(own), len(segs))
		match := true
		for i := range n {
			if own[i] != "*" && own[i] != segs[i] {
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
