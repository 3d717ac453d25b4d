//go:build linux || windows || darwin || freebsd

package shm

import (
	"encoding/binary"
	"errors"
)

// Connection setup messages, one per SOCK_SEQPACKET message on the
// connection's Unix socket. Integers are little-endian.
//
//	request  (active):  'R' magic[7] protocol i32 ird i32 ord i32 ringSize u32
//	                    probeAddr u64 probe[16] pdLen u16 pd
//	                    + SCM_RIGHTS: memfd, then the four eventfds
//	accept   (passive): 'A' ird i32 ord i32 caps u8 probeAddr u64 probe[16] pdLen u16 pd
//	reject   (either):  'J' pdLen u16 pd
//	ready    (active):  'Y' caps u8
//	segment  (either):  'M' id u32 size u64 + SCM_RIGHTS: a memfd (wtable.go)
//	short    (passive): 'N' resource u8: the request cannot be served for
//	                    lack of a resource (shortFDs: file descriptors,
//	                    shortMemory: memory or mappings); then close
//
// caps says what the sender of the message can do with the receiver's
// memory, as its probe found (process_vm_readv of the receiver's probe
// bytes worked): capRDMA, the receiver may name its own buffers by address
// in Read and Write requests (the sender's OneSided is OneSidedAuto);
// capSend, the receiver may send large Sends by rendezvous (the sender's
// SendThreshold is not negative). Other bits are 0.
const (
	msgRequest = 'R'
	msgAccept  = 'A'
	msgReject  = 'J'
	msgReady   = 'Y'
	msgSegment = 'M'
	msgShort   = 'N'
)

// The resources of a short message.
const (
	shortFDs    = 1
	shortMemory = 2
)

// The capability bits of accept and ready.
const (
	capRDMA = 1
	capSend = 2
)

var magic = [7]byte{'g', 'd', 's', 'h', 'm', '0', '4'}

// The eventfds, in the order the request passes them.
const (
	bellA2PData = iota // the passive reader sleeps on it
	bellA2PRoom        // the active writer sleeps on it
	bellP2AData        // the active reader sleeps on it
	bellP2ARoom        // the passive writer sleeps on it
	numBells
)

// maxMessage bounds a setup message.
const maxMessage = 64 + MaxPrivateData

type request struct {
	protocol, ird, ord int
	ringSize           int
	probeAddr          uint64
	probe              [16]byte
	pd                 []byte
}

func (r *request) append(b []byte) []byte {
	b = append(b, msgRequest)
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.protocol)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.ird)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.ord)))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.ringSize))
	b = binary.LittleEndian.AppendUint64(b, r.probeAddr)
	b = append(b, r.probe[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.pd)))
	return append(b, r.pd...)
}

var errMessage = errors.New("shm: malformed connection setup message")

// readLimit clamps a read limit the peer announced.
func readLimit(v uint32) int { return int(min(max(int32(v), 0), maxReadLimit)) }

func parseRequest(b []byte) (*request, error) {
	if len(b) < 1+7+16+8+16+2 || b[0] != msgRequest || [7]byte(b[1:8]) != magic {
		return nil, errMessage
	}
	r := &request{}
	p := b[8:]
	r.protocol = int(int32(binary.LittleEndian.Uint32(p)))
	r.ird = readLimit(binary.LittleEndian.Uint32(p[4:]))
	r.ord = readLimit(binary.LittleEndian.Uint32(p[8:]))
	r.ringSize = int(binary.LittleEndian.Uint32(p[12:]))
	r.probeAddr = binary.LittleEndian.Uint64(p[16:])
	copy(r.probe[:], p[24:40])
	n := int(binary.LittleEndian.Uint16(p[40:]))
	p = p[42:]
	if n > MaxPrivateData || n != len(p) {
		return nil, errMessage
	}
	r.pd = append([]byte(nil), p...)
	return r, nil
}

type reply struct {
	ird, ord  int
	caps      byte
	probeAddr uint64
	probe     [16]byte
	pd        []byte
}

func (r *reply) append(b []byte) []byte {
	b = append(b, msgAccept)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.ird)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.ord)))
	b = append(b, r.caps)
	b = binary.LittleEndian.AppendUint64(b, r.probeAddr)
	b = append(b, r.probe[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.pd)))
	return append(b, r.pd...)
}

func parseReply(b []byte) (*reply, error) {
	if len(b) < 1+8+1+8+16+2 || b[0] != msgAccept {
		return nil, errMessage
	}
	r := &reply{}
	p := b[1:]
	r.ird = readLimit(binary.LittleEndian.Uint32(p))
	r.ord = readLimit(binary.LittleEndian.Uint32(p[4:]))
	r.caps = p[8]
	r.probeAddr = binary.LittleEndian.Uint64(p[9:])
	copy(r.probe[:], p[17:33])
	n := int(binary.LittleEndian.Uint16(p[33:]))
	p = p[35:]
	if n > MaxPrivateData || n != len(p) {
		return nil, errMessage
	}
	r.pd = append([]byte(nil), p...)
	return r, nil
}

func appendReject(b, pd []byte) []byte {
	b = append(b, msgReject)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(pd)))
	return append(b, pd...)
}

func parseReject(b []byte) ([]byte, error) {
	if len(b) < 3 || b[0] != msgReject {
		return nil, errMessage
	}
	n := int(binary.LittleEndian.Uint16(b[1:]))
	if n > MaxPrivateData || n != len(b)-3 {
		return nil, errMessage
	}
	return append([]byte(nil), b[3:]...), nil
}

var errEOF = errors.New("shm: the peer closed the connection")

// errNoDescriptors: a setup message came without the descriptors it
// passed, as when this process is out of them.
var errNoDescriptors = errors.New("shm: out of file descriptors: a connection's descriptors could not be received")
