//go:build !windows || !(amd64 || arm64)

package ndspi_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/ndspi"
)

func TestStubNotSupported(t *testing.T) {
	p, err := nd.OpenProvider("ndspi")
	if err != nil {
		t.Fatalf("OpenProvider(ndspi): %v", err)
	}
	if _, err := p.Addresses(); !errors.Is(err, nd.ErrNotSupported) || !strings.Contains(err.Error(), "Windows") {
		t.Fatalf("Addresses() error = %v; want ErrNotSupported saying where ND providers are", err)
	}
	if _, err := ndspi.New(ndspi.Config{}).OpenAdapter(netip.MustParseAddr("192.0.2.1")); !errors.Is(err, nd.ErrNotSupported) {
		t.Fatalf("OpenAdapter error = %v; want ErrNotSupported", err)
	}
	if _, err := ndspi.New(ndspi.Config{}).Installed(); !errors.Is(err, nd.ErrNotSupported) {
		t.Fatalf("Installed error = %v; want ErrNotSupported", err)
	}
}
