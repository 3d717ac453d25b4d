package ndabi

import (
	"encoding/binary"
	"net/netip"
	"unsafe"
)

// ParseSockaddr decodes the sockaddr_in or sockaddr_in6 in b, whose length
// is the length the caller gave: at least SizeofSockaddrIn for AF_INET and
// SizeofSockaddrIn6 for AF_INET6. It reports false for another family or a
// shorter buffer. The port is the host-order value of sin_port.
func ParseSockaddr(b []byte) (netip.AddrPort, bool) {
	if len(b) < 2 {
		return netip.AddrPort{}, false
	}
	switch binary.LittleEndian.Uint16(b) {
	case AFInet:
		if len(b) < SizeofSockaddrIn {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), true
	case AFInet6:
		if len(b) < SizeofSockaddrIn6 {
			return netip.AddrPort{}, false
		}
		a := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:4])), true
	}
	return netip.AddrPort{}, false
}

// SockaddrSize is the size of ap's sockaddr: SizeofSockaddrIn for an IPv4
// address, SizeofSockaddrIn6 otherwise.
func SockaddrSize(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return SizeofSockaddrIn
	}
	return SizeofSockaddrIn6
}

// PutSockaddr writes ap as a sockaddr_in (an IPv4 address) or sockaddr_in6
// into b and returns its size; b must hold SockaddrSize(ap) bytes.
func PutSockaddr(b []byte, ap netip.AddrPort) int {
	n := SockaddrSize(ap)
	clear(b[:n])
	binary.BigEndian.PutUint16(b[2:4], ap.Port())
	if n == SizeofSockaddrIn {
		binary.LittleEndian.PutUint16(b, AFInet)
		a := ap.Addr().As4()
		copy(b[4:8], a[:])
		return n
	}
	binary.LittleEndian.PutUint16(b, AFInet6)
	a := ap.Addr().As16()
	copy(b[8:24], a[:])
	return n
}

// addressListEntries is the offset of SOCKET_ADDRESS_LIST's array.
const addressListEntries = int(unsafe.Sizeof(SocketAddressListHeader{}))

// AddressListSize is the size of a SOCKET_ADDRESS_LIST of addrs laid out by
// PutAddressList: the count, the array, then the sockaddrs themselves.
func AddressListSize(addrs []netip.Addr) int {
	n := addressListEntries + len(addrs)*SizeofSocketAddress
	if len(addrs) == 0 {
		n += SizeofSocketAddress // the declared array of one
	}
	for _, a := range addrs {
		n += SockaddrSize(netip.AddrPortFrom(a, 0))
	}
	return n
}

// PutAddressList writes a SOCKET_ADDRESS_LIST of addrs (port 0) into dst,
// the caller's buffer, which must hold AddressListSize(addrs) bytes. The
// sockaddrs follow the array in dst, and each entry's pointer holds their
// address in dst, as the consumer will read it.
func PutAddressList(dst []byte, addrs []netip.Addr) {
	binary.LittleEndian.PutUint32(dst, uint32(len(addrs)))
	binary.LittleEndian.PutUint32(dst[4:], 0)
	off := addressListEntries + len(addrs)*SizeofSocketAddress
	for i, a := range addrs {
		e := addressListEntries + i*SizeofSocketAddress
		n := PutSockaddr(dst[off:], netip.AddrPortFrom(a, 0))
		binary.LittleEndian.PutUint64(dst[e:], uint64(uintptr(unsafe.Pointer(&dst[off]))))
		binary.LittleEndian.PutUint32(dst[e+8:], uint32(n))
		binary.LittleEndian.PutUint32(dst[e+12:], 0)
		off += n
	}
}

// ParseAddressList decodes a SOCKET_ADDRESS_LIST that a provider wrote into
// b, a buffer that lies at address base in memory. Every entry's sockaddr
// must lie inside b (the entry's pointer is translated to an offset in b);
// an entry that points elsewhere, a count that does not fit in b, or a
// sockaddr that ParseSockaddr refuses makes it report false.
func ParseAddressList(b []byte, base uintptr) ([]netip.Addr, bool) {
	if len(b) < addressListEntries {
		return nil, false
	}
	count := int32(binary.LittleEndian.Uint32(b))
	if count < 0 || int64(count) > int64(len(b)-addressListEntries)/int64(SizeofSocketAddress) {
		return nil, false
	}
	addrs := make([]netip.Addr, 0, count)
	for i := 0; i < int(count); i++ {
		e := addressListEntries + i*SizeofSocketAddress
		p := uintptr(binary.LittleEndian.Uint64(b[e:]))
		n := int32(binary.LittleEndian.Uint32(b[e+8:]))
		if p < base || n < 0 || uint64(p-base) > uint64(len(b)) || uint64(n) > uint64(len(b))-uint64(p-base) {
			return nil, false
		}
		off := int(p - base)
		ap, ok := ParseSockaddr(b[off : off+int(n)])
		if !ok {
			return nil, false
		}
		addrs = append(addrs, ap.Addr())
	}
	return addrs, true
}
