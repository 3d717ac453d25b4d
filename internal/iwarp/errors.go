package iwarp

import "errors"

// Sentinel errors returned by the encoders and decoders of this package.
// They are plain values: compare with == or errors.Is.
var (
	// ErrShortBuffer reports that a decoder needs more input. Decoders that
	// return it also return the total number of bytes the input must hold
	// before the call can make progress.
	ErrShortBuffer = errors.New("iwarp: need more bytes")

	// ErrMPAKey reports an MPA frame whose 16-byte key is neither the
	// request key nor the reply key.
	ErrMPAKey = errors.New("iwarp: bad MPA frame key")
	// ErrMPAKind reports an MPAFrame whose Kind is neither MPARequest nor
	// MPAReply, or a request with the Reject flag set (encoder only).
	ErrMPAKind = errors.New("iwarp: bad MPA frame kind")
	// ErrMPARevision reports an MPA revision other than 1 or 2, or the
	// enhanced (H) word requested with a revision other than 2 (encoder).
	ErrMPARevision = errors.New("iwarp: unsupported MPA revision")
	// ErrMPAMarkers reports a peer frame with the M (markers) flag set.
	// ParseMPAFrame returns the fully decoded frame and its length with
	// this error so the caller can answer with a reject.
	ErrMPAMarkers = errors.New("iwarp: peer requested MPA markers (unsupported)")
	// ErrMPAPrivateDataTooLong reports private data (including the IRD/ORD
	// word) longer than MPAMaxPrivateData bytes.
	ErrMPAPrivateDataTooLong = errors.New("iwarp: MPA private data too long")
	// ErrMPAEnhancedWord reports a revision 2 frame with the H flag set
	// whose private data is too short to hold the 4-byte IRD/ORD word.
	ErrMPAEnhancedWord = errors.New("iwarp: MPA enhanced frame without IRD/ORD word")
	// ErrMPAIRDORDRange reports an IRD or ORD above MaxIRDORD (encoder).
	ErrMPAIRDORDRange = errors.New("iwarp: MPA IRD/ORD out of range")

	// ErrFPDULength reports an FPDU whose ULPDU_Length is smaller than the
	// smallest DDP header, or a ULPDU length that does not fit the DDP
	// header it must carry.
	ErrFPDULength = errors.New("iwarp: bad FPDU length")
	// ErrFPDUTooLong reports a ULPDU that would exceed MaxULPDULength bytes.
	ErrFPDUTooLong = errors.New("iwarp: FPDU too long")
	// ErrFPDUPad reports non-zero FPDU pad bytes.
	ErrFPDUPad = errors.New("iwarp: non-zero FPDU pad")
	// ErrFPDUCRC reports an FPDU whose CRC32c does not match its content.
	ErrFPDUCRC = errors.New("iwarp: FPDU CRC mismatch")

	// ErrDDPVersion reports a DDP control byte with a version other than 1.
	ErrDDPVersion = errors.New("iwarp: bad DDP version")
	// ErrRDMAPVersion reports an RDMAP control byte with a version other
	// than 1.
	ErrRDMAPVersion = errors.New("iwarp: bad RDMAP version")
	// ErrOpcode reports an unknown RDMAP opcode, or an opcode used with the
	// wrong DDP buffer model (tagged versus untagged).
	ErrOpcode = errors.New("iwarp: unexpected RDMAP opcode")
	// ErrSegmentLength reports a ULPDU shorter than the DDP header its
	// control byte announces.
	ErrSegmentLength = errors.New("iwarp: DDP segment shorter than its header")
	// ErrSegmentSize reports a segment payload limit that is not positive or
	// does not fit one FPDU.
	ErrSegmentSize = errors.New("iwarp: bad DDP segment size")
	// ErrMessageTooLong reports an untagged message whose offsets would not
	// fit the 32-bit MO field, or a negative message length.
	ErrMessageTooLong = errors.New("iwarp: DDP message too long")
	// ErrTOWrap reports a tagged message whose offsets would wrap the
	// 64-bit tagged offset.
	ErrTOWrap = errors.New("iwarp: tagged offset wraps")

	// ErrInvalidQN reports an untagged segment on a queue other than the one
	// its opcode belongs to (queues 0, 1 and 2).
	ErrInvalidQN = errors.New("iwarp: invalid DDP queue number")
	// ErrInvalidMSN reports an untagged message that does not carry the
	// next expected message sequence number of its queue.
	ErrInvalidMSN = errors.New("iwarp: invalid DDP message sequence number")
	// ErrInvalidMO reports an untagged segment whose message offset does
	// not continue the bytes already received for its message.
	ErrInvalidMO = errors.New("iwarp: invalid DDP message offset")
	// ErrTaggedContinuation reports a tagged segment continuing a message
	// with a different STag or a non-contiguous tagged offset.
	ErrTaggedContinuation = errors.New("iwarp: tagged segment does not continue its message")
	// ErrInterleaved reports a segment of a new message arriving while a
	// message of the same buffer model is unfinished.
	ErrInterleaved = errors.New("iwarp: interleaved DDP messages")

	// ErrReadRequestLength reports a Read Request body that is not exactly
	// ReadRequestSize bytes, or a Read Request split over several segments.
	ErrReadRequestLength = errors.New("iwarp: bad RDMA Read Request length")
	// ErrTerminateLength reports a Terminate body too short for the fields
	// its header-control bits announce.
	ErrTerminateLength = errors.New("iwarp: truncated Terminate message")
	// ErrTerminateHeader reports a Terminate to encode whose copied DDP or
	// RDMAP header has an impossible length.
	ErrTerminateHeader = errors.New("iwarp: bad copied header in Terminate")
	// ErrRTRType reports an RTR type that is not exactly one of RTRSend,
	// RTRWrite and RTRRead.
	ErrRTRType = errors.New("iwarp: bad RTR type")
)
