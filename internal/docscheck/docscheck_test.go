package docscheck

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// repo is the repository's tree.
var repo = os.DirFS("../..")

// TestRepository runs every check on the repository.
func TestRepository(t *testing.T) {
	for name, check := range map[string]func(fs.FS) []error{
		"Providers": Providers,
		"Commands":  Commands,
		"Layout":    Layout,
		"CaseNames": CaseNames,
		"Rules":     Rules,
	} {
		t.Run(name, func(t *testing.T) {
			for _, err := range check(repo) {
				t.Error(err)
			}
		})
	}
}

// TestFindsEnough guards the checks against finding nothing to check: the
// repository's README names four providers, seven commands, a dozen
// groups of cases and their cases in the docs; ndtest's table gives some
// two hundred rules, and docs/semantics.md has the rows they cite.
func TestFindsEnough(t *testing.T) {
	tree, err := caseTree(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) < 12 {
		t.Errorf("ndtest.Run has %d groups, want at least 12", len(tree))
	}
	cites, err := citations(repo, tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(cites) < 20 {
		t.Errorf("the docs name %d conformance cases, want at least 20: %v", len(cites), cites)
	}
	cmds, err := ndCommands(repo)
	if err != nil || len(cmds) < 7 {
		t.Errorf("cmd/nd's commands: %v, %v", cmds, err)
	}
	for _, path := range []string{"CQ/Notify/ContextCanceled", "Connection/ConnectCanceled", "Memory/WindowReuse", "Lifecycle/Property", "Lifecycle/InFlight/PassiveListenerThenWindow", "CreateEndpoint/BeyondMax/InboundSGE"} {
		if !caseExists(tree, strings.Split(path, "/")) {
			t.Errorf("%s is not found in ndtest", path)
		}
	}
	for _, path := range []string{"CQ/NotifyCancel", "CQ/Notify/Context", "Nosuch", "Memory/WindowReuse/Deeper", "Lifecycle/InFlight/PassiveListener", "CreateEndpoint/BeyondMax/InboundSGE/Deeper"} {
		if caseExists(tree, strings.Split(path, "/")) {
			t.Errorf("%s is found in ndtest", path)
		}
	}
	rules, err := caseRules(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 150 {
		t.Errorf("ndtest's table gives %d rules, want at least 150", len(rules))
	}
	names := map[string]bool{}
	for _, r := range rules {
		names[r.name] = true
	}
	// Entries of a table ([]testCase{{...}}) and cases made in a loop
	// (testCase{...}).
	for _, name := range []string{"GetConnectionRequest/FIFO", "BeyondMax/*", "AfterClose/*", "Shape"} {
		if !names[name] {
			t.Errorf("no rule of the case %s is found in ndtest", name)
		}
	}
	rows, err := semanticsRows(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 100 {
		t.Errorf("docs/semantics.md has %d rows, want at least 100", len(rows))
	}
	for _, row := range []string{"queue depth", "GetResults", "Notify (ND_SRQ_LIMIT)", "Disconnect, Close, Flush"} {
		if rows[row] != 1 {
			t.Errorf("docs/semantics.md has %d rows %q, want 1", rows[row], row)
		}
	}
}

// copyRepo returns a copy of the files the checks read (README.md,
// docs/*.md, cmd/nd's and ndtest's Go files) and an empty file for every
// other file of the repository, so that its directories are the same.
func copyRepo(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(repo, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		f := &fstest.MapFile{}
		if p == "README.md" || strings.HasPrefix(p, "docs/") || strings.HasPrefix(p, "cmd/nd/") || strings.HasPrefix(p, "ndtest/") {
			if f.Data, err = fs.ReadFile(repo, p); err != nil {
				return err
			}
		}
		m[p] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// edit replaces old with new in the file name of m, which must hold old.
func edit(t *testing.T, m fstest.MapFS, name, old, new string) {
	t.Helper()
	s := string(m[name].Data)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	m[name] = &fstest.MapFile{Data: []byte(strings.Replace(s, old, new, 1))}
}

// TestChecksFail breaks a copy of the repository in each way a check must
// catch and checks that it reports exactly that.
func TestChecksFail(t *testing.T) {
	for _, tt := range []struct {
		name  string
		check func(fs.FS) []error
		brk   func(t *testing.T, m fstest.MapFS)
		want  string
	}{
		{"provider planned", Providers, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "README.md", "| passes the conformance suite on siw and rxe", "| planned; passes the conformance suite on siw and rxe")
		}, `calls the provider "verbs" planned`},
		{"provider unlisted", Providers, func(t *testing.T, m fstest.MapFS) {
			m["provider/rxm/provider.go"] = &fstest.MapFile{}
		}, "provider/rxm is not in README.md's provider table"},
		{"provider missing", Providers, func(t *testing.T, m fstest.MapFS) {
			delete(m, "provider/loop/provider.go")
			for p := range m {
				if strings.HasPrefix(p, "provider/loop/") {
					delete(m, p)
				}
			}
		}, `lists the provider "loop", but provider/loop holds no Go package`},
		{"command unlisted", Commands, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "README.md", "| `nd rping` |", "| rping |")
		}, `"nd rping" is not in README.md's command table`},
		{"command unknown", Commands, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "cmd/nd/main.go", `{"rping", `, `{"rpong", `)
		}, `lists "nd rping", which cmd/nd does not know`},
		{"layout missing directory", Layout, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "README.md", "cmd/ndnet-perf ", "cmd/ndx                   another\ncmd/ndnet-perf ")
		}, "lists cmd/ndx, which is not a directory"},
		{"layout unlisted package", Layout, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "README.md", "ndtest/remote ", "ndtest/remotes")
		}, "the package directory ndtest/remote is not in README.md's layout"},
		{"case name", CaseNames, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "docs/semantics.md", "`CQ/Notify/ContextCanceled`", "`CQ/NotifyCancel`")
		}, "docs/semantics.md:19 names the conformance case CQ/NotifyCancel, which ndtest does not run"},
		{"case renamed in ndtest", CaseNames, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "ndtest/memory.go", `"WindowReuse"`, `"WindowReused"`)
		}, "names the conformance case Memory/WindowReuse, which ndtest does not run"},
		{"rule cites a missing row", Rules, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "ndtest/connection_listen.go", `docs/semantics.md "connection requests": requests are`, `docs/semantics.md "request order": requests are`)
		}, `the rule of the case GetConnectionRequest/FIFO cites the row "request order", which docs/semantics.md does not have`},
		{"rule cites nd-spi.md", Rules, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "ndtest/connection_listen.go", "`docs/semantics.md \"connection requests\": requests are handed out in the order they arrived`", `"nd-spi.md §7.7 INDListen::GetConnectionRequest: requests are handed out in the order they arrived"`)
		}, "ndtest/connection_listen.go:16: the rule of the case GetConnectionRequest/FIFO does not begin with a citation of docs/semantics.md"},
		{"cited row renamed", Rules, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "docs/semantics.md", "| connection requests |", "| request order |")
		}, `the rule of the case Backlog/SecondConnectRefused cites the row "connection requests", which docs/semantics.md does not have`},
		{"cited row repeated", Rules, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "docs/semantics.md", "| `Flush` of the shared queue |", "| `Flush` |")
		}, `the rule of the case Flush/TwoReceives cites the row "Flush", which names 2 rows of docs/semantics.md`},
		{"rule not a literal", Rules, func(t *testing.T, m fstest.MapFS) {
			edit(t, m, "ndtest/errors.go", `{"Shape", `, `{"Shape", "docs/semantics.md " + `)
		}, "the rule of the case Shape: *ast.BinaryExpr is not a string literal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := copyRepo(t)
			if errs := tt.check(m); len(errs) != 0 {
				t.Fatalf("the unbroken copy fails: %v", errs)
			}
			tt.brk(t, m)
			errs := tt.check(m)
			found := false
			for _, err := range errs {
				found = found || strings.Contains(err.Error(), tt.want)
			}
			if !found {
				t.Errorf("the check reports %v, want an error with %q", errs, tt.want)
			}
		})
	}
}
