//go:build !windows || !(amd64 || arm64)

package ndspi

import (
	"net/netip"
	"runtime"

	"github.com/godirect/nd"
)

// hint tells the user where the provider works: ND's binary interface
// as internal/ndabi describes it is 64-bit Windows's.
const hint = "ND providers are Windows DLLs; provider ndspi reaches them on 64-bit Windows only (this is " + runtime.GOOS + "/" + runtime.GOARCH + ")"

// system is the platform's side of a Provider: nothing to load here.
type system struct{}

func (*system) addresses(*Provider) ([]netip.Addr, error) {
	return nil, &nd.OpError{Op: "ndspi Addresses: " + hint, Status: nd.ErrNotSupported}
}

func (*system) openAdapter(*Provider, netip.Addr) (nd.Adapter, error) {
	return nil, &nd.OpError{Op: "ndspi OpenAdapter: " + hint, Status: nd.ErrNotSupported}
}

func (*system) installed(*Provider) ([]Installed, error) {
	return nil, &nd.OpError{Op: "ndspi Installed: " + hint, Status: nd.ErrNotSupported}
}
