package nd

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Provider is ND's INDProvider: the entry point of one implementation
// (in-process, TCP, shared memory, verbs). A Provider is safe for concurrent
// use.
type Provider interface {
	// Name is the provider's registered name, such as "tcp".
	Name() string
	// Addresses lists the local addresses the provider serves
	// (QueryAddressList). The list can change between calls. A provider
	// that cannot serve here returns ErrNotSupported (wrapped in an
	// *OpError that says why).
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

// OpenProvider returns the provider registered under name ("loop", "tcp",
// "shm", "verbs"). A provider registers itself when its package is
// imported, so a program imports the ones it opens by name, for that side
// effect alone if it uses nothing else of them:
//
//	import _ "github.com/godirect/nd/provider/tcp"
//
// For a name nothing registered, OpenProvider returns an *OpError whose
// Status is ErrNotSupported and whose cause says which import registers
// the name, or which names are registered.
func OpenProvider(name string) (Provider, error) {
	registry.Lock()
	defer registry.Unlock()
	if p, ok := registry.providers[name]; ok {
		return p, nil
	}
	return nil, &OpError{Op: "OpenProvider " + name, Status: ErrNotSupported, Err: &unregisteredError{name, registeredLocked()}}
}

// modulePath is this module's import path, for the import hints of
// OpenProvider's error.
const modulePath = "github.com/godirect/nd"

// moduleProviders are the providers of this module, each registered by
// its package provider/<name>.
var moduleProviders = []string{"loop", "shm", "tcp", "verbs"}

// unregisteredError is the cause of OpenProvider's error for a name no
// provider registered.
type unregisteredError struct {
	name       string
	registered []string
}

func (e *unregisteredError) Error() string {
	s := "no provider " + strconv.Quote(e.name) + " is registered"
	if slices.Contains(moduleProviders, e.name) {
		return s + " (forgotten import? import _ \"" + modulePath + "/provider/" + e.name + "\" registers it)"
	}
	if len(e.registered) == 0 {
		return s + "; none is (a provider registers itself when its package, such as " + modulePath + "/provider/tcp, is imported)"
	}
	return s + "; registered: " + strings.Join(e.registered, ", ")
}

// registeredLocked is Providers with registry held.
func registeredLocked() []string {
	names := make([]string, 0, len(registry.providers))
	for n := range registry.providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Providers returns the names of the registered providers, sorted.
func Providers() []string {
	registry.Lock()
	defer registry.Unlock()
	return registeredLocked()
}
