package engine

import (
	"net/netip"

	"github.com/godirect/nd"
)

// quietLink is a Link that carries nothing: every Transmit succeeds at
// once and nothing ever arrives. Tests embed it and override what they
// watch.
type quietLink struct {
	ep *Endpoint
}

func (l *quietLink) LocalAddr() netip.AddrPort               { return netip.AddrPort{} }
func (l *quietLink) RemoteAddr() netip.AddrPort              { return netip.AddrPort{} }
func (l *quietLink) Accept(int, int, []byte) error           { return nil }
func (l *quietLink) Reject([]byte) error                     { return nil }
func (l *quietLink) Ready() error                            { return nil }
func (l *quietLink) Attach(ep *Endpoint)                     { l.ep = ep }
func (l *quietLink) Transmit(*WorkRequest) (bool, nd.Status) { return true, nd.Success }
func (l *quietLink) Close(nd.Status)                         {}
