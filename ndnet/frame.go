package ndnet

// The wire format of an ndnet stream: the connection parameters carried in
// the ND private data, and the frames carried by ND Sends. Pure functions
// over bytes, no state; docs/ndnet-protocol.md describes every field.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/godirect/nd"
)

// Protocol is the ND protocol number ndnet listens and connects with.
const Protocol = 78

// Version is the protocol version this package speaks.
const Version = 1

// setupMagic opens the connection parameters: "NDNT".
const setupMagic = 0x4E444E54

// SetupSize is the size of the connection parameters in the private data.
const SetupSize = 16

// setup is the connection parameters each side offers in its private data.
type setup struct {
	Version   uint8
	Depth     uint16 // data frames the sender's receive slots take before it returns credit
	FrameSize uint32 // bytes of one of the sender's receive slots (header and payload)
	RingSize  uint32 // bytes of the receive ring the sender offers (0: none)
}

// putSetup writes s into b (at least SetupSize bytes).
func putSetup(b []byte, s setup) {
	_ = b[SetupSize-1]
	binary.BigEndian.PutUint32(b[0:4], setupMagic)
	b[4] = s.Version
	b[5] = 0
	binary.BigEndian.PutUint16(b[6:8], s.Depth)
	binary.BigEndian.PutUint32(b[8:12], s.FrameSize)
	binary.BigEndian.PutUint32(b[12:16], s.RingSize)
}

// Bounds the parameters must respect.
const (
	minDepth     = 2
	maxDepth     = 4096
	minFrameSize = HeaderSize + 64
	maxFrameSize = 1 << 20
	minRingSize  = 4096
	maxRingSize  = 1 << 30
)

var (
	errSetupSize    = errors.New("ndnet: connection parameters: wrong size")
	errSetupMagic   = errors.New("ndnet: connection parameters: not an ndnet peer")
	errSetupVersion = errors.New("ndnet: connection parameters: unsupported version")
	errSetupValue   = errors.New("ndnet: connection parameters: value out of range")
)

// parseSetup decodes and checks the connection parameters in b.
func parseSetup(b []byte) (setup, error) {
	if len(b) < SetupSize {
		return setup{}, errSetupSize
	}
	if binary.BigEndian.Uint32(b[0:4]) != setupMagic {
		return setup{}, errSetupMagic
	}
	s := setup{
		Version:   b[4],
		Depth:     binary.BigEndian.Uint16(b[6:8]),
		FrameSize: binary.BigEndian.Uint32(b[8:12]),
		RingSize:  binary.BigEndian.Uint32(b[12:16]),
	}
	if s.Version != Version || b[5] != 0 {
		return setup{}, errSetupVersion
	}
	if s.Depth < minDepth || s.Depth > maxDepth ||
		s.FrameSize < minFrameSize || s.FrameSize > maxFrameSize ||
		(s.RingSize != 0 && (s.RingSize < minRingSize || s.RingSize > maxRingSize || s.RingSize&(s.RingSize-1) != 0)) {
		return setup{}, errSetupValue
	}
	return s, nil
}

// frameType is the first byte of a frame.
type frameType uint8

// The frame types.
const (
	frameHello  frameType = 1 // payload: the MWDescriptor of the sender's receive ring (or none)
	frameData   frameType = 2 // payload: stream bytes
	frameRing   frameType = 3 // Length stream bytes were RDMA-written into the receiver's ring
	frameCredit frameType = 4 // acknowledgments only
	frameFin    frameType = 5 // the sender writes no more; flagClosed: nor reads
	frameClose  frameType = 6 // the sender, which sent frameFin, reads no more
	frameFinAck frameType = 7 // the sender processed the receiver's frameFin
)

// flagClosed on frameFin: the sender also stopped reading.
const flagClosed = 0x01

// HeaderSize is the size of a frame header.
const HeaderSize = 24

// header is a decoded frame header. The three acknowledgments are
// cumulative counts from the connection's start, carried by every frame.
type header struct {
	Type      frameType
	Flags     uint8
	Length    uint32 // frameData: payload bytes; frameRing: ring bytes; frameHello: payload bytes
	SlotAck   uint32 // data-class frames of the receiver whose slots the sender has posted again
	CreditAck uint32 // frameCredit frames of the receiver the sender has processed
	RingAck   uint64 // bytes of the sender's receive ring it has consumed
}

// putHeader writes h into b (at least HeaderSize bytes).
func putHeader(b []byte, h header) {
	_ = b[HeaderSize-1]
	b[0] = byte(h.Type)
	b[1] = h.Flags
	b[2], b[3] = 0, 0
	binary.BigEndian.PutUint32(b[4:8], h.Length)
	binary.BigEndian.PutUint32(b[8:12], h.SlotAck)
	binary.BigEndian.PutUint32(b[12:16], h.CreditAck)
	binary.BigEndian.PutUint64(b[16:24], h.RingAck)
}

// frameError is a malformed frame.
type frameError struct{ reason string }

func (e *frameError) Error() string { return "ndnet: malformed frame: " + e.reason }

var (
	errShortFrame  = &frameError{"shorter than its header"}
	errFrameType   = &frameError{"unknown type"}
	errFrameFlags  = &frameError{"flags not defined for its type"}
	errReserved    = &frameError{"reserved bytes not zero"}
	errFrameLength = &frameError{"length disagrees with the bytes received"}
	errHelloLength = &frameError{"hello payload is neither empty nor a memory window descriptor"}
	errEmptyFrame  = &frameError{"data frame carries no bytes"}
)

// parseFrame decodes the frame in b, exactly the bytes one Receive got, and
// returns its header and payload (a subslice of b). It checks everything a
// frame can be checked for on its own; the acknowledgments and ring lengths
// are checked against the connection's state by the caller.
func parseFrame(b []byte) (header, []byte, error) {
	if len(b) < HeaderSize {
		return header{}, nil, errShortFrame
	}
	h := header{
		Type:      frameType(b[0]),
		Flags:     b[1],
		Length:    binary.BigEndian.Uint32(b[4:8]),
		SlotAck:   binary.BigEndian.Uint32(b[8:12]),
		CreditAck: binary.BigEndian.Uint32(b[12:16]),
		RingAck:   binary.BigEndian.Uint64(b[16:24]),
	}
	if b[2] != 0 || b[3] != 0 {
		return header{}, nil, errReserved
	}
	payload := b[HeaderSize:]
	switch h.Type {
	case frameHello:
		if int64(h.Length) != int64(len(payload)) {
			return header{}, nil, errFrameLength
		}
		if h.Length != 0 && h.Length != nd.MWDescriptorSize {
			return header{}, nil, errHelloLength
		}
	case frameData:
		if int64(h.Length) != int64(len(payload)) {
			return header{}, nil, errFrameLength
		}
		if h.Length == 0 {
			return header{}, nil, errEmptyFrame
		}
	case frameRing:
		if len(payload) != 0 {
			return header{}, nil, errFrameLength
		}
		if h.Length == 0 {
			return header{}, nil, errEmptyFrame
		}
	case frameCredit, frameClose, frameFinAck, frameFin:
		if len(payload) != 0 || h.Length != 0 {
			return header{}, nil, errFrameLength
		}
	default:
		return header{}, nil, errFrameType
	}
	if h.Flags != 0 && !(h.Type == frameFin && h.Flags == flagClosed) {
		return header{}, nil, errFrameFlags
	}
	return h, payload, nil
}

func (t frameType) String() string {
	switch t {
	case frameHello:
		return "hello"
	case frameData:
		return "data"
	case frameRing:
		return "ring"
	case frameCredit:
		return "credit"
	case frameFin:
		return "fin"
	case frameClose:
		return "close"
	case frameFinAck:
		return "finack"
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}
