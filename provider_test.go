package nd_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/godirect/nd"
	_ "github.com/godirect/nd/provider/loop"
)

// A name that no imported package registered: ND_NOT_SUPPORTED, and the
// error says which import registers it, or which names are registered.
func TestOpenProviderNamesTheImport(t *testing.T) {
	if slices.Contains(nd.Providers(), "shm") {
		t.Fatal("package nd's tests import provider/shm; the case needs a provider they do not import")
	}
	for _, c := range []struct{ name, want string }{
		{"shm", `nd: OpenProvider shm: ND_NOT_SUPPORTED (0xc00000bb): the operation is not supported: no provider "shm" is registered (forgotten import? import _ "github.com/godirect/nd/provider/shm" registers it)`},
		{"rdma", `nd: OpenProvider rdma: ND_NOT_SUPPORTED (0xc00000bb): the operation is not supported: no provider "rdma" is registered; registered: loop`},
	} {
		p, err := nd.OpenProvider(c.name)
		var oe *nd.OpError
		if p != nil || !errors.As(err, &oe) || !errors.Is(err, nd.ErrNotSupported) || err.Error() != c.want {
			t.Errorf("OpenProvider(%q) = %v, %v\nwant nil, %s", c.name, p, err, c.want)
		}
	}
	if p, err := nd.OpenProvider("loop"); p == nil || err != nil || p.Name() != "loop" {
		t.Errorf(`OpenProvider("loop") = %v, %v`, p, err)
	}
}
