package nd_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryExampleRuns: go test compiles every Example but runs only those
// with an output comment; an example without one would rot unseen. Every
// Example of the module's packages must have one (an unordered or empty
// output counts).
func TestEveryExampleRuns(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, ex := range doc.Examples(f) {
			seen++
			if ex.Output == "" && !ex.EmptyOutput {
				t.Errorf("%s: Example%s has no output comment: go test compiles it but never runs it", path, ex.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 6 {
		t.Errorf("found %d examples, want at least 6 (nd, provider/tcp, provider/shm, ndnet)", seen)
	}
}

// contractPackages are the packages whose documentation is held to the
// contract rules of TestDocCommentsStateContracts.
var contractPackages = []string{".", "ndnet"}

// TestDocCommentsStateContracts holds package nd's and ndnet's
// documentation to what go doc must show a user (the presence of a
// comment on every exported name of the module is
// TestEveryExportedNameHasADocComment's):
//
//   - a top-level declaration's comment starts with its name (or "A",
//     "An" or "The" and its name), as Go's own do;
//   - every method of an exported interface, and every exported field of
//     an exported struct, has a comment (a method may share the one of the
//     method before it when that comment names it);
//   - a function or method that takes a context.Context says what ctx
//     does ("ctx" or "context" in its comment);
//   - a function or method that returns an error says which ("Err", an
//     error type, "error", "fail" or "nil");
//   - an interface, and a struct type with methods, says whether it is
//     safe for concurrent use.
func TestDocCommentsStateContracts(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range contractPackages {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		c := contractCheck{t: t, fset: fset, methods: map[string]bool{}}
		for _, f := range files {
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.IsExported() {
					c.methods[receiverName(fd.Recv)] = true
				}
			}
		}
		for _, f := range files {
			c.file(f)
		}
	}
}

type contractCheck struct {
	t       *testing.T
	fset    *token.FileSet
	methods map[string]bool // exported types with exported methods
}

func (c *contractCheck) errorf(pos token.Pos, format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: "+format, append([]any{c.fset.Position(pos)}, args...)...)
}

func (c *contractCheck) file(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedReceiver(d.Recv)) {
				continue
			}
			c.startsWithName(d.Pos(), d.Name.Name, d.Doc)
			c.signature(d.Pos(), d.Name.Name, d.Type, d.Doc)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					cg := s.Doc
					if cg == nil && len(d.Specs) == 1 {
						cg = d.Doc
					}
					c.startsWithName(s.Pos(), s.Name.Name, cg)
					c.typeBody(s, cg)
				case *ast.ValueSpec:
					if d.Doc != nil && len(d.Specs) > 1 {
						continue // a group's comment covers its specs
					}
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc != nil {
							c.startsWithName(n.Pos(), n.Name, d.Doc)
						}
					}
				}
			}
		}
	}
}

// startsWithName checks that cg starts with name, after an optional
// article.
func (c *contractCheck) startsWithName(pos token.Pos, name string, cg *ast.CommentGroup) {
	c.t.Helper()
	if cg == nil {
		return // TestEveryExportedNameHasADocComment reports it
	}
	words := strings.Fields(cg.Text())
	if len(words) > 1 && slices.Contains([]string{"A", "An", "The"}, words[0]) {
		words = words[1:]
	}
	if len(words) == 0 || strings.TrimSuffix(strings.TrimRight(words[0], ".,:;"), "'s") != name {
		c.errorf(pos, "the comment of %s does not start with its name: %q", name, firstLine(cg))
	}
}

// signature checks what a comment must say about ctx and the error.
func (c *contractCheck) signature(pos token.Pos, name string, ft *ast.FuncType, cg *ast.CommentGroup) {
	c.t.Helper()
	if cg == nil {
		return
	}
	text := cg.Text()
	for _, p := range ft.Params.List {
		if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" && !strings.Contains(text, "ctx") && !strings.Contains(text, "context") {
			c.errorf(pos, "%s takes a context.Context and its comment does not say what ctx does", name)
		}
	}
	if ft.Results == nil {
		return
	}
	for _, r := range ft.Results.List {
		if id, ok := r.Type.(*ast.Ident); ok && id.Name == "error" && !mentionsError(text) {
			c.errorf(pos, "%s returns an error and its comment does not say which", name)
		}
	}
}

// mentionsError reports whether a comment says something of the errors a
// call returns.
func mentionsError(text string) bool {
	for _, w := range []string{"Err", "error", "Error", "fail", "nil", "refuse", "Status"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// typeBody checks an interface's methods, a struct's exported fields, and
// the type's word on concurrency.
func (c *contractCheck) typeBody(s *ast.TypeSpec, cg *ast.CommentGroup) {
	c.t.Helper()
	concurrency := func() {
		text := ""
		if cg != nil {
			text = cg.Text()
		}
		if !strings.Contains(text, "concurrent") && !strings.Contains(text, "goroutine") {
			c.errorf(s.Pos(), "the comment of %s does not say whether it is safe for concurrent use", s.Name.Name)
		}
	}
	switch tt := s.Type.(type) {
	case *ast.InterfaceType:
		concurrency()
		var prev *ast.CommentGroup
		for _, m := range tt.Methods.List {
			ft, ok := m.Type.(*ast.FuncType)
			if !ok || len(m.Names) == 0 {
				continue // an embedded interface
			}
			name := m.Names[0].Name
			doc := m.Doc
			if doc == nil && prev != nil && strings.Contains(prev.Text(), name) {
				doc = prev
			}
			if doc == nil {
				c.errorf(m.Pos(), "%s.%s has no comment", s.Name.Name, name)
				continue
			}
			if m.Doc != nil {
				c.startsWithName(m.Pos(), name, m.Doc)
			}
			c.signature(m.Pos(), s.Name.Name+"."+name, ft, doc)
			prev = doc
		}
	case *ast.StructType:
		if c.methods[s.Name.Name] {
			concurrency()
		}
		for _, fld := range tt.Fields.List {
			for _, n := range fld.Names {
				if n.IsExported() && fld.Doc == nil && fld.Comment == nil {
					c.errorf(n.Pos(), "field %s.%s has no comment", s.Name.Name, n.Name)
				}
			}
		}
	}
}

// receiverName is the type name of a method's receiver.
func receiverName(recv *ast.FieldList) string {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func firstLine(cg *ast.CommentGroup) string {
	line, _, _ := strings.Cut(cg.Text(), "\n")
	return line
}
