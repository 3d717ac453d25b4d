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
// groups of cases and their cases in the docs.
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
