package ndexport

import (
	"fmt"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// TestGetConnectionRequestOrder: GetConnectionRequest calls made back to
// back, each returning ND_PENDING at once, take the requests that arrive in
// the order the calls were made (nd-spi.md §7.7), over every transport.
func TestGetConnectionRequestOrder(t *testing.T) {
	const n = 8
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			srv, cli := openV2(t, tr), openV2(t, tr)
			ls, _ := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
			var conns [n]*Connector2
			var lovs [n]ndabi.Overlapped
			defer func() {
				ls.Release()
				for _, c := range conns {
					if c != nil {
						c.Release()
					}
				}
				srv.release()
				cli.release()
			}()
			any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
			want(t, "Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
			want(t, "Listen", ls.Listen(n), nd.Success)
			var la [16]byte
			size := uint32(len(la))
			want(t, "GetLocalAddress", ls.GetLocalAddress(unsafe.Pointer(&la), &size), nd.Success)
			lap, _ := ndabi.ParseSockaddr(la[:size])
			dest := sockaddr(lap)
			for i := range conns {
				var st nd.Status
				conns[i], st = srv.ad.CreateConnector(ndabi.IIDIND2Connector, srv.fh)
				want(t, "CreateConnector", st, nd.Success)
				want(t, "GetConnectionRequest", ls.GetConnectionRequest(conns[i], &lovs[i]), nd.Pending)
			}
			for i := range conns {
				pd := []byte(fmt.Sprintf("request %d", i))
				var ov ndabi.Overlapped
				want(t, "Connect", cli.conn.Connect(cli.qp, ptr(dest), uintptr(len(dest)), 0, 0, ptr(pd), uintptr(len(pd)), &ov), nd.Pending)
				packet(t, srv.file, &lovs[i], nd.Success) // the first request served must be #i's
				finish(t, fmt.Sprintf("GetConnectionRequest #%d", i), &ls.Base, &lovs[i], nd.Success)
				got := make([]byte, 32)
				m := uint32(len(got))
				want(t, "GetPrivateData", conns[i].GetPrivateData(ptr(got), &m), nd.Success)
				if string(got[:m]) != string(pd) {
					t.Fatalf("GetConnectionRequest #%d took %q; want %q (calls are served in the order they were made)", i, got[:m], pd)
				}
				for j := i + 1; j < n; j++ {
					want(t, fmt.Sprintf("GetConnectionRequest #%d before its request", j), ls.GetOverlappedResult(&lovs[j], false), nd.Pending)
				}
				want(t, "Reject", conns[i].Reject(nil, 0), nd.Success)
				finish(t, "Connect rejected", &cli.conn.Base, &ov, nd.ErrConnectionRefused)
				packet(t, cli.file, &ov, nd.ErrConnectionRefused)
			}
		})
	}
}
