package verbs

// Private-data framing: what provider/verbs puts in front of the
// application's private data in the connection manager's messages, and how
// it reads a peer's. It is pure Go (no cgo, no build tag) so that its tests
// and fuzz target run in every build. docs/verbs.md describes the bytes.

import "github.com/godirect/nd/internal/iwarp"

// IB CM private data sizes and what the provider takes of them.
const (
	ibHeader         = 2  // RoCE/IB: protocol, length (the IB CM pads private data)
	ibRequestData    = 56 // bytes of private data in an IB CM REQ
	ibRejectData     = 148
	iwarpPrivateData = iwarp.SiwMaxUserPrivateData - iwarp.PrefixSize
	ibCallerData     = ibRequestData - ibHeader
	ibCalleeData     = ibRejectData - ibHeader
)

// peerKind is what the private-data framing says of the peer.
type peerKind int

const (
	peerForeign  peerKind = iota // no godirect framing (rping, perftest, MPI)
	peerGodirect                 // provider/verbs on a kernel device
	peerTCP                      // provider/tcp: answers zero-length Reads exactly
)

// wrapPrivateData returns pd behind the provider's framing for ND protocol
// (0 in replies and rejects), on an iWARP device when isIWARP.
func wrapPrivateData(isIWARP bool, protocol int, pd []byte) []byte {
	if isIWARP {
		return append(iwarp.AppendPrefix(make([]byte, 0, iwarp.PrefixSize+len(pd)), iwarp.PrefixVerbs, protocol), pd...)
	}
	return append([]byte{byte(protocol), byte(len(pd))}, pd...)
}

// unwrap returns the protocol (-1 when the peer sent no framing), what the
// peer is, and the application's data. The result aliases pd.
func unwrap(isIWARP bool, pd []byte) (int, peerKind, []byte) {
	if isIWARP {
		protocol, version, user := iwarp.SplitPrefix(pd)
		switch version {
		case iwarp.PrefixTCP:
			return protocol, peerTCP, user
		case iwarp.PrefixVerbs:
			return protocol, peerGodirect, user
		}
		return -1, peerForeign, pd
	}
	if len(pd) >= ibHeader && int(pd[1]) <= len(pd)-ibHeader {
		return int(pd[0]), peerGodirect, pd[ibHeader : ibHeader+int(pd[1])]
	}
	return -1, peerForeign, pd
}
