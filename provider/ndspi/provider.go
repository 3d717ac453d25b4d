package ndspi

import (
	"net/netip"
	"os"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// Name is the provider's registered name.
const Name = "ndspi"

// The provider registered under Name takes its Config from the
// environment (ConfigFromEnv), so that every nd tool reaches any ND
// provider with -provider ndspi.
func init() {
	cfg, err := ConfigFromEnv(os.LookupEnv)
	p := New(cfg)
	p.cfgErr = err
	nd.RegisterProvider(p)
}

// Provider is an nd.Provider over the ND providers installed on Windows
// (or one DLL, as its Config says). It loads them at its first use and
// serves the union of their addresses: OpenAdapter opens an address on the
// first provider, in catalog order, that serves it. It is safe for
// concurrent use. Elsewhere than 64-bit Windows its calls report
// nd.ErrNotSupported.
type Provider struct {
	cfg    Config
	cfgErr error
	sys    system // the platform's side: what was loaded
}

var _ nd.Provider = (*Provider)(nil)

// New returns a provider for cfg. Nothing is loaded until the provider's
// first use.
func New(cfg Config) *Provider { return &Provider{cfg: cfg} }

// Name implements nd.Provider.
func (p *Provider) Name() string { return Name }

// Config returns the provider's Config.
func (p *Provider) Config() Config { return p.cfg }

// Addresses implements nd.Provider: the addresses of every provider found,
// in catalog order, each once. The first call loads the providers; one
// that fails to load is left out (Installed says why). It reports
// nd.ErrNotSupported elsewhere than Windows and when no provider was found.
func (p *Provider) Addresses() ([]netip.Addr, error) {
	if err := p.configError("Addresses"); err != nil {
		return nil, err
	}
	return p.sys.addresses(p)
}

// OpenAdapter implements nd.Provider: a new adapter instance of the first
// provider, in catalog order, that serves addr (ND v2: ResolveAddress and
// OpenAdapter; ND v1: OpenAdapter with addr's sockaddr). An address no
// provider serves is nd.ErrInvalidAddress.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	if err := p.configError("OpenAdapter"); err != nil {
		return nil, err
	}
	return p.sys.openAdapter(p, addr.Unmap())
}

// Installed lists the ND providers the Provider found, those it could not
// use included, with the reason. It reports nd.ErrNotSupported elsewhere
// than Windows, and an error when the catalog could not be read.
func (p *Provider) Installed() ([]Installed, error) {
	if err := p.configError("Installed"); err != nil {
		return nil, err
	}
	return p.sys.installed(p)
}

// Installed describes one ND provider that a Provider found: in the Winsock
// catalog, or the DLL its Config names.
type Installed struct {
	// ID is the provider's class id (its catalog entries' ProviderId).
	ID ndabi.GUID
	// Name is its catalog name (empty for a DLL given by path).
	Name string
	// Path is its DLL, environment strings expanded.
	Path string
	// Version is the ND version in use, 1 or 2; 0 when the provider could
	// not be used (Err says why).
	Version int
	// Addresses are the addresses it serves (QueryAddressList).
	Addresses []netip.Addr
	// Limits are what Query reports for its adapter of its first
	// address (nil when it serves none, or the adapter did not open).
	Limits *nd.AdapterInfo
	// Err is why the provider cannot be used: its DLL did not load, lacks
	// DllGetClassObject, serves no ND provider for its class id, or its
	// address list failed.
	Err error
}

// configError is the error of every call of a provider whose Config is
// not valid (a malformed environment variable, say).
func (p *Provider) configError(op string) error {
	err := p.cfgErr
	if err == nil {
		err = p.cfg.check()
	}
	if err == nil {
		return nil
	}
	return &nd.OpError{Op: "ndspi " + op, Status: nd.ErrInvalidParameter, Err: err}
}
