package ndspi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
)

var (
	idA = ndabi.MustParseGUID("{11111111-2222-3333-4444-555555555555}")
	idB = ndabi.MustParseGUID("{66666666-7777-8888-9999-AAAAAAAAAAAA}")
	idC = ndabi.MustParseGUID("{0C0C0C0C-0000-0000-0000-00000000000C}")
)

func env(name string) (string, bool) {
	v, ok := map[string]string{"SYSTEMROOT": `C:\Windows`, "ND": `D:\nd`}[strings.ToUpper(name)]
	return v, ok
}

// show is a compact form of candidates: id's first group, name, path and
// versions.
func show(cs []candidate) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%08X %s %s %v", c.ID.Data1, c.Name, c.Path, c.Versions))
	}
	return strings.Join(parts, "; ")
}

func TestCandidates(t *testing.T) {
	both := ndcatalog.Entries(idA, "A", `%SystemRoot%\System32\a.dll`)
	v1only := ndcatalog.Entries(idB, "B", `%ND%\b.dll`)[1]
	v1only.ProviderFlags = ndabi.PFLHidden // ND v1 providers need not say PFL_NETWORKDIRECT_PROVIDER
	v2only := ndcatalog.Entries(idC, "C", `%UNSET%\c.dll`)[0]
	tcp := ndcatalog.Entry{ProviderID: ndabi.MustParseGUID("{E70F1AA0-AB8B-11CF-8CA3-00805F48A192}"), ServiceFlags: 0x20066, Version: 2, AddressFamily: 2, SocketType: 1, Protocol: 6, Name: "MSAFD Tcpip [TCP/IP]"}
	catalog := []ndcatalog.Entry{tcp, v1only, both[1], both[0], v2only}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"every ND provider, catalog order, v2 first", Config{}, `66666666 B D:\nd\b.dll [1]; 11111111 A C:\Windows\System32\a.dll [2 1]; 0C0C0C0C C %UNSET%\c.dll [2]`},
		{"ND v1 only", Config{Version: 1}, `66666666 B D:\nd\b.dll [1]; 11111111 A C:\Windows\System32\a.dll [1]`},
		{"ND v2 only", Config{Version: 2}, `11111111 A C:\Windows\System32\a.dll [2]; 0C0C0C0C C %UNSET%\c.dll [2]`},
		{"one class", Config{Class: idA}, `11111111 A C:\Windows\System32\a.dll [2 1]`},
		{"one class, a version it lacks", Config{Class: idB, Version: 2}, ``},
		{"a DLL by path, v2 then v1", Config{DLL: `%ND%\x.dll`, Class: idC}, `0C0C0C0C  D:\nd\x.dll [2 1]`},
		{"a DLL by path, v1", Config{DLL: `x.dll`, Class: idC, Version: 1, Catalog: catalog}, `0C0C0C0C  x.dll [1]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := show(candidates(c.cfg, catalog, env))
			if got != c.want {
				t.Fatalf("candidates =\n  %s\nwant\n  %s", got, c.want)
			}
		})
	}
	if cs := candidates(Config{}, []ndcatalog.Entry{tcp}, env); len(cs) != 0 {
		t.Fatalf("a catalog without ND entries gave %s", show(cs))
	}
}
