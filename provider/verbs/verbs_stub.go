//go:build !verbs || !linux

package verbs

import (
	"net/netip"

	"github.com/godirect/nd"
)

// Name is the provider's registered name.
const Name = "verbs"

// hint tells the user how to get the real provider.
const hint = "build with -tags verbs (needs libibverbs-dev and librdmacm-dev)"

func init() { nd.RegisterProvider(New()) }

// Provider is the placeholder registered when the package is built without
// the verbs tag (or off Linux): every call reports nd.ErrNotSupported.
type Provider struct{}

var _ nd.Provider = (*Provider)(nil)

// New returns the placeholder provider.
func New() *Provider { return &Provider{} }

// Name implements nd.Provider.
func (*Provider) Name() string { return Name }

// Addresses implements nd.Provider: always nd.ErrNotSupported, with the
// build hint.
func (*Provider) Addresses() ([]netip.Addr, error) {
	return nil, &nd.OpError{Op: "verbs Addresses: " + hint, Status: nd.ErrNotSupported}
}

// OpenAdapter implements nd.Provider: always nd.ErrNotSupported, with the
// build hint.
func (*Provider) OpenAdapter(netip.Addr) (nd.Adapter, error) {
	return nil, &nd.OpError{Op: "verbs OpenAdapter: " + hint, Status: nd.ErrNotSupported}
}
