//go:build !linux && !windows && !darwin && !freebsd

package shm

import (
	"errors"
	"net/netip"
	"runtime"
	"slices"

	"github.com/godirect/nd"
)

// errPlatform is the cause of ND_NOT_SUPPORTED where the transport is not
// implemented.
var errPlatform = errors.New("shm: the shared-memory transport is not implemented on " + runtime.GOOS)

// transport holds nothing where the transport is not implemented.
type transport struct{}

func newTransport(*Provider) *transport { return &transport{} }

// OpenAdapter implements nd.Provider. Where the transport is not
// implemented it fails with ND_NOT_SUPPORTED for every address it would
// serve, and ND_INVALID_ADDRESS for others.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	if !slices.Contains(p.cfg.Addresses, addr.Unmap()) {
		return nil, nd.ErrInvalidAddress
	}
	return nil, &nd.OpError{Op: "OpenAdapter", Status: nd.ErrNotSupported, Err: errPlatform}
}

// OneSidedMode describes how this process moves RDMA Read and Write
// payloads; here, that it does not.
func (p *Provider) OneSidedMode() string { return "none (" + errPlatform.Error() + ")" }

// AllocateMemory returns ND_NOT_SUPPORTED where the transport is not
// implemented.
func AllocateMemory(size int) ([]byte, error) {
	return nil, &nd.OpError{Op: "AllocateMemory", Status: nd.ErrNotSupported, Err: errPlatform}
}

// FreeMemory fails: AllocateMemory returns no memory here.
func FreeMemory(b []byte) error {
	return errors.New("shm: FreeMemory: not memory from AllocateMemory")
}
