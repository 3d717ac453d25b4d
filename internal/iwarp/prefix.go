package iwarp

// The godirect prefix of MPA private data: 'g' 'd', a version naming the
// sending provider, and (in a request) the ND protocol number. It lets a
// godirect listener pick the ND listener by protocol and tells each side
// that the peer is godirect and which provider it is; a peer that is not
// (siw, rping, perftest) sends none and sees four bytes of private data it
// ignores.
const (
	PrefixSize = 4
	// PrefixTCP: provider/tcp, whose Read responses are exact (a
	// zero-length Read is answered with no payload).
	PrefixTCP = 1
	// PrefixVerbs: provider/verbs on an iWARP device: a godirect peer
	// (its announced read limits carry the extra Read slot) that does not
	// itself ask for confirmations by zero-length Read.
	PrefixVerbs = 2
)

// AppendPrefix appends the prefix of provider version (PrefixTCP or
// PrefixVerbs) for ND protocol to dst.
func AppendPrefix(dst []byte, version byte, protocol int) []byte {
	return append(dst, 'g', 'd', version, byte(protocol))
}

// SplitPrefix returns the ND protocol and the sender's version from pd's
// prefix, and the application's private data after it. Without a prefix
// (or with a version it does not know) protocol is -1, version 0 and user
// all of pd.
func SplitPrefix(pd []byte) (protocol int, version byte, user []byte) {
	if len(pd) >= PrefixSize && pd[0] == 'g' && pd[1] == 'd' && (pd[2] == PrefixTCP || pd[2] == PrefixVerbs) {
		return int(pd[3]), pd[2], pd[PrefixSize:]
	}
	return -1, 0, pd
}
