package iwarp

import "encoding/binary"

// Opcode is an RDMAP opcode, the low 4 bits of the RDMAP control byte.
type Opcode uint8

// RDMAP opcodes (RFC 5040). Opcodes above OpTerminate (the RFC 7306
// extensions) are not supported by Linux siw nor by this package.
const (
	OpWrite            Opcode = 0 // RDMA Write (tagged)
	OpReadRequest      Opcode = 1 // RDMA Read Request (untagged, QN 1)
	OpReadResponse     Opcode = 2 // RDMA Read Response (tagged)
	OpSend             Opcode = 3 // Send (untagged, QN 0)
	OpSendInvalidate   Opcode = 4 // Send with Invalidate (untagged, QN 0)
	OpSendSE           Opcode = 5 // Send with Solicited Event (untagged, QN 0)
	OpSendSEInvalidate Opcode = 6 // Send with SE and Invalidate (untagged, QN 0)
	OpTerminate        Opcode = 7 // Terminate (untagged, QN 2)
)

// DDP untagged queue numbers used by RDMAP (RFC 5040).
const (
	QNSend        uint32 = 0 // Send family
	QNReadRequest uint32 = 1 // RDMA Read Requests
	QNTerminate   uint32 = 2 // Terminate messages
)

// Control-byte layout of DDP (byte 0 of the ULPDU) and RDMAP (byte 1).
const (
	maxOpcode            = OpTerminate
	rdmapVersion         = 1
	rdmapVersionShift    = 6
	rdmapOpcodeMask      = 0x0f
	rdmapVersionedOpcode = rdmapVersion << rdmapVersionShift
	ddpVersion           = 1
	ddpVersionMask       = 0x03
	ddpFlagTagged        = 0x80
	ddpFlagLast          = 0x40
)

var opcodeNames = [...]string{
	OpWrite:            "Write",
	OpReadRequest:      "ReadRequest",
	OpReadResponse:     "ReadResponse",
	OpSend:             "Send",
	OpSendInvalidate:   "SendInvalidate",
	OpSendSE:           "SendSE",
	OpSendSEInvalidate: "SendSEInvalidate",
	OpTerminate:        "Terminate",
}

// String returns the opcode's name, or "Opcode(invalid)" for an unknown one.
func (o Opcode) String() string {
	if o.Valid() {
		return opcodeNames[o]
	}
	return "Opcode(invalid)"
}

// Valid reports whether o is one of the eight RFC 5040 opcodes.
func (o Opcode) Valid() bool { return o <= maxOpcode }

// Tagged reports whether messages with opcode o use the DDP tagged buffer
// model (RDMA Write and RDMA Read Response).
func (o Opcode) Tagged() bool { return o == OpWrite || o == OpReadResponse }

// QN returns the DDP queue number untagged messages with opcode o use:
// QNSend for the Send family, QNReadRequest and QNTerminate. It returns
// QNSend for tagged or unknown opcodes; check Tagged and Valid first.
func (o Opcode) QN() uint32 {
	switch o {
	case OpReadRequest:
		return QNReadRequest
	case OpTerminate:
		return QNTerminate
	}
	return QNSend
}

// Invalidates reports whether o carries an Invalidate STag in the
// untagged header (Send with Invalidate, Send with SE and Invalidate).
func (o Opcode) Invalidates() bool { return o == OpSendInvalidate || o == OpSendSEInvalidate }

// ReadRequestSize is the size of an RDMA Read Request body (the payload of
// its untagged DDP segment).
const ReadRequestSize = 28

// ReadRequest is the body of an RDMA Read Request: the requester asks the
// responder to send Size bytes from SourceSTag/SourceTO, which the Read
// Response(s) will place at SinkSTag/SinkTO.
type ReadRequest struct {
	SinkSTag   uint32 // requester's buffer, echoed in the Read Response
	SinkTO     uint64 // tagged offset in the sink buffer
	Size       uint32 // RDMA Read message size in bytes
	SourceSTag uint32 // responder's buffer to read
	SourceTO   uint64 // tagged offset in the source buffer
}

// AppendReadRequest appends the 28-byte wire form of r to dst. It allocates
// only if dst lacks capacity and is safe for concurrent use.
func AppendReadRequest(dst []byte, r *ReadRequest) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.SinkSTag)
	dst = binary.BigEndian.AppendUint64(dst, r.SinkTO)
	dst = binary.BigEndian.AppendUint32(dst, r.Size)
	dst = binary.BigEndian.AppendUint32(dst, r.SourceSTag)
	return binary.BigEndian.AppendUint64(dst, r.SourceTO)
}

// ParseReadRequest decodes a Read Request body, the payload of an
// OpReadRequest segment. It fails with ErrReadRequestLength unless b is
// exactly ReadRequestSize bytes. It does not allocate, never panics and is
// safe for concurrent use.
func ParseReadRequest(b []byte) (ReadRequest, error) {
	if len(b) != ReadRequestSize {
		return ReadRequest{}, ErrReadRequestLength
	}
	return decodeReadRequest(b), nil
}

// decodeReadRequest decodes the first ReadRequestSize bytes of b, which
// the caller has checked to be long enough.
func decodeReadRequest(b []byte) ReadRequest {
	b = b[:ReadRequestSize]
	return ReadRequest{
		SinkSTag:   binary.BigEndian.Uint32(b[0:4]),
		SinkTO:     binary.BigEndian.Uint64(b[4:12]),
		Size:       binary.BigEndian.Uint32(b[12:16]),
		SourceSTag: binary.BigEndian.Uint32(b[16:20]),
		SourceTO:   binary.BigEndian.Uint64(b[20:28]),
	}
}

// RTRWriteSTag is the STag Linux siw puts in (and this package uses for)
// the zero-length RDMA Write sent as Write RTR. Receivers must accept
// zero-length Writes without STag validation.
const RTRWriteSTag = 1

// AppendRTR appends the complete FPDU (length, header, CRC field) of the
// RFC 6581 ready-to-receive message of type t to dst, as Linux siw sends
// and accepts it:
//
//   - RTRWrite: zero-length RDMA Write, STag RTRWriteSTag, TO 0.
//   - RTRRead: zero-length RDMA Read Request, MSN 1, all fields zero except
//     source STag RTRWriteSTag; it consumes Read Request MSN 1 and one ORD
//     slot until the zero-length Read Response arrives.
//   - RTRSend: zero-length Send with MSN 1 (needs a posted receive and
//     consumes Send MSN 1).
//
// crcOn selects a real CRC32c or a zero CRC field. t must be exactly one
// type, else ErrRTRType (dst unchanged). It allocates only if dst lacks
// capacity and is safe for concurrent use.
func AppendRTR(dst []byte, t RTRFlags, crcOn bool) ([]byte, error) {
	var h SegmentHeader
	var body []byte
	var rr [ReadRequestSize]byte
	switch t {
	case RTRWrite:
		h = SegmentHeader{Opcode: OpWrite, Last: true, STag: RTRWriteSTag}
	case RTRRead:
		h = SegmentHeader{Opcode: OpReadRequest, Last: true, QN: QNReadRequest, MSN: 1}
		body = AppendReadRequest(rr[:0], &ReadRequest{SourceSTag: RTRWriteSTag})
	case RTRSend:
		h = SegmentHeader{Opcode: OpSend, Last: true, QN: QNSend, MSN: 1}
	default:
		return dst, ErrRTRType
	}
	return AppendFPDUSegment(dst, &h, body, crcOn)
}
