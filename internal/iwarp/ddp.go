package iwarp

import "encoding/binary"

// DDP header sizes, counted from the DDP control byte (the MPA length field
// excluded). The RDMAP control byte is DDP's 8-bit RsvdULP field and is
// included.
const (
	TaggedHeaderSize   = 14 // control, RDMAP control, STag, TO
	UntaggedHeaderSize = 18 // control, RDMAP control, Inval STag, QN, MSN, MO
)

// SegmentHeader is the combined DDP + RDMAP header of one DDP segment.
//
// The DDP buffer model follows from Opcode: Write and Read Response are
// tagged (STag and TO are used), every other opcode is untagged
// (InvalidateSTag, QN, MSN and MO are used). Fields of the other model are
// ignored by the encoder and zero after decoding. The DDP and RDMAP
// versions are always 1 and reserved bits are sent as zero and ignored on
// receive.
type SegmentHeader struct {
	Opcode Opcode // RDMAP opcode
	Last   bool   // DDP L flag: last segment of its message

	STag uint32 // tagged: the data sink's steering tag
	TO   uint64 // tagged: tagged offset of this segment's first byte

	// InvalidateSTag is the untagged header's 32-bit RsvdULP field. It
	// carries the STag to invalidate for OpSendInvalidate and
	// OpSendSEInvalidate and should be zero otherwise; the decoder keeps
	// whatever was received.
	InvalidateSTag uint32
	QN             uint32 // untagged: queue number (QNSend, QNReadRequest, QNTerminate)
	MSN            uint32 // untagged: message sequence number, 1 for a queue's first message
	MO             uint32 // untagged: offset of this segment's first byte in its message
}

// Tagged reports whether h uses the tagged buffer model (see Opcode.Tagged).
func (h *SegmentHeader) Tagged() bool { return h.Opcode.Tagged() }

// Len returns the encoded size of h: TaggedHeaderSize or UntaggedHeaderSize.
func (h *SegmentHeader) Len() int {
	if h.Opcode.Tagged() {
		return TaggedHeaderSize
	}
	return UntaggedHeaderSize
}

// AppendSegmentHeader appends the 14- or 18-byte DDP + RDMAP header h to
// dst. It fails with ErrOpcode (dst unchanged) if h.Opcode is not a valid
// RFC 5040 opcode. It allocates only if dst lacks capacity and is safe for
// concurrent use.
func AppendSegmentHeader(dst []byte, h *SegmentHeader) ([]byte, error) {
	if !h.Opcode.Valid() {
		return dst, ErrOpcode
	}
	ctl := byte(ddpVersion)
	if h.Last {
		ctl |= ddpFlagLast
	}
	rdmap := byte(rdmapVersionedOpcode) | byte(h.Opcode)
	if h.Opcode.Tagged() {
		dst = append(dst, ctl|ddpFlagTagged, rdmap)
		dst = binary.BigEndian.AppendUint32(dst, h.STag)
		return binary.BigEndian.AppendUint64(dst, h.TO), nil
	}
	dst = append(dst, ctl, rdmap)
	dst = binary.BigEndian.AppendUint32(dst, h.InvalidateSTag)
	dst = binary.BigEndian.AppendUint32(dst, h.QN)
	dst = binary.BigEndian.AppendUint32(dst, h.MSN)
	return binary.BigEndian.AppendUint32(dst, h.MO), nil
}

// ParseSegmentHeader decodes the DDP + RDMAP header at the start of b (the
// first byte of a ULPDU) and returns it with its size.
//
// If b is too short it returns ErrShortBuffer and the size b must have
// (TaggedHeaderSize while b is empty, then the size announced by the T
// bit). Otherwise it fails with ErrDDPVersion, ErrRDMAPVersion or ErrOpcode
// (unknown opcode, or T bit not matching the opcode's buffer model). It does
// not allocate, never panics and is safe for concurrent use.
func ParseSegmentHeader(b []byte) (SegmentHeader, int, error) {
	if len(b) == 0 {
		return SegmentHeader{}, TaggedHeaderSize, ErrShortBuffer
	}
	ctl := b[0]
	tagged := ctl&ddpFlagTagged != 0
	n := UntaggedHeaderSize
	if tagged {
		n = TaggedHeaderSize
	}
	if len(b) < n {
		return SegmentHeader{}, n, ErrShortBuffer
	}
	if ctl&ddpVersionMask != ddpVersion {
		return SegmentHeader{}, 0, ErrDDPVersion
	}
	if b[1]>>rdmapVersionShift != rdmapVersion {
		return SegmentHeader{}, 0, ErrRDMAPVersion
	}
	h := SegmentHeader{Opcode: Opcode(b[1] & rdmapOpcodeMask), Last: ctl&ddpFlagLast != 0}
	if !h.Opcode.Valid() || h.Opcode.Tagged() != tagged {
		return SegmentHeader{}, 0, ErrOpcode
	}
	if tagged {
		h.STag = binary.BigEndian.Uint32(b[2:6])
		h.TO = binary.BigEndian.Uint64(b[6:14])
	} else {
		h.InvalidateSTag = binary.BigEndian.Uint32(b[2:6])
		h.QN = binary.BigEndian.Uint32(b[6:10])
		h.MSN = binary.BigEndian.Uint32(b[10:14])
		h.MO = binary.BigEndian.Uint32(b[14:18])
	}
	return h, n, nil
}

// Segment is one decoded DDP segment: its header and its payload. For a
// tagged segment the payload belongs at TO in the buffer named by STag; for
// an untagged one at offset MO of message MSN on queue QN. Last marks the
// final segment of the message.
type Segment struct {
	SegmentHeader
	Payload []byte // aliases the decoded ULPDU
}

// ParseSegment decodes a complete ULPDU (as returned by ParseFPDU) into its
// header and payload. A ULPDU shorter than its header gives
// ErrSegmentLength; header errors are those of ParseSegmentHeader. The
// payload aliases ulpdu. It does not allocate, never panics and is safe for
// concurrent use.
func ParseSegment(ulpdu []byte) (Segment, error) {
	h, n, err := ParseSegmentHeader(ulpdu)
	if err == ErrShortBuffer {
		return Segment{}, ErrSegmentLength
	}
	if err != nil {
		return Segment{}, err
	}
	return Segment{SegmentHeader: h, Payload: ulpdu[n:len(ulpdu):len(ulpdu)]}, nil
}
