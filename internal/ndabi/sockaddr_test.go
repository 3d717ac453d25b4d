package ndabi

import (
	"net/netip"
	"testing"
	"unsafe"
)

func TestSockaddrRoundTrip(t *testing.T) {
	for _, ap := range []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.7:54321"),
		netip.MustParseAddrPort("[2001:db8::1]:7"),
		netip.MustParseAddrPort("127.0.0.1:0"),
	} {
		b := make([]byte, SockaddrSize(ap))
		if n := PutSockaddr(b, ap); n != len(b) {
			t.Fatalf("%v: PutSockaddr wrote %d of %d", ap, n, len(b))
		}
		got, ok := ParseSockaddr(b)
		if !ok || got != ap {
			t.Fatalf("%v: parsed back %v %v", ap, got, ok)
		}
		if _, ok := ParseSockaddr(b[:len(b)-1]); ok {
			t.Fatalf("%v: a short sockaddr parsed", ap)
		}
	}
	// sin_port is big-endian, the family little-endian.
	b := make([]byte, 16)
	PutSockaddr(b, netip.MustParseAddrPort("10.1.2.3:258"))
	if want := []byte{2, 0, 1, 2, 10, 1, 2, 3}; string(b[:8]) != string(want) {
		t.Fatalf("sockaddr_in = % x, want % x", b[:8], want)
	}
	b[0] = 99
	if _, ok := ParseSockaddr(b); ok {
		t.Fatal("an unknown family parsed")
	}
}

func TestAddressList(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1"), netip.MustParseAddr("192.0.2.1")}
	buf := make([]byte, AddressListSize(addrs))
	if want := 8 + 3*16 + 16 + 28 + 16; len(buf) != want {
		t.Fatalf("AddressListSize = %d, want %d", len(buf), want)
	}
	PutAddressList(buf, addrs)
	got, ok := ParseAddressList(buf, uintptr(unsafe.Pointer(&buf[0])))
	if !ok || len(got) != 3 || got[0] != addrs[0] || got[1] != addrs[1] || got[2] != addrs[2] {
		t.Fatalf("parsed %v %v", got, ok)
	}
	// The same bytes seen at another address point outside the buffer.
	if _, ok := ParseAddressList(buf, uintptr(unsafe.Pointer(&buf[0]))+64); ok {
		t.Fatal("entries pointing outside the buffer parsed")
	}
	if _, ok := ParseAddressList(buf[:20], uintptr(unsafe.Pointer(&buf[0]))); ok {
		t.Fatal("a count beyond the buffer parsed")
	}
	empty := make([]byte, AddressListSize(nil))
	PutAddressList(empty, nil)
	if got, ok := ParseAddressList(empty, 0); !ok || len(got) != 0 {
		t.Fatalf("empty list parsed as %v %v", got, ok)
	}
}

func FuzzParseSockaddr(f *testing.F) {
	b := make([]byte, 28)
	PutSockaddr(b, netip.MustParseAddrPort("[2001:db8::1]:7"))
	f.Add(b)
	f.Add(b[:16])
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ap, ok := ParseSockaddr(b)
		if !ok {
			return
		}
		c := make([]byte, SockaddrSize(ap))
		PutSockaddr(c, ap)
		if back, ok := ParseSockaddr(c); !ok || back != ap {
			t.Fatalf("%v does not round-trip", ap)
		}
	})
}

func FuzzParseAddressList(f *testing.F) {
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	buf := make([]byte, AddressListSize(addrs))
	PutAddressList(buf, addrs)
	f.Add(buf, uint64(uintptr(unsafe.Pointer(&buf[0]))))
	f.Add([]byte{1, 0, 0, 0}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, base uint64) {
		got, ok := ParseAddressList(b, uintptr(base))
		if ok && len(got) > len(b)/SizeofSocketAddress {
			t.Fatalf("%d addresses from %d bytes", len(got), len(b))
		}
	})
}
