package ndnet

import (
	"context"
	"net"
	"strings"

	"github.com/godirect/nd"
)

// networkPrefix starts every ndnet network name: "nd/" and a registered
// provider's name, what Addr.Network reports (package doc, "Networks").
const networkPrefix = "nd/"

// providerOf returns the registered provider that network names; a
// network without the "nd/" prefix is a net.UnknownNetworkError, a name
// no provider registered nd.OpenProvider's error (which names the import
// that registers it).
func providerOf(network string) (nd.Provider, error) {
	name, ok := strings.CutPrefix(network, networkPrefix)
	if !ok || name == "" {
		return nil, net.UnknownNetworkError(network)
	}
	return nd.OpenProvider(name)
}

// DialNetwork connects to the ndnet listener at address ("host:port") over
// the provider that network names ("nd/tcp", "nd/shm", ...), with the
// default Dialer. It is Dial for a program that names its transport as
// package net does; ctx bounds the set-up, and the errors are
// Dialer.DialNetwork's.
func DialNetwork(ctx context.Context, network, address string) (*Conn, error) {
	var d Dialer
	return d.DialNetwork(ctx, network, address)
}

// DialNetwork is Dial over the provider that network names ("nd/tcp"):
// ctx bounds the set-up. An unknown network is a *net.OpError wrapping
// net.UnknownNetworkError; a provider name nothing registered wraps
// nd.OpenProvider's error (nd.ErrNotSupported, which names the import that
// registers it); other errors are Dial's.
func (d *Dialer) DialNetwork(ctx context.Context, network, address string) (*Conn, error) {
	p, err := providerOf(network)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	return d.Dial(ctx, p, address)
}

// DialContext is DialNetwork with the signature of net.Dialer's
// DialContext, so that a Dialer serves where one is expected: as
// net/http's Transport.DialContext, or gRPC's context dialer. The
// net.Conn it returns is a *Conn; its errors are DialNetwork's.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.DialNetwork(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ListenNetwork listens on address ("host:port", port 0 picks one) of the
// provider that network names ("nd/tcp", "nd/shm", ...), with the default
// ListenConfig. It is Listen for a program that names its transport as
// package net does; errors as ListenConfig.ListenNetwork's.
func ListenNetwork(network, address string) (*Listener, error) {
	var lc ListenConfig
	return lc.ListenNetwork(network, address)
}

// ListenNetwork is Listen over the provider that network names. Errors as
// Dialer.DialNetwork's, with Op "listen".
func (lc *ListenConfig) ListenNetwork(network, address string) (*Listener, error) {
	p, err := providerOf(network)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	return lc.Listen(p, address)
}
