package session

import (
	"net/netip"
	"testing"
)

func TestServerAddr(t *testing.T) {
	addrs := func(s ...string) []netip.Addr {
		var as []netip.Addr
		for _, x := range s {
			as = append(as, netip.MustParseAddr(x))
		}
		return as
	}
	for _, tt := range []struct {
		addrs          []netip.Addr
		server, client string
	}{
		{addrs("127.0.0.1", "127.0.0.2"), "127.0.0.1", "127.0.0.2"},
		{addrs("10.0.0.5", "127.0.0.1", "192.0.2.2", "::1"), "127.0.0.1", "127.0.0.1"},
		{addrs("fd00::2", "::1"), "::1", "::1"},
		{addrs("192.0.2.2", "192.0.2.3"), "192.0.2.2", "192.0.2.2"},
	} {
		server := DefaultServerAddr(tt.addrs)
		client := pickLocal(tt.addrs, server)
		if server.String() != tt.server || client.String() != tt.client {
			t.Errorf("%v: server %s, client %s; want %s, %s", tt.addrs, server, client, tt.server, tt.client)
		}
	}
	// A served remote address is reached from itself (an RDMA device
	// reaches only its own address on one host: siw0 and rxe0 in the VM).
	if got := pickLocal(addrs("192.0.2.1", "192.0.2.2"), netip.MustParseAddr("192.0.2.2")); got.String() != "192.0.2.2" {
		t.Errorf("pickLocal(192.0.2.1 192.0.2.2, 192.0.2.2) = %s, want 192.0.2.2", got)
	}
}
