package ndcatalog

import (
	"strconv"
	"strings"
	"testing"

	"github.com/godirect/nd/internal/ndabi"
)

var (
	idA = ndabi.MustParseGUID("{11111111-2222-3333-4444-555555555555}")
	idB = ndabi.MustParseGUID("{66666666-7777-8888-9999-AAAAAAAAAAAA}")
)

func TestProviders(t *testing.T) {
	tcpEntry := Entry{ProviderID: ndabi.MustParseGUID("{E70F1AA0-AB8B-11CF-8CA3-00805F48A192}"), ServiceFlags: 0x20066, Version: 2, AddressFamily: 2, SocketType: 1, Protocol: 6, Name: "MSAFD Tcpip [TCP/IP]"}
	v2 := Entries(idA, "A", `%SystemRoot%\System32\a.dll`)
	v1only := Entries(idB, "B", `C:\b.dll`)[1]
	v1only.ProviderFlags = ndabi.PFLHidden // v1 providers need not say PFL_NETWORKDIRECT_PROVIDER
	notHidden := Entries(idB, "B", `C:\b.dll`)[0]
	notHidden.ProviderFlags = ndabi.PFLNetworkDirectProvider
	badType := Entries(idB, "B", `C:\b.dll`)[0]
	badType.SocketType = 1
	v2noFlag := Entries(idB, "B", `C:\b.dll`)[0]
	v2noFlag.ProviderFlags = ndabi.PFLHidden
	for _, c := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"empty", nil, ""},
		{"not ND", []Entry{tcpEntry}, ""},
		{"v2 and v1 of one provider", v2, "A:131072,1"},
		{"v1 first still prefers v2", []Entry{v2[1], v2[0]}, "A:131072,1"},
		{"v1 only, without the ND flag", []Entry{v1only}, "B:1"},
		{"v2 only", v2[:1], "A:131072"},
		{"v2 needs the ND flag", []Entry{v2noFlag}, ""},
		{"hidden is needed", []Entry{notHidden}, ""},
		{"socket type -1 is needed", []Entry{badType}, ""},
		{"catalog order", []Entry{tcpEntry, v1only, v2[0], v2[1]}, "B:1 A:131072,1"},
	} {
		var got []string
		for _, p := range Providers(c.entries) {
			s := p.Name + ":"
			for i, v := range p.Versions {
				if i > 0 {
					s += ","
				}
				s += strconv.Itoa(int(v))
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: %q, want %q", c.name, g, c.want)
		}
	}
	if p := Providers(v2)[0]; p.Version() != ndabi.NDVersion2 || p.Path != `%SystemRoot%\System32\a.dll` || p.ID != idA {
		t.Fatalf("provider %+v", p)
	}
}

func TestExpandPath(t *testing.T) {
	env := map[string]string{"SYSTEMROOT": `C:\Windows`, "P": "x"}
	lookup := func(n string) (string, bool) { v, ok := env[strings.ToUpper(n)]; return v, ok }
	for in, want := range map[string]string{
		`%SystemRoot%\System32\nd.dll`: `C:\Windows\System32\nd.dll`,
		`%P%%P%`:                       `xx`,
		`100%`:                         `100%`,
		`%UNSET%\a`:                    `%UNSET%\a`,
		`%UNSET%P%`:                    `%UNSETx`,
		`%%`:                           `%%`,
		`plain`:                        `plain`,
	} {
		if got := ExpandPath(in, lookup); got != want {
			t.Errorf("ExpandPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzExpandPath(f *testing.F) {
	f.Add(`%SystemRoot%\a%b%`)
	f.Fuzz(func(t *testing.T, s string) {
		got := ExpandPath(s, func(string) (string, bool) { return "", false })
		if got != s {
			t.Fatalf("nothing set, %q became %q", s, got)
		}
	})
}
