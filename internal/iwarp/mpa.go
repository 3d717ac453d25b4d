package iwarp

import "encoding/binary"

// MPA frame geometry and limits.
const (
	// MPAKeySize is the length of the ASCII key that opens an MPA frame.
	MPAKeySize = 16
	// MPAHeaderSize is the fixed part of an MPA request or reply frame:
	// key, flags byte, revision byte and the 16-bit private-data length.
	MPAHeaderSize = 20
	// MPAMaxPrivateData is the largest PD_Length accepted on receive and
	// produced on send (RFC 5044); it counts the IRD/ORD word if present.
	MPAMaxPrivateData = 512
	// MPAEnhancedWordSize is the size of the RFC 6581 IRD/ORD word that
	// starts the private data of a revision 2 frame with the H flag.
	MPAEnhancedWordSize = 4
	// MaxIRDORD is the largest IRD or ORD value the 14-bit fields carry.
	MaxIRDORD = 0x3fff
	// SiwMaxPrivateData is the largest PD_Length (IRD/ORD word included)
	// a Linux siw peer accepts; larger frames abort its handshake.
	SiwMaxPrivateData = 256
	// SiwMaxUserPrivateData is the most application private data (IRD/ORD
	// word excluded) to exchange with a Linux siw peer. siw hands the
	// length of its own private data to its frame sender as an 8-bit value
	// and adds the 4-byte IRD/ORD word inside that 8-bit value, so only
	// 255 - 4 = 251 user bytes survive without wrapping; applications
	// talking to siw should stay within that on both sides.
	SiwMaxUserPrivateData = 255 - MPAEnhancedWordSize
)

// MPA revisions understood by this package.
const (
	// MPARevision1 is RFC 5044 MPA without the enhanced setup word.
	MPARevision1 = 1
	// MPARevision2 is RFC 6581 enhanced MPA (IRD/ORD word when H is set).
	MPARevision2 = 2
)

// Flag bits of byte 16 of an MPA frame.
const (
	mpaFlagMarkers  = 0x80
	mpaFlagCRC      = 0x40
	mpaFlagReject   = 0x20
	mpaFlagEnhanced = 0x10
)

// Bits of the two halves of the RFC 6581 IRD/ORD word.
const (
	mpaP2P       = 0x8000 // IRD half
	mpaSendRTR   = 0x4000 // IRD half
	mpaWriteRTR  = 0x8000 // ORD half
	mpaReadRTR   = 0x4000 // ORD half
	mpaIRDORDMax = 0x3fff
)

var (
	mpaRequestKey = [MPAKeySize]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'}
	mpaReplyKey   = [MPAKeySize]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'}
)

// MPAKind says whether an MPA frame is the initiator's request or the
// responder's reply.
type MPAKind uint8

// MPA frame kinds. The zero MPAKind is invalid.
const (
	MPARequest MPAKind = 1 // key "MPA ID Req Frame", sent by the initiator
	MPAReply   MPAKind = 2 // key "MPA ID Rep Frame", sent by the responder
)

// String returns "request", "reply" or "invalid".
func (k MPAKind) String() string {
	switch k {
	case MPARequest:
		return "request"
	case MPAReply:
		return "reply"
	}
	return "invalid"
}

// RTRFlags is a set of RFC 6581 ready-to-receive (RTR) message types. In a
// request it lists every type the initiator can send; in a reply it names
// the single type the responder chose.
type RTRFlags uint8

// RTR message types.
const (
	RTRSend  RTRFlags = 1 << 0 // zero-length Send (QN 0, MSN 1)
	RTRWrite RTRFlags = 1 << 1 // zero-length RDMA Write (STag 1, TO 0)
	RTRRead  RTRFlags = 1 << 2 // zero-length RDMA Read Request (QN 1, MSN 1)
)

// ChooseRTR returns the single RTR type a responder should pick from the
// types an initiator offered, with Linux siw's preference: Write if
// offered, else Read if offered, else Write (siw never picks Send). It is
// safe for concurrent use.
func ChooseRTR(offered RTRFlags) RTRFlags {
	if offered&RTRRead != 0 && offered&RTRWrite == 0 {
		return RTRRead
	}
	return RTRWrite
}

// MPAFrame is a decoded MPA request or reply frame.
//
// The IRD/ORD fields are meaningful only when Enhanced is set, which
// requires Revision 2: the frame then carries the RFC 6581 word
// (PeerToPeer, RTR, IRD, ORD) as the first 4 bytes of its private data.
// PrivateData never includes that word. Reserved flag bits are sent as zero
// and ignored on receive; the Reject flag exists only in replies.
type MPAFrame struct {
	Kind     MPAKind // request or reply
	Revision uint8   // MPARevision1 or MPARevision2
	Markers  bool    // M: sender wants markers in the stream it receives
	CRC      bool    // C: sender wants CRC32c on the connection
	Reject   bool    // R: the responder rejects the connection (reply only)
	Enhanced bool    // H: RFC 6581 IRD/ORD word present (revision 2 only)

	IRD        uint16   // inbound RDMA Read Requests the sender will queue (0..MaxIRDORD)
	ORD        uint16   // outbound RDMA Read Requests the sender wants (0..MaxIRDORD)
	PeerToPeer bool     // P2P: an RTR message follows the handshake
	RTR        RTRFlags // offered (request) or chosen (reply) RTR types

	PrivateData []byte // application private data, IRD/ORD word excluded
}

// Len returns the number of bytes AppendMPAFrame writes for f.
func (f *MPAFrame) Len() int {
	n := MPAHeaderSize + len(f.PrivateData)
	if f.Enhanced {
		n += MPAEnhancedWordSize
	}
	return n
}

// AppendMPAFrame appends the wire form of f to dst and returns the extended
// slice. It fails with ErrMPAKind for an invalid Kind or a request with
// Reject set, ErrMPARevision for a revision other than 1 and 2 or Enhanced
// without revision 2, ErrMPAIRDORDRange for IRD or ORD above MaxIRDORD,
// and ErrMPAPrivateDataTooLong when the private data (plus the IRD/ORD
// word) exceeds MPAMaxPrivateData; on error dst is returned unchanged. It
// allocates only if dst lacks capacity and is safe for concurrent use.
// Markers may be encoded (to build a frame for tests) although no peer
// of this package should ever send them.
func AppendMPAFrame(dst []byte, f *MPAFrame) ([]byte, error) {
	var key *[MPAKeySize]byte
	switch f.Kind {
	case MPARequest:
		if f.Reject {
			return dst, ErrMPAKind
		}
		key = &mpaRequestKey
	case MPAReply:
		key = &mpaReplyKey
	default:
		return dst, ErrMPAKind
	}
	if f.Revision != MPARevision1 && f.Revision != MPARevision2 {
		return dst, ErrMPARevision
	}
	if f.Enhanced && f.Revision != MPARevision2 {
		return dst, ErrMPARevision
	}
	pdLen := len(f.PrivateData)
	if f.Enhanced {
		if f.IRD > MaxIRDORD || f.ORD > MaxIRDORD {
			return dst, ErrMPAIRDORDRange
		}
		pdLen += MPAEnhancedWordSize
	}
	if pdLen > MPAMaxPrivateData {
		return dst, ErrMPAPrivateDataTooLong
	}
	var flags byte
	if f.Markers {
		flags |= mpaFlagMarkers
	}
	if f.CRC {
		flags |= mpaFlagCRC
	}
	if f.Reject {
		flags |= mpaFlagReject
	}
	if f.Enhanced {
		flags |= mpaFlagEnhanced
	}
	dst = append(dst, key[:]...)
	dst = append(dst, flags, f.Revision)
	dst = binary.BigEndian.AppendUint16(dst, uint16(pdLen))
	if f.Enhanced {
		ird, ord := f.IRD, f.ORD
		if f.PeerToPeer {
			ird |= mpaP2P
		}
		if f.RTR&RTRSend != 0 {
			ird |= mpaSendRTR
		}
		if f.RTR&RTRWrite != 0 {
			ord |= mpaWriteRTR
		}
		if f.RTR&RTRRead != 0 {
			ord |= mpaReadRTR
		}
		dst = binary.BigEndian.AppendUint16(dst, ird)
		dst = binary.BigEndian.AppendUint16(dst, ord)
	}
	return append(dst, f.PrivateData...), nil
}

// ParseMPAFrame decodes one MPA request or reply frame from the start of b
// and returns it with the number of bytes it occupies (20 + PD_Length).
// PrivateData aliases b.
//
// Errors:
//   - ErrShortBuffer: b is incomplete; n is the total length b must have
//     (MPAHeaderSize first, then the full frame once the header is there),
//     so a stream reader can read the header and then exactly the rest.
//   - ErrMPAKey, ErrMPARevision (revision not 1 or 2; Kind, Revision and
//     the flags are filled in), ErrMPAPrivateDataTooLong (PD_Length above
//     MPAMaxPrivateData), ErrMPAEnhancedWord (H with PD_Length below 4):
//     the frame is unusable and n is 0.
//   - ErrMPAMarkers: the peer set M. The frame and n are fully valid so the
//     caller can consume it and reject the connection.
//
// The H flag is honoured only with revision 2; reserved flag bits and, in a
// request, the R bit are ignored. It does not allocate, never panics and is
// safe for concurrent use.
func ParseMPAFrame(b []byte) (MPAFrame, int, error) {
	var f MPAFrame
	if len(b) < MPAHeaderSize {
		return f, MPAHeaderSize, ErrShortBuffer
	}
	switch [MPAKeySize]byte(b[:MPAKeySize]) {
	case mpaRequestKey:
		f.Kind = MPARequest
	case mpaReplyKey:
		f.Kind = MPAReply
	default:
		return MPAFrame{}, 0, ErrMPAKey
	}
	flags := b[16]
	f.Revision = b[17]
	f.Markers = flags&mpaFlagMarkers != 0
	f.CRC = flags&mpaFlagCRC != 0
	f.Reject = f.Kind == MPAReply && flags&mpaFlagReject != 0
	if f.Revision != MPARevision1 && f.Revision != MPARevision2 {
		return f, 0, ErrMPARevision
	}
	f.Enhanced = f.Revision == MPARevision2 && flags&mpaFlagEnhanced != 0
	pdLen := int(binary.BigEndian.Uint16(b[18:20]))
	if pdLen > MPAMaxPrivateData {
		return MPAFrame{}, 0, ErrMPAPrivateDataTooLong
	}
	n := MPAHeaderSize + pdLen
	if len(b) < n {
		return MPAFrame{}, n, ErrShortBuffer
	}
	pd := b[MPAHeaderSize:n:n]
	if f.Enhanced {
		if pdLen < MPAEnhancedWordSize {
			return MPAFrame{}, 0, ErrMPAEnhancedWord
		}
		ird := binary.BigEndian.Uint16(pd[0:2])
		ord := binary.BigEndian.Uint16(pd[2:4])
		f.IRD = ird & mpaIRDORDMax
		f.ORD = ord & mpaIRDORDMax
		f.PeerToPeer = ird&mpaP2P != 0
		if ird&mpaSendRTR != 0 {
			f.RTR |= RTRSend
		}
		if ord&mpaWriteRTR != 0 {
			f.RTR |= RTRWrite
		}
		if ord&mpaReadRTR != 0 {
			f.RTR |= RTRRead
		}
		pd = pd[MPAEnhancedWordSize:]
	}
	if len(pd) > 0 {
		f.PrivateData = pd
	}
	if f.Markers {
		return f, n, ErrMPAMarkers
	}
	return f, n, nil
}
