//go:build linux || windows || darwin || freebsd

package shm

import (
	"encoding/binary"
	"net/netip"
)

// The tails of the setup messages on Windows (setup_windows.go), where a
// pipe message carries what Linux passes beside a message or reads from
// the socket's name:
//
//	message:  body | handle u64 ... | count u8      (at most maxHandles)
//	request's body: request | active address [16] | active port u16
//
// They are pure functions over bytes, fuzzed with the setup messages on
// every platform.

// maxHandles bounds the handles of one setup message (the request's five).
const maxHandles = 1 + numBells

// appendHandleValues appends the handle values vals and their count.
func appendHandleValues(b []byte, vals []uint64) []byte {
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return append(b, byte(len(vals)))
}

// splitHandleValues splits a message into its body (at least one byte) and
// its handle values (8 bytes each, little-endian; count of them).
func splitHandleValues(msg []byte) (body, vals []byte, count int, ok bool) {
	if len(msg) < 2 {
		return nil, nil, 0, false
	}
	k := int(msg[len(msg)-1])
	if k > maxHandles || len(msg) < 2+8*k {
		return nil, nil, 0, false
	}
	end := len(msg) - 1
	return msg[:end-8*k], msg[end-8*k : end], k, true
}

// activeTail is the size of the request's tail.
const activeTail = 16 + 2

// appendActive appends the active side's address and port to a request.
func appendActive(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().As16()
	b = append(b, a[:]...)
	return binary.LittleEndian.AppendUint16(b, ap.Port())
}

// splitActive splits a request's body into the request and the active
// side's address and port.
func splitActive(b []byte) (req []byte, ap netip.AddrPort, ok bool) {
	if len(b) <= activeTail {
		return nil, netip.AddrPort{}, false
	}
	t := b[len(b)-activeTail:]
	a := netip.AddrFrom16([16]byte(t)).Unmap()
	return b[:len(b)-activeTail], netip.AddrPortFrom(a, binary.LittleEndian.Uint16(t[16:])), true
}
