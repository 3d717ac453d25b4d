package tcp_test

import (
	"net/netip"
	"testing"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// loopback is a provider that serves two loopback addresses, so the suite's
// two adapters talk over real TCP sockets on this host only.
func loopback() *tcp.Provider {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	return tcp.New(cfg)
}

func TestConformance(t *testing.T) { ndtest.Run(t, loopback()) }
