package ndrules

import (
	"net/netip"

	"github.com/godirect/nd"
)

// ConnState is where a connector stands in ND's connection set-up. Both the
// engine's connectors and provider/verbs' keep their state in it, so that
// the calls below decide the same status from the same state.
type ConnState uint8

// The states of a connector.
const (
	Idle       ConnState = iota // no attempt: Connect, or GetConnectionRequest, may start one
	Connecting                  // active: Connect waits for the peer's answer
	Replied                     // active: the peer accepted; CompleteConnect or Reject next
	Requested                   // passive: a request is bound; Accept or Reject next
	Accepting                   // passive: Accept waits for the active side to complete
	Connected                   // the connection is up
	Aborted                     // the peer went away before the connection was up
	Ended                       // the connection was up and ended
)

// Attempting reports whether an attempt is under way (the states in which
// closing the connector aborts it).
func (s ConnState) Attempting() bool {
	return s == Connecting || s == Replied || s == Accepting
}

// Connect checks Connect on a connector in state s: an attempt under way or
// a connection up is ErrConnectionActive; a connector whose connection
// ended cannot connect again (ErrInvalidDeviceState, the status of an open
// object in the wrong state; a closed one is ErrInvalidHandle).
func (s ConnState) Connect() nd.Status {
	switch s {
	case Connecting, Replied, Requested, Accepting, Connected:
		return nd.ErrConnectionActive
	case Ended:
		return nd.ErrInvalidDeviceState
	}
	return nd.Success
}

// CompleteConnect checks CompleteConnect: only after the peer accepted
// (Replied); ErrConnectionAborted if the peer went away meanwhile,
// ErrConnectionInvalid otherwise.
func (s ConnState) CompleteConnect() nd.Status {
	switch s {
	case Replied:
		return nd.Success
	case Aborted:
		return nd.ErrConnectionAborted
	}
	return nd.ErrConnectionInvalid
}

// Accept checks Accept: only with a request bound (Requested);
// ErrConnectionActive once accepting or connected, ErrConnectionAborted if
// the active side gave up, ErrConnectionInvalid otherwise.
func (s ConnState) Accept() nd.Status {
	switch s {
	case Requested:
		return nd.Success
	case Accepting, Connected:
		return nd.ErrConnectionActive
	case Aborted:
		return nd.ErrConnectionAborted
	}
	return nd.ErrConnectionInvalid
}

// Reject checks Reject: the passive side before Accept (Requested) or the
// active side before CompleteConnect (Replied); ErrConnectionAborted if the
// peer went away, ErrConnectionInvalid otherwise.
func (s ConnState) Reject() nd.Status {
	switch s {
	case Requested, Replied:
		return nd.Success
	case Aborted:
		return nd.ErrConnectionAborted
	}
	return nd.ErrConnectionInvalid
}

// Addresses checks GetLocalAddress and GetPeerAddress: they answer from
// the moment a request is bound or accepted until the connection ends,
// else ErrConnectionInvalid.
func (s ConnState) Addresses() nd.Status {
	switch s {
	case Replied, Requested, Accepting, Connected:
		return nd.Success
	}
	return nd.ErrConnectionInvalid
}

// NotifyDisconnect checks NotifyDisconnect: it waits while the connection
// is up (wait true), returns nil at once once it ended, and is
// ErrConnectionInvalid on a connector that never connected.
func (s ConnState) NotifyDisconnect() (wait bool, st nd.Status) {
	switch s {
	case Connected:
		return true, nd.Success
	case Ended:
		return false, nd.Success
	}
	return false, nd.ErrConnectionInvalid
}

// Disconnect checks Disconnect: it ends a connection that is up, succeeds
// once after the peer ended it (again false: no Disconnect succeeded
// before), and is ErrConnectionInvalid otherwise.
func (s ConnState) Disconnect(again bool) nd.Status {
	switch {
	case s == Connected, s == Ended && !again:
		return nd.Success
	}
	return nd.ErrConnectionInvalid
}

// ConnectParams checks Connect's address and data after the endpoint
// (parameter 1) and the state: an address without an IP or port
// (ErrInvalidAddress), a protocol outside 0..MaxProtocol
// (ErrInvalidParameter4), private data longer than MaxCallerData
// (ErrInvalidBufferSize).
func ConnectParams(info *nd.AdapterInfo, remote netip.AddrPort, protocol, privateData int) error {
	switch {
	case !remote.Addr().IsValid() || remote.Port() == 0:
		return argf("Connect", "remote", nd.ErrInvalidAddress, "%v has no address or no port", remote)
	case protocol < 0 || protocol > nd.MaxProtocol:
		return argf("Connect", "protocol", nd.ErrInvalidParameter4, "%d is outside 0..%d", protocol, nd.MaxProtocol)
	case privateData > info.MaxCallerData:
		return argf("Connect", "privateData", nd.ErrInvalidBufferSize, "%d bytes, more than the adapter's MaxCallerData (%d)", privateData, info.MaxCallerData)
	}
	return nil
}

// CalleeData checks the private data of op (Accept, Reject): at most
// MaxCalleeData bytes, else ErrInvalidBufferSize.
func CalleeData(op string, info *nd.AdapterInfo, privateData int) error {
	if privateData > info.MaxCalleeData {
		return argf(op, "privateData", nd.ErrInvalidBufferSize, "%d bytes, more than the adapter's MaxCalleeData (%d)", privateData, info.MaxCalleeData)
	}
	return nil
}

// ConnectionData is GetConnectionData's answer from the peer's announced
// read limits and private data: the limits seen from the local side (the
// local inbound limit is the peer's outbound one) and clamped to the
// adapter's, and the private data copied into buf; a buf shorter than the
// data gets its prefix and ErrBufferOverflow, with the full length in
// PrivateDataLength.
func ConnectionData(info *nd.AdapterInfo, peerIRD, peerORD int, peerData, buf []byte) (nd.ConnectionData, nd.Status) {
	cd := nd.ConnectionData{
		InboundReadLimit:  min(max(peerORD, 0), info.MaxInboundReadLimit),
		OutboundReadLimit: min(max(peerIRD, 0), info.MaxOutboundReadLimit),
		PrivateDataLength: len(peerData),
	}
	copy(buf, peerData)
	if len(buf) < len(peerData) {
		return cd, nd.ErrBufferOverflow
	}
	return cd, nd.Success
}
