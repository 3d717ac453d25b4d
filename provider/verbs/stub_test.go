//go:build !verbs || !linux

package verbs_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/verbs"
)

func TestStubNotSupported(t *testing.T) {
	p, err := nd.OpenProvider("verbs")
	if err != nil {
		t.Fatalf("OpenProvider(verbs): %v", err)
	}
	_, err = p.Addresses()
	if !errors.Is(err, nd.ErrNotSupported) || !strings.Contains(err.Error(), "-tags verbs") {
		t.Fatalf("Addresses() error = %v; want ErrNotSupported with the build hint", err)
	}
	_, err = verbs.New().OpenAdapter(netip.MustParseAddr("192.0.2.1"))
	if !errors.Is(err, nd.ErrNotSupported) || !strings.Contains(err.Error(), "libibverbs-dev") {
		t.Fatalf("OpenAdapter error = %v; want ErrNotSupported with the build hint", err)
	}
}
