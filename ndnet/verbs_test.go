//go:build verbs && linux

package ndnet_test

import (
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/verbs"
)

// With the verbs tag, every stream test also runs over provider/verbs on
// each RDMA device port with an IPv4 address (in the interop VM: siw0 on
// 192.0.2.1, rxe0 on 192.0.2.2; interop/verbs_test.sh with ND_TEST_BIN
// runs them there). A host without such a port adds none.
func init() {
	addrs, err := verbs.New().Addresses()
	if err != nil {
		return
	}
	for _, a := range addrs {
		name := "verbs-" + deviceName(a)
		providers = append(providers, streamProvider{name, func() nd.Provider { return verbs.New() }, netip.AddrPortFrom(a, 0).String()})
	}
}

// deviceName is the RDMA device that serves a (siw0, rxe0), or the address
// when it cannot be opened.
func deviceName(a netip.Addr) string {
	ad, err := verbs.New().OpenAdapter(a)
	if err != nil {
		return a.String()
	}
	defer ad.Close()
	name, _ := ad.(*verbs.Adapter).Device()
	return name
}
