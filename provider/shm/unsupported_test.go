//go:build !linux && !windows && !darwin && !freebsd

package shm_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
)

// TestNotSupported: where the transport is not implemented, the provider
// is registered, and opening one of its addresses or allocating memory
// says ND_NOT_SUPPORTED with a cause; other addresses stay invalid.
func TestNotSupported(t *testing.T) {
	p, err := nd.OpenProvider(shm.Name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.OpenAdapter(shm.DefaultAddresses[0])
	var op *nd.OpError
	if a != nil || !errors.Is(err, nd.ErrNotSupported) || !errors.As(err, &op) || op.Err == nil {
		t.Fatalf("OpenAdapter(%v) = %v, %v; want ND_NOT_SUPPORTED with a cause", shm.DefaultAddresses[0], a, err)
	}
	if _, err := p.OpenAdapter(netip.MustParseAddr("10.1.2.3")); !errors.Is(err, nd.ErrInvalidAddress) {
		t.Fatalf("OpenAdapter(10.1.2.3) = %v, want ND_INVALID_ADDRESS", err)
	}
	if b, err := shm.AllocateMemory(4096); b != nil || !errors.Is(err, nd.ErrNotSupported) {
		t.Fatalf("AllocateMemory = %d bytes, %v; want ND_NOT_SUPPORTED", len(b), err)
	}
}
