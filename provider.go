package nd

import (
	"net/netip"
	"slices"
	"sync"
)

// Provider is ND's INDProvider: the entry point of one implementation
// (in-process, TCP, shared memory, verbs). A Provider is safe for concurrent
// use.
type Provider interface {
	// Name is the provider's registered name, such as "tcp".
	Name() string
	// Addresses lists the local addresses the provider serves
	// (QueryAddressList). The list can change between calls.
	Addresses() ([]netip.Addr, error)
	// OpenAdapter opens the adapter that owns addr; ErrInvalidAddress if no
	// adapter of this provider serves it. Each call returns a new adapter
	// instance with its own resources.
	OpenAdapter(addr netip.Addr) (Adapter, error)
}

var registry struct {
	sync.Mutex
	providers map[string]Provider
}

// RegisterProvider makes p available by its name to OpenProvider. Providers
// call it from an init function. Registering a second provider under the same
// name replaces the first. It is safe for concurrent use.
func RegisterProvider(p Provider) {
	registry.Lock()
	defer registry.Unlock()
	if registry.providers == nil {
		registry.providers = make(map[string]Provider)
	}
	registry.providers[p.Name()] = p
}

// OpenProvider returns the provider registered under name, or
// ErrNotSupported (wrapped in an *OpError) if there is none; the provider's
// package must be imported (often for its side effect: import _ "…/provider/tcp").
func OpenProvider(name string) (Provider, error) {
	registry.Lock()
	defer registry.Unlock()
	if p, ok := registry.providers[name]; ok {
		return p, nil
	}
	return nil, &OpError{Op: "OpenProvider " + name, Status: ErrNotSupported}
}

// Providers returns the names of the registered providers, sorted.
func Providers() []string {
	registry.Lock()
	defer registry.Unlock()
	names := make([]string, 0, len(registry.providers))
	for n := range registry.providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
