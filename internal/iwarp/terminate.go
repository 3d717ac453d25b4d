package iwarp

import "encoding/binary"

// TermLayer is the layer field of a Terminate message: which protocol
// detected the error.
type TermLayer uint8

// Terminate layers (RFC 5040 section 8.1).
const (
	TermLayerRDMAP TermLayer = 0 // RDMAP
	TermLayerDDP   TermLayer = 1 // DDP
	TermLayerLLP   TermLayer = 2 // lower layer protocol: MPA over TCP
)

// TermEType is the error-type field of a Terminate message; its meaning
// depends on the layer.
type TermEType uint8

// Terminate error types per layer (RFC 5040 section 8.1, RFC 5041 section
// 7.2, RFC 5044 / RFC 6581 for the LLP layer).
const (
	TermRDMAPLocalCatastrophic TermEType = 0 // layer RDMAP: local catastrophic error
	TermRDMAPRemoteProtection  TermEType = 1 // layer RDMAP: remote protection error
	TermRDMAPRemoteOperation   TermEType = 2 // layer RDMAP: remote operation error

	TermDDPCatastrophic TermEType = 0 // layer DDP: local catastrophic error
	TermDDPTagged       TermEType = 1 // layer DDP: tagged buffer error
	TermDDPUntagged     TermEType = 2 // layer DDP: untagged buffer error

	TermLLPMPA TermEType = 0 // layer LLP: MPA error
)

// TermCode is the error-code field of a Terminate message; its meaning
// depends on layer and error type.
type TermCode uint8

// Terminate error codes for layer RDMAP (remote protection errors use 0x00
// to 0x04 and 0x09, remote operation errors 0x05 to 0x09, catastrophic
// errors any, 0xff when nothing fits). Linux siw answers an inbound Read
// Request it has no IRD room for with remote operation 0x07.
const (
	TermCodeInvalidSTag          TermCode = 0x00 // invalid STag
	TermCodeBaseBounds           TermCode = 0x01 // base or bounds violation
	TermCodeAccessRights         TermCode = 0x02 // access rights violation
	TermCodeSTagNotAssociated    TermCode = 0x03 // STag not associated with this RDMAP stream
	TermCodeTOWrap               TermCode = 0x04 // tagged offset wrap
	TermCodeRDMAPVersion         TermCode = 0x05 // invalid RDMAP version
	TermCodeUnexpectedOpcode     TermCode = 0x06 // unexpected or unknown opcode
	TermCodeCatastrophicStream   TermCode = 0x07 // catastrophic error, local to this stream
	TermCodeCatastrophicGlobal   TermCode = 0x08 // catastrophic error, global
	TermCodeSTagCannotInvalidate TermCode = 0x09 // STag cannot be invalidated
	TermCodeUnspecified          TermCode = 0xff // unspecified error
)

// Terminate error codes for layer DDP, error type TermDDPTagged.
const (
	TermCodeDDPInvalidSTag       TermCode = 0x00 // invalid STag
	TermCodeDDPBaseBounds        TermCode = 0x01 // base or bounds violation
	TermCodeDDPSTagNotAssociated TermCode = 0x02 // STag not associated with this DDP stream
	TermCodeDDPTOWrap            TermCode = 0x03 // tagged offset wrap
	TermCodeDDPTaggedVersion     TermCode = 0x04 // invalid DDP version (tagged)
)

// Terminate error codes for layer DDP, error type TermDDPUntagged. Linux
// siw reports both "no posted receive" and "message too long for the
// receive buffer" as TermCodeInvalidMSNNoBuffer.
const (
	TermCodeInvalidQN          TermCode = 0x01 // invalid queue number
	TermCodeInvalidMSNNoBuffer TermCode = 0x02 // invalid MSN: no buffer available
	TermCodeInvalidMSNRange    TermCode = 0x03 // invalid MSN: out of range
	TermCodeInvalidMO          TermCode = 0x04 // invalid message offset
	TermCodeMessageTooLong     TermCode = 0x05 // message too long for the receive buffer
	TermCodeDDPUntaggedVersion TermCode = 0x06 // invalid DDP version (untagged)
)

// TermCodeDDPCatastrophic is the code sent with layer DDP, error type
// TermDDPCatastrophic.
const TermCodeDDPCatastrophic TermCode = 0x00

// Terminate error codes for layer LLP, error type TermLLPMPA (0x05 to 0x07
// come from RFC 6581).
const (
	TermCodeLLPLost           TermCode = 0x01 // TCP connection closed or lost
	TermCodeCRCError          TermCode = 0x02 // MPA CRC error
	TermCodeMarkerMismatch    TermCode = 0x03 // marker and ULPDU length mismatch
	TermCodeInvalidMPAFrame   TermCode = 0x04 // invalid MPA request or reply
	TermCodeLocalCatastrophic TermCode = 0x05 // local catastrophic error
	TermCodeInsufficientIRD   TermCode = 0x06 // insufficient IRD resources
	TermCodeNoMatchingRTR     TermCode = 0x07 // no matching RTR type
)

// TermLayout selects the bit order of the Terminate control word.
type TermLayout uint8

// Terminate control word layouts.
const (
	// TermLayoutRFC is RFC 5040: byte 0 = Layer<<4 | EType, byte 2 bits
	// 7, 6, 5 = M, D, R.
	TermLayoutRFC TermLayout = 0
	// TermLayoutSiw is what Linux siw emits on little-endian hosts: byte 0
	// = EType<<4 | Layer, byte 2 bits 0, 1, 2 = M, D, R.
	TermLayoutSiw TermLayout = 1
)

// TerminateControlSize is the size of the Terminate control word.
const TerminateControlSize = 4

const (
	termRFCFlagM = 0x80
	termRFCFlagD = 0x40
	termRFCFlagR = 0x20
	termRFCFlags = termRFCFlagM | termRFCFlagD | termRFCFlagR
	termSiwFlagM = 0x01
	termSiwFlagD = 0x02
	termSiwFlagR = 0x04
	termSiwFlags = termSiwFlagM | termSiwFlagD | termSiwFlagR
	termSegLen   = 2
)

// Terminate is the body of an RDMAP Terminate message (the payload of an
// OpTerminate segment on QN 2, MSN 1, MO 0).
//
// DDPHeader, when present (the D bit), is the offending segment's DDP +
// RDMAP header, 14 bytes if its T bit is set and 18 otherwise, preceded on
// the wire by the 16-bit SegmentLength of the offending ULPDU.
// RDMAPHeader, when present (the R bit), is the offending Read Request's
// 28-byte body. Decoded slices alias the input.
type Terminate struct {
	Layer TermLayer
	EType TermEType
	Code  TermCode

	SegmentLengthValid bool   // M: SegmentLength is meaningful
	SegmentLength      uint16 // offending ULPDU length; sent only with DDPHeader
	DDPHeader          []byte // D: copied DDP header, nil if absent
	RDMAPHeader        []byte // R: copied Read Request body, nil if absent

	// Layout is the control-word bit order to encode, or the one the
	// decoder recognised (see ParseTerminate).
	Layout TermLayout
}

// Len returns the number of bytes AppendTerminate writes for t.
func (t *Terminate) Len() int {
	n := TerminateControlSize
	if len(t.DDPHeader) > 0 {
		n += termSegLen + len(t.DDPHeader)
	}
	return n + len(t.RDMAPHeader)
}

// SetOffending fills SegmentLengthValid, SegmentLength, DDPHeader and, for
// a Read Request, RDMAPHeader from the offending segment's ULPDU, aliasing
// it. A ULPDU too short to hold its header leaves the copied headers unset
// and only records the length.
func (t *Terminate) SetOffending(ulpdu []byte) {
	t.SegmentLengthValid = true
	t.SegmentLength = uint16(min(len(ulpdu), MaxULPDULength))
	t.DDPHeader, t.RDMAPHeader = nil, nil
	if len(ulpdu) == 0 {
		return
	}
	hl := UntaggedHeaderSize
	if ulpdu[0]&ddpFlagTagged != 0 {
		hl = TaggedHeaderSize
	}
	if len(ulpdu) < hl {
		return
	}
	t.DDPHeader = ulpdu[:hl:hl]
	if hl == UntaggedHeaderSize && Opcode(ulpdu[1]&rdmapOpcodeMask) == OpReadRequest &&
		len(ulpdu) >= hl+ReadRequestSize {
		t.RDMAPHeader = ulpdu[hl : hl+ReadRequestSize : hl+ReadRequestSize]
	}
}

// AppendTerminate appends the Terminate body t to dst in t.Layout's bit
// order. It fails with ErrTerminateHeader (dst unchanged) if Layer or EType
// do not fit 4 bits, if DDPHeader is non-empty but not 14 bytes with the T
// bit set or 18 bytes with it clear, or if RDMAPHeader is non-empty and not
// ReadRequestSize bytes. It allocates only if dst lacks capacity and is safe
// for concurrent use.
func AppendTerminate(dst []byte, t *Terminate) ([]byte, error) {
	if t.Layer > 0x0f || t.EType > 0x0f || t.Layout > TermLayoutSiw {
		return dst, ErrTerminateHeader
	}
	d, r := len(t.DDPHeader) > 0, len(t.RDMAPHeader) > 0
	if d {
		want := UntaggedHeaderSize
		if t.DDPHeader[0]&ddpFlagTagged != 0 {
			want = TaggedHeaderSize
		}
		if len(t.DDPHeader) != want {
			return dst, ErrTerminateHeader
		}
	}
	if r && len(t.RDMAPHeader) != ReadRequestSize {
		return dst, ErrTerminateHeader
	}
	var b0, b2 byte
	if t.Layout == TermLayoutSiw {
		b0 = byte(t.EType)<<4 | byte(t.Layer)
		b2 = flagIf(t.SegmentLengthValid, termSiwFlagM) | flagIf(d, termSiwFlagD) | flagIf(r, termSiwFlagR)
	} else {
		b0 = byte(t.Layer)<<4 | byte(t.EType)
		b2 = flagIf(t.SegmentLengthValid, termRFCFlagM) | flagIf(d, termRFCFlagD) | flagIf(r, termRFCFlagR)
	}
	dst = append(dst, b0, byte(t.Code), b2, 0)
	if d {
		dst = binary.BigEndian.AppendUint16(dst, t.SegmentLength)
		dst = append(dst, t.DDPHeader...)
	}
	return append(dst, t.RDMAPHeader...), nil
}

func flagIf(ok bool, bit byte) byte {
	if ok {
		return bit
	}
	return 0
}

// ParseTerminate decodes a Terminate body (the payload of an OpTerminate
// segment). It parses leniently, because Linux siw emits a byte-swapped
// control word: when the RFC M/D/R bits are all clear but siw's are not, or
// when no flag is set and only the swapped nibble order yields a valid
// layer, the siw layout is assumed and reported in Layout; otherwise the
// RFC layout is used. The control word is diagnostic only and both orders
// can be ambiguous, so never base protocol decisions on it. Reserved bits
// and bytes after the announced fields are ignored.
//
// It fails with ErrTerminateLength if b is shorter than the control word
// plus the fields its D and R bits announce. It does not allocate, never
// panics and is safe for concurrent use.
func ParseTerminate(b []byte) (Terminate, error) {
	if len(b) < TerminateControlSize {
		return Terminate{}, ErrTerminateLength
	}
	var t Terminate
	var d, r bool
	b0, b2 := b[0], b[2]
	siw := b2&termRFCFlags == 0 && (b2&termSiwFlags != 0 || (b0>>4 > byte(TermLayerLLP) && b0&0x0f <= byte(TermLayerLLP)))
	if siw {
		t.Layout = TermLayoutSiw
		t.Layer, t.EType = TermLayer(b0&0x0f), TermEType(b0>>4)
		t.SegmentLengthValid, d, r = b2&termSiwFlagM != 0, b2&termSiwFlagD != 0, b2&termSiwFlagR != 0
	} else {
		t.Layer, t.EType = TermLayer(b0>>4), TermEType(b0&0x0f)
		t.SegmentLengthValid, d, r = b2&termRFCFlagM != 0, b2&termRFCFlagD != 0, b2&termRFCFlagR != 0
	}
	t.Code = TermCode(b[1])
	off := TerminateControlSize
	if d {
		if len(b) < off+termSegLen+1 {
			return Terminate{}, ErrTerminateLength
		}
		t.SegmentLength = binary.BigEndian.Uint16(b[off:])
		off += termSegLen
		hl := UntaggedHeaderSize
		if b[off]&ddpFlagTagged != 0 {
			hl = TaggedHeaderSize
		}
		if len(b) < off+hl {
			return Terminate{}, ErrTerminateLength
		}
		t.DDPHeader = b[off : off+hl : off+hl]
		off += hl
	}
	if r {
		if len(b) < off+ReadRequestSize {
			return Terminate{}, ErrTerminateLength
		}
		t.RDMAPHeader = b[off : off+ReadRequestSize : off+ReadRequestSize]
	}
	return t, nil
}

// AppendTerminateFPDU appends a complete FPDU carrying Terminate t as
// message msn of queue QNTerminate (Linux siw expects MSN 1, the only
// Terminate of a stream). Errors are those of AppendTerminate (dst
// unchanged). It allocates only if dst lacks capacity and is safe for
// concurrent use.
func AppendTerminateFPDU(dst []byte, msn uint32, t *Terminate, crcOn bool) ([]byte, error) {
	var buf [TerminateControlSize + termSegLen + UntaggedHeaderSize + ReadRequestSize]byte
	body, err := AppendTerminate(buf[:0], t)
	if err != nil {
		return dst, err
	}
	h := SegmentHeader{Opcode: OpTerminate, Last: true, QN: QNTerminate, MSN: msn}
	return AppendFPDUSegment(dst, &h, body, crcOn)
}
