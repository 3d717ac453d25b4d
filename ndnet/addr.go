package ndnet

import (
	"net"
	"net/netip"
	"strconv"
)

// Addr is the address of one end of an ndnet connection: an ND provider's
// name and an ND address and port. It is a value, safe for concurrent use.
type Addr struct {
	Provider string         // the provider's registered name, such as "tcp"
	AddrPort netip.AddrPort // the ND address and port
}

// Network is "nd/" followed by the provider's name, such as "nd/shm".
func (a Addr) Network() string { return "nd/" + a.Provider }

// String is the address and port, such as "127.0.0.1:5000".
func (a Addr) String() string { return a.AddrPort.String() }

var _ net.Addr = Addr{}

// parseAddrPort parses "host:port" where host is an IP address (IPv6 in
// brackets); an empty host is the unspecified address of IPv4.
func parseAddrPort(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	var a netip.Addr
	if host == "" {
		a = netip.IPv4Unspecified()
	} else if a, err = netip.ParseAddr(host); err != nil {
		return netip.AddrPort{}, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, &net.AddrError{Err: "invalid port", Addr: s}
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}

// pickLocal chooses the local address to reach remote from among addrs:
// remote itself when served (the peer is on this host), then a loopback
// address of the same family for a loopback peer, then any address of the
// same family, then the first.
func pickLocal(addrs []netip.Addr, remote netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a == remote {
			return a
		}
	}
	for _, a := range addrs {
		if remote.IsLoopback() && a.IsLoopback() && a.Is4() == remote.Is4() {
			return a
		}
	}
	for _, a := range addrs {
		if !a.IsLoopback() && a.Is4() == remote.Is4() {
			return a
		}
	}
	return addrs[0]
}
