package iwarp

import "encoding/binary"

// FPDU geometry (RFC 5044 framing without markers, the only mode used).
const (
	// FPDULengthSize is the size of the ULPDU_Length field opening an FPDU.
	FPDULengthSize = 2
	// MaxULPDULength is the largest ULPDU (DDP header plus payload) one
	// FPDU carries.
	MaxULPDULength = 65535
	// MinULPDULength is the smallest ULPDU this package accepts: a tagged
	// DDP header with no payload.
	MinULPDULength = TaggedHeaderSize
	// MinFPDUHeaderSize is how many bytes a stream reader can always read
	// first without running past the current FPDU: the length field plus a
	// tagged header (an untagged header needs 4 more).
	MinFPDUHeaderSize = FPDULengthSize + TaggedHeaderSize
	// MinFPDUSize is the size of the smallest valid FPDU.
	MinFPDUSize = FPDULengthSize + MinULPDULength + CRCSize
	// MaxFPDUTrailerSize is the largest pad-plus-CRC trailer (3 + 4).
	MaxFPDUTrailerSize = 3 + CRCSize
)

// FPDUPad returns the number of zero pad bytes that follow a ULPDU of
// ulpduLen bytes, so that length field, ULPDU and pad end on a 4-byte
// boundary. It is safe for concurrent use.
func FPDUPad(ulpduLen int) int { return -(FPDULengthSize + ulpduLen) & 3 }

// FPDUSize returns the total wire size of an FPDU carrying a ULPDU of
// ulpduLen bytes: length field, ULPDU, pad and CRC field. It is safe for
// concurrent use.
func FPDUSize(ulpduLen int) int {
	return FPDULengthSize + ulpduLen + FPDUPad(ulpduLen) + CRCSize
}

// FPDUOpcode returns the RDMAP opcode field of the FPDU that b starts with
// (at least FPDULengthSize+2 bytes), unchecked: ParseFPDUHeader validates
// it. It is safe for concurrent use.
func FPDUOpcode(b []byte) Opcode {
	return Opcode(b[FPDULengthSize+1] & rdmapOpcodeMask)
}

// FPDUTrailerSize returns the pad-plus-CRC size following a ULPDU of
// ulpduLen bytes. It is safe for concurrent use.
func FPDUTrailerSize(ulpduLen int) int { return FPDUPad(ulpduLen) + CRCSize }

// AppendFPDUHeader appends the start of an FPDU to dst: the ULPDU_Length
// field (h.Len() + payloadLen) and the DDP + RDMAP header h. The payload and
// then AppendFPDUTrailer's bytes must follow on the wire; the payload itself
// stays in the caller's slices (for writev). It fails with ErrOpcode for an
// invalid opcode and ErrFPDUTooLong if payloadLen is negative or the ULPDU
// would exceed MaxULPDULength; dst is then unchanged. It allocates only if
// dst lacks capacity and is safe for concurrent use.
func AppendFPDUHeader(dst []byte, h *SegmentHeader, payloadLen int) ([]byte, error) {
	if !h.Opcode.Valid() {
		return dst, ErrOpcode
	}
	ulpdu := h.Len() + payloadLen
	if payloadLen < 0 || ulpdu > MaxULPDULength {
		return dst, ErrFPDUTooLong
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(ulpdu))
	return AppendSegmentHeader(dst, h)
}

// AppendFPDUTrailer appends the pad and CRC field that end an FPDU whose
// ULPDU is ulpduLen bytes long. crc must be the running CRC (UpdateCRC from
// 0) over every byte from the length field to the end of the ULPDU; the pad
// is added to it here and the result is written least-significant byte
// first. With crcOn false the CRC field is four zero bytes and crc is
// ignored. It appends at most MaxFPDUTrailerSize bytes, allocates only if
// dst lacks capacity and is safe for concurrent use.
func AppendFPDUTrailer(dst []byte, ulpduLen int, crc uint32, crcOn bool) []byte {
	pad := zeroPad[:FPDUPad(ulpduLen)]
	dst = append(dst, pad...)
	if !crcOn {
		return append(dst, 0, 0, 0, 0)
	}
	return binary.LittleEndian.AppendUint32(dst, UpdateCRC(crc, pad))
}

// AppendFPDU appends a complete FPDU carrying ulpdu (length field, ULPDU,
// pad, CRC field) to dst. It fails with ErrFPDUTooLong (dst unchanged) if
// ulpdu exceeds MaxULPDULength. It allocates only if dst lacks capacity and
// is safe for concurrent use.
func AppendFPDU(dst, ulpdu []byte, crcOn bool) ([]byte, error) {
	if len(ulpdu) > MaxULPDULength {
		return dst, ErrFPDUTooLong
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ulpdu)))
	dst = append(dst, ulpdu...)
	var crc uint32
	if crcOn {
		crc = ChecksumCRC(dst[start:])
	}
	return AppendFPDUTrailer(dst, len(ulpdu), crc, crcOn), nil
}

// AppendFPDUSegment appends a complete FPDU holding one DDP segment, header
// h followed by payload, to dst. Errors are those of AppendFPDUHeader (dst
// unchanged). It allocates only if dst lacks capacity and is safe for
// concurrent use.
func AppendFPDUSegment(dst []byte, h *SegmentHeader, payload []byte, crcOn bool) ([]byte, error) {
	start := len(dst)
	dst, err := AppendFPDUHeader(dst, h, len(payload))
	if err != nil {
		return dst, err
	}
	dst = append(dst, payload...)
	var crc uint32
	if crcOn {
		crc = ChecksumCRC(dst[start:])
	}
	return AppendFPDUTrailer(dst, h.Len()+len(payload), crc, crcOn), nil
}

// ParseFPDU checks the complete FPDU at the start of b and returns its
// ULPDU (aliasing b) and the FPDU's total size.
//
// If b does not yet hold the whole FPDU it returns ErrShortBuffer and the
// size b must have (MinFPDUSize until the length field is known, then
// FPDUSize of the announced length). It fails with ErrFPDULength if the
// ULPDU is shorter than MinULPDULength, ErrFPDUPad for non-zero pad bytes
// and, when crcOn, ErrFPDUCRC if the CRC field does not match; with crcOn
// false the CRC field is skipped unread. It does not allocate, never panics
// and is safe for concurrent use.
func ParseFPDU(b []byte, crcOn bool) ([]byte, int, error) {
	if len(b) < FPDULengthSize {
		return nil, MinFPDUSize, ErrShortBuffer
	}
	l := int(binary.BigEndian.Uint16(b))
	if l < MinULPDULength {
		return nil, 0, ErrFPDULength
	}
	n := FPDUSize(l)
	if len(b) < n {
		return nil, n, ErrShortBuffer
	}
	end := FPDULengthSize + l
	var crc uint32
	if crcOn {
		crc = ChecksumCRC(b[:end])
	}
	if err := CheckFPDUTrailer(b[end:n], l, crc, crcOn); err != nil {
		return nil, 0, err
	}
	return b[FPDULengthSize:end:end], n, nil
}

// FPDUHeader is the decoded fixed start of an FPDU: the ULPDU length and
// the DDP + RDMAP header of the segment it carries.
type FPDUHeader struct {
	ULPDULength int // value of the length field: header plus payload
	SegmentHeader
}

// HeaderLen returns the number of FPDU bytes before the payload: the length
// field plus the segment header.
func (h *FPDUHeader) HeaderLen() int { return FPDULengthSize + h.SegmentHeader.Len() }

// PayloadLen returns the number of payload bytes that follow the header.
func (h *FPDUHeader) PayloadLen() int { return h.ULPDULength - h.SegmentHeader.Len() }

// TrailerLen returns the number of pad and CRC bytes that follow the
// payload.
func (h *FPDUHeader) TrailerLen() int { return FPDUTrailerSize(h.ULPDULength) }

// Size returns the FPDU's total size on the wire.
func (h *FPDUHeader) Size() int { return FPDUSize(h.ULPDULength) }

// ParseFPDUHeader decodes the length field and segment header at the start
// of b, for receivers that place the payload straight into its final
// buffer: read MinFPDUHeaderSize bytes, call ParseFPDUHeader (it returns
// ErrShortBuffer and the size needed, 20, for an untagged header), then
// read PayloadLen bytes into place and TrailerLen bytes for
// CheckFPDUTrailer, chaining UpdateCRC over b[:n] and the payload.
//
// It returns the header and n, the header's size on the wire. It fails with
// ErrFPDULength if the length field is smaller than the header the T bit
// announces, and otherwise with the errors of ParseSegmentHeader. It does
// not allocate, never panics and is safe for concurrent use.
func ParseFPDUHeader(b []byte) (FPDUHeader, int, error) {
	if len(b) < MinFPDUHeaderSize {
		return FPDUHeader{}, MinFPDUHeaderSize, ErrShortBuffer
	}
	l := int(binary.BigEndian.Uint16(b))
	need := TaggedHeaderSize
	if b[FPDULengthSize]&ddpFlagTagged == 0 {
		need = UntaggedHeaderSize
	}
	if l < need {
		return FPDUHeader{}, 0, ErrFPDULength
	}
	sh, n, err := ParseSegmentHeader(b[FPDULengthSize:])
	if err == ErrShortBuffer {
		return FPDUHeader{}, FPDULengthSize + n, err
	}
	if err != nil {
		return FPDUHeader{}, 0, err
	}
	return FPDUHeader{ULPDULength: l, SegmentHeader: sh}, FPDULengthSize + n, nil
}

// CheckFPDUTrailer verifies the pad and CRC that end an FPDU whose ULPDU is
// ulpduLen bytes long. trailer must start at the first pad byte and hold at
// least FPDUTrailerSize(ulpduLen) bytes (else ErrShortBuffer); crc is the
// running CRC (UpdateCRC from 0) over the length field and the whole ULPDU.
// It returns ErrFPDUPad for non-zero pad bytes and, when crcOn, ErrFPDUCRC
// on a mismatch; with crcOn false the CRC field is not examined. It does not
// allocate and is safe for concurrent use.
func CheckFPDUTrailer(trailer []byte, ulpduLen int, crc uint32, crcOn bool) error {
	pad := FPDUPad(ulpduLen)
	if len(trailer) < pad+CRCSize {
		return ErrShortBuffer
	}
	for _, c := range trailer[:pad] {
		if c != 0 {
			return ErrFPDUPad
		}
	}
	if !crcOn {
		return nil
	}
	if UpdateCRC(crc, trailer[:pad]) != binary.LittleEndian.Uint32(trailer[pad:pad+CRCSize]) {
		return ErrFPDUCRC
	}
	return nil
}
