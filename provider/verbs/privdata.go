package verbs

// Private-data framing: what provider/verbs puts in front of the
// application's private data in the connection manager's messages, and how
// it reads a peer's. It is pure Go (no cgo, no build tag) so that its tests
// and fuzz target run in every build. docs/verbs.md describes the bytes.

import "github.com/godirect/nd/internal/iwarp"

// IB CM private data sizes and what the provider takes of them. On RoCE
// and InfiniBand the frame is iWARP's prefix ('g' 'd' PrefixVerbs P)
// followed by the length of the application's data: the IB CM pads
// private data with zeros to its fixed size, so the length cannot be
// learnt otherwise, and zeros cannot forge the 'g' 'd'.
const (
	ibHeader         = iwarp.PrefixSize + 1 // 'g' 'd' version protocol length
	ibRequestData    = 56                   // bytes of private data in an IB CM REQ
	ibRejectData     = 148                  // in a REJ (a REP carries 196)
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
	b := iwarp.AppendPrefix(make([]byte, 0, ibHeader+len(pd)), iwarp.PrefixVerbs, protocol)
	return append(append(b, byte(len(pd))), pd...)
}

// unwrap returns the protocol (-1 when the peer sent no framing), what the
// peer is, and the application's data (all of pd from a foreign peer,
// padding included). The result aliases pd. Any pd is valid input.
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
	protocol, version, user := iwarp.SplitPrefix(pd)
	if version != iwarp.PrefixVerbs || len(user) == 0 || int(user[0]) > len(user)-1 {
		return -1, peerForeign, pd
	}
	return protocol, peerGodirect, user[1 : 1+int(user[0])]
}
