package iwarp

import "math"

// Reassembler checks that the inbound segments of one RDMAP stream follow
// the DDP sequencing rules Linux siw enforces, so the caller can place each
// payload directly: untagged messages carry the next MSN of their queue
// (starting at 1), start at MO 0 and continue contiguously; tagged messages
// keep their STag and advance TO contiguously; no new message of a buffer
// model starts while another of the same model is unfinished (a tagged and
// an untagged message may interleave). Buffer lookup, STag validation and
// bounds are the caller's business.
//
// The zero value is ready for a new stream. A Reassembler must not be used
// by several goroutines at once; it never allocates.
type Reassembler struct {
	done [3]uint32 // completed messages per untagged queue

	uActive bool
	uOp     Opcode
	uQN     uint32
	uMSN    uint32
	uMO     uint32

	tActive bool
	tOp     Opcode
	tSTag   uint32
	tNext   uint64
}

// NextMSN returns the MSN the next new message on untagged queue qn must
// carry, or 0 for an unknown queue.
func (r *Reassembler) NextMSN(qn uint32) uint32 {
	if qn >= uint32(len(r.done)) {
		return 0
	}
	return r.done[qn] + 1
}

// Accept validates segment h carrying payloadLen bytes against the stream
// state and records it. first reports whether h starts a new message (the
// moment to pick a receive buffer or validate an STag). On error the state
// is unchanged; the errors are ErrSegmentLength (negative payloadLen),
// ErrInvalidQN (queue does not match the opcode), ErrInvalidMSN,
// ErrInvalidMO, ErrMessageTooLong (MO would overflow), ErrInterleaved,
// ErrTaggedContinuation and ErrTOWrap.
func (r *Reassembler) Accept(h *SegmentHeader, payloadLen int) (first bool, err error) {
	if payloadLen < 0 {
		return false, ErrSegmentLength
	}
	if !h.Opcode.Valid() {
		return false, ErrOpcode
	}
	if h.Opcode.Tagged() {
		return r.acceptTagged(h, payloadLen)
	}
	return r.acceptUntagged(h, payloadLen)
}

func (r *Reassembler) acceptTagged(h *SegmentHeader, payloadLen int) (bool, error) {
	first := !r.tActive
	if !first {
		if h.Opcode != r.tOp {
			return false, ErrInterleaved
		}
		if h.STag != r.tSTag || h.TO != r.tNext {
			return false, ErrTaggedContinuation
		}
	}
	room := math.MaxUint64 - h.TO
	if payloadLen > 0 && uint64(payloadLen-1) > room {
		return false, ErrTOWrap
	}
	if !h.Last && uint64(payloadLen) > room {
		return false, ErrTOWrap
	}
	if h.Last {
		r.tActive = false
		return first, nil
	}
	r.tActive, r.tOp, r.tSTag, r.tNext = true, h.Opcode, h.STag, h.TO+uint64(payloadLen)
	return first, nil
}

func (r *Reassembler) acceptUntagged(h *SegmentHeader, payloadLen int) (bool, error) {
	if h.QN != h.Opcode.QN() {
		return false, ErrInvalidQN
	}
	first := !r.uActive
	if first {
		if h.MSN != r.done[h.QN]+1 {
			return false, ErrInvalidMSN
		}
		if h.MO != 0 {
			return false, ErrInvalidMO
		}
	} else {
		if h.QN != r.uQN || h.Opcode != r.uOp {
			return false, ErrInterleaved
		}
		if h.MSN != r.uMSN {
			return false, ErrInvalidMSN
		}
		if h.MO != r.uMO {
			return false, ErrInvalidMO
		}
	}
	end := uint64(h.MO) + uint64(payloadLen)
	if end > 1<<32 || (!h.Last && end == 1<<32) {
		return false, ErrMessageTooLong
	}
	if h.Last {
		r.uActive = false
		r.done[h.QN]++
		return first, nil
	}
	r.uActive, r.uOp, r.uQN, r.uMSN, r.uMO = true, h.Opcode, h.QN, h.MSN, uint32(end)
	return first, nil
}
