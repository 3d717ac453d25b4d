//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
	"github.com/godirect/nd/internal/ndexport"
	"github.com/godirect/nd/provider/ndspi"
)

// v1Entry is ndcatalog's ND v1 entry of a provider, without
// PFL_NETWORKDIRECT_PROVIDER (ND v1 providers need not set it).
func v1Entry(id ndabi.GUID, name, path string) ndcatalog.Entry {
	e := ndcatalog.Entries(id, name, path)[1]
	e.ProviderFlags = ndabi.PFLHidden
	return e
}

// TestDiscovery gives discovery catalogs of its own (Wine's catalog keeps
// no registration) naming godirect's DLL, a path with environment
// strings, DLLs that do not load or lack DllGetClassObject, and a class
// the DLL does not serve, and checks what each provider found says and
// which ND version is used.
func TestDiscovery(t *testing.T) {
	dll := testDLL(t)
	t.Setenv("GODIRECT_NDSPI_TEST_DIR", filepath.Dir(dll))
	viaEnv := `%GODIRECT_NDSPI_TEST_DIR%\` + filepath.Base(dll)
	unknown := ndabi.MustParseGUID("{0BADC1A5-0000-4000-8000-000000000001}")
	noExport := ndabi.MustParseGUID("{0BADC1A5-0000-4000-8000-000000000002}")
	missing := ndabi.MustParseGUID("{0BADC1A5-0000-4000-8000-000000000003}")
	type found struct {
		id      ndabi.GUID
		version int
		err     string // a part of the error, "" for none
	}
	for _, c := range []struct {
		name    string
		cfg     ndspi.Config
		want    []found
		openErr string // Addresses' error, "" for none
	}{
		{"v2 and v1 entries, a path with environment strings: ND v2",
			ndspi.Config{Catalog: ndcatalog.Entries(ndexport.TCPClassID, "godirect tcp", viaEnv)},
			[]found{{ndexport.TCPClassID, 2, ""}}, ""},
		{"the v1 entry first: still ND v2",
			ndspi.Config{Catalog: []ndcatalog.Entry{v1Entry(ndexport.TCPClassID, "godirect tcp", dll), ndcatalog.Entries(ndexport.TCPClassID, "godirect tcp", dll)[0]}},
			[]found{{ndexport.TCPClassID, 2, ""}}, ""},
		{"v2 and v1 entries, ND v1 asked for",
			ndspi.Config{Version: 1, Catalog: ndcatalog.Entries(ndexport.SHMClassID, "godirect shm", dll)},
			[]found{{ndexport.SHMClassID, 1, ""}}, ""},
		{"a v1 entry only",
			ndspi.Config{Catalog: []ndcatalog.Entry{v1Entry(ndexport.SHMClassID, "godirect shm", dll)}},
			[]found{{ndexport.SHMClassID, 1, ""}}, ""},
		{"a v2 entry only",
			ndspi.Config{Catalog: ndcatalog.Entries(ndexport.SHMClassID, "godirect shm", dll)[:1]},
			[]found{{ndexport.SHMClassID, 2, ""}}, ""},
		{"one class of two",
			ndspi.Config{Class: ndexport.SHMClassID, Catalog: append(ndcatalog.Entries(ndexport.TCPClassID, "godirect tcp", dll), ndcatalog.Entries(ndexport.SHMClassID, "godirect shm", dll)...)},
			[]found{{ndexport.SHMClassID, 2, ""}}, ""},
		{"failures beside a provider that loads",
			ndspi.Config{Catalog: append(append(append(
				ndcatalog.Entries(missing, "missing", `%GODIRECT_NDSPI_TEST_DIR%\no-such-provider.dll`),
				ndcatalog.Entries(noExport, "no export", `%SystemRoot%\system32\kernel32.dll`)...),
				ndcatalog.Entries(unknown, "not its class", dll)...),
				ndcatalog.Entries(ndexport.TCPClassID, "godirect tcp", dll)...)},
			[]found{{missing, 0, "LoadLibraryEx"}, {noExport, 0, "does not export DllGetClassObject"},
				{unknown, 0, "CLASS_E_CLASSNOTAVAILABLE"}, {ndexport.TCPClassID, 2, ""}}, ""},
		{"only failures",
			ndspi.Config{Catalog: ndcatalog.Entries(missing, "missing", `C:\no-such-provider.dll`)},
			[]found{{missing, 0, "LoadLibraryEx"}}, "no ND provider could be loaded"},
		{"no ND provider in the catalog",
			ndspi.Config{Catalog: []ndcatalog.Entry{}},
			nil, "no ND provider is installed"},
		{"a DLL by path and class: ND v2 first",
			ndspi.Config{DLL: viaEnv, Class: ndexport.TCPClassID},
			[]found{{ndexport.TCPClassID, 2, ""}}, ""},
		{"a DLL by path and class, ND v1",
			ndspi.Config{DLL: dll, Class: ndexport.TCPClassID, Version: 1},
			[]found{{ndexport.TCPClassID, 1, ""}}, ""},
		{"a DLL by path, a class it does not serve",
			ndspi.Config{DLL: dll, Class: unknown},
			[]found{{unknown, 0, "CLASS_E_CLASSNOTAVAILABLE"}}, "no ND provider could be loaded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ndspi.New(c.cfg)
			got, err := p.Installed()
			if err != nil {
				t.Fatalf("Installed: %v", err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("Installed found %d providers (%+v), want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				g := got[i]
				switch {
				case g.ID != w.id || g.Version != w.version:
					t.Errorf("provider %d: %s version %d (%v), want %s version %d", i, g.ID, g.Version, g.Err, w.id, w.version)
				case w.err == "" && (g.Err != nil || len(g.Addresses) == 0):
					t.Errorf("provider %d (%s): error %v, addresses %v", i, g.Path, g.Err, g.Addresses)
				case w.err != "" && (g.Err == nil || !strings.Contains(g.Err.Error(), w.err)):
					t.Errorf("provider %d (%s): error %v, want one naming %q", i, g.Path, g.Err, w.err)
				case strings.Contains(g.Path, "%GODIRECT"):
					t.Errorf("provider %d: path %q not expanded", i, g.Path)
				}
			}
			addrs, err := p.Addresses()
			if c.openErr != "" {
				if !errors.Is(err, nd.ErrNotSupported) || !strings.Contains(err.Error(), c.openErr) {
					t.Fatalf("Addresses = %v, %v; want ND_NOT_SUPPORTED naming %q", addrs, err, c.openErr)
				}
				return
			}
			if err != nil || len(addrs) == 0 {
				t.Fatalf("Addresses = %v, %v", addrs, err)
			}
			a, err := p.OpenAdapter(addrs[0])
			if err != nil {
				t.Fatalf("OpenAdapter(%v): %v", addrs[0], err)
			}
			defer a.Close()
			info, _ := a.Query()
			// ND v1 has no shared receive queues; godirect's ND v2 has.
			if v := c.want[len(c.want)-1].version; (info.MaxSharedReceiveQueueDepth > 0) != (v == 2) {
				t.Fatalf("an adapter of ND v%d reports MaxSharedReceiveQueueDepth %d", v, info.MaxSharedReceiveQueueDepth)
			}
			if _, err := p.OpenAdapter(netip192()); !errors.Is(err, nd.ErrInvalidAddress) {
				t.Fatalf("OpenAdapter of an address no provider serves = %v, want ND_INVALID_ADDRESS", err)
			}
		})
	}
}

// TestDiscoveryWineCatalog reads the system's catalog: under Wine it holds
// no ND provider (Wine keeps no registration), which the provider says.
func TestDiscoveryWineCatalog(t *testing.T) {
	if !ndtestUnderWine() {
		t.Skip("on Windows the catalog may hold ND providers: nothing to expect of it")
	}
	_, err := ndspi.New(ndspi.Config{}).Addresses()
	if !errors.Is(err, nd.ErrNotSupported) || !strings.Contains(err.Error(), "no ND provider is installed") {
		t.Fatalf("Addresses over Wine's catalog = %v; want ND_NOT_SUPPORTED, no ND provider installed", err)
	}
}
