package tcp

import (
	"net"
	"net/netip"
	"testing"
)

// TestSameHost: loopback addresses and the host's interface addresses are
// the host's (with or without an IPv6 zone, IPv4 mapped or not); a
// documentation address is not.
func TestSameHost(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"} {
		if !sameHost(netip.MustParseAddr(a)) {
			t.Errorf("sameHost(%s) = false", a)
		}
	}
	if sameHost(netip.MustParseAddr("192.0.2.1")) || sameHost(netip.MustParseAddr("2001:db8::1")) {
		t.Error("a documentation address counts as this host's")
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, ifa := range ifas {
		pfx, err := netip.ParsePrefix(ifa.String())
		if err != nil {
			continue
		}
		a := pfx.Addr()
		if a.Is6() && a.IsLinkLocalUnicast() {
			a = a.WithZone("eth0")
		}
		if !sameHost(a) {
			t.Errorf("sameHost(%v) = false for an interface address", a)
		}
	}
}
