//go:build linux || windows || darwin || freebsd

package shm

import (
	"net/netip"
	"slices"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// OpenAdapter implements nd.Provider.
func (p *Provider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	addr = addr.Unmap()
	if !slices.Contains(p.cfg.Addresses, addr) {
		return nil, nd.ErrInvalidAddress
	}
	p.t.announce(addr)
	return engine.NewAdapter(addr, Info, p.t), nil
}

// OneSidedMode describes how this process moves RDMA Read and Write
// payloads: "process_vm" ("ReadProcessMemory" on Windows) when the kernel
// lets it read and write another process's memory (the check is against
// itself; each connection probes its peer again when it is set up and
// falls back per direction), or "ring (reason)" when payloads go through
// the shared rings. nd info prints it.
func (p *Provider) OneSidedMode() string {
	if p.cfg.OneSided == OneSidedRing {
		return "ring (configured)"
	}
	if err := selfProbe(); err != nil {
		return "ring (" + copyCall + ": " + err.Error() + ")"
	}
	return copyMode + " (one copy by the initiator against the target's window table; ring fallback per connection)"
}
