package iwarp

import "math"

// fpduOverhead is the per-FPDU cost beyond the segment header and payload
// when the payload is a multiple of 4: length field plus CRC field.
const fpduOverhead = FPDULengthSize + CRCSize

// SegmentPayloadLimit returns the largest segment payload for which the
// whole FPDU (length field, header, payload, pad, CRC) fits in maxFPDU
// bytes, rounded down to a multiple of 4 so that non-last segments carry no
// pad (as Linux siw cuts them), and never more than one ULPDU can hold.
// tagged selects the 14-byte tagged or 18-byte untagged header. It returns
// 0 when no payload byte fits. It is safe for concurrent use.
func SegmentPayloadLimit(maxFPDU int, tagged bool) int {
	h := UntaggedHeaderSize
	if tagged {
		h = TaggedHeaderSize
	}
	p := min(maxFPDU-fpduOverhead-h, MaxULPDULength-h) &^ 3
	return max(p, 0)
}

// Segmenter splits one outbound DDP message into segments. It is a small
// value type: create it with NewSegmenter and call Next until it reports
// false. It never allocates. A Segmenter must not be used by several
// goroutines at once, but distinct Segmenters are independent.
type Segmenter struct {
	next       SegmentHeader
	msgLen     int
	off        int
	maxPayload int
	done       bool
}

// NewSegmenter prepares the segmentation of a message of msgLen bytes into
// segments of at most maxPayload payload bytes each (see
// SegmentPayloadLimit). first supplies the opcode and the addressing of the
// first segment: STag and TO for tagged opcodes, InvalidateSTag, QN and MSN
// for untagged ones; its Last and MO fields are ignored (MO starts at 0).
// A zero-length message yields one segment with Last set.
//
// Errors: ErrOpcode (invalid opcode), ErrInvalidQN (untagged queue not the
// opcode's, see Opcode.QN), ErrSegmentSize (maxPayload below 1 or
// above what one ULPDU holds, or a Read Request or Terminate that would
// need more than one segment), ErrMessageTooLong (negative length, or an
// untagged message too long for 32-bit MOs), ErrTOWrap (TO + msgLen wraps
// the 64-bit tagged offset). It is safe for concurrent use.
func NewSegmenter(first SegmentHeader, msgLen, maxPayload int) (Segmenter, error) {
	if !first.Opcode.Valid() {
		return Segmenter{}, ErrOpcode
	}
	if maxPayload < 1 || maxPayload > MaxULPDULength-first.Len() {
		return Segmenter{}, ErrSegmentSize
	}
	if msgLen < 0 {
		return Segmenter{}, ErrMessageTooLong
	}
	if (first.Opcode == OpReadRequest || first.Opcode == OpTerminate) && msgLen > maxPayload {
		return Segmenter{}, ErrSegmentSize
	}
	if first.Opcode.Tagged() {
		if msgLen > 0 && uint64(msgLen-1) > math.MaxUint64-first.TO {
			return Segmenter{}, ErrTOWrap
		}
	} else {
		if first.QN != first.Opcode.QN() {
			return Segmenter{}, ErrInvalidQN
		}
		if uint64(msgLen) > math.MaxUint32 {
			return Segmenter{}, ErrMessageTooLong
		}
	}
	first.Last = false
	first.MO = 0
	return Segmenter{next: first, msgLen: msgLen, maxPayload: maxPayload}, nil
}

// Count returns the total number of segments the message is split into.
func (s *Segmenter) Count() int {
	if s.msgLen == 0 {
		return 1
	}
	return (s.msgLen + s.maxPayload - 1) / s.maxPayload
}

// Next returns the header of the next segment and the byte range
// [off, off+n) of the message it carries, with ok true; after the segment
// with Last set it returns ok false. Tagged segments advance TO and
// untagged ones MO by the previous segment's length; all other fields are
// those given to NewSegmenter.
func (s *Segmenter) Next() (h SegmentHeader, off, n int, ok bool) {
	if s.done {
		return SegmentHeader{}, 0, 0, false
	}
	off = s.off
	n = min(s.msgLen-off, s.maxPayload)
	h = s.next
	if off+n == s.msgLen {
		h.Last = true
		s.done = true
	}
	s.off += n
	if h.Opcode.Tagged() {
		s.next.TO += uint64(n)
	} else {
		s.next.MO += uint32(n)
	}
	return h, off, n, true
}
