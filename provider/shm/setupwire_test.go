//go:build linux || windows || darwin || freebsd

package shm

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// FuzzSetupMessages: the setup messages' decoders (request, reply, reject,
// and the Windows tails: handle values, the active side's address and
// port) never panic, accept only what fits their bounds, and what the
// tails' decoders accept encodes back to the same bytes.
func FuzzSetupMessages(f *testing.F) {
	req := request{protocol: 6, ird: 4, ord: 4, ringSize: 1 << 20, probeAddr: 0x1000, pd: []byte("hello")}
	ap := netip.MustParseAddrPort("127.0.0.2:50000")
	f.Add(appendHandleValues(appendActive(req.append(nil), ap), []uint64{4, 8, 12, 16, 20}))
	f.Add(req.append(nil))
	f.Add((&reply{ird: 1, ord: 2, caps: capRDMA, pd: []byte{1}}).append(nil))
	f.Add(appendReject(nil, []byte("no")))
	f.Add(appendHandleValues([]byte{msgReady, capSend}, nil))
	f.Add([]byte{msgShort, shortFDs, 0})
	f.Add([]byte{msgSegment, 1, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, msg []byte) {
		if body, vals, k, ok := splitHandleValues(msg); ok {
			if k > maxHandles || len(vals) != 8*k || len(body) == 0 || len(body)+len(vals)+1 != len(msg) {
				t.Fatalf("splitHandleValues(%x) = %x, %x, %d", msg, body, vals, k)
			}
			vs := make([]uint64, k)
			for i := range vs {
				vs[i] = binary.LittleEndian.Uint64(vals[8*i:])
			}
			if got := appendHandleValues(bytes.Clone(body), vs); !bytes.Equal(got, msg) {
				t.Fatalf("handle values of %x encode back to %x", msg, got)
			}
		}
		if body, ap, ok := splitActive(msg); ok {
			if len(body) == 0 || len(body)+activeTail != len(msg) {
				t.Fatalf("splitActive(%x) = %x", msg, body)
			}
			if got := appendActive(bytes.Clone(body), ap); !bytes.Equal(got, msg) {
				t.Fatalf("the active address of %x encodes back to %x", msg, got)
			}
		}
		if r, err := parseRequest(msg); err == nil {
			if len(r.pd) > MaxPrivateData || r.ird < 0 || r.ird > maxReadLimit || r.ord < 0 || r.ord > maxReadLimit {
				t.Fatalf("parseRequest(%x) = %+v", msg, r)
			}
		}
		if r, err := parseReply(msg); err == nil {
			if len(r.pd) > MaxPrivateData || r.ird < 0 || r.ird > maxReadLimit || r.ord < 0 || r.ord > maxReadLimit {
				t.Fatalf("parseReply(%x) = %+v", msg, r)
			}
		}
		if pd, err := parseReject(msg); err == nil && len(pd) > MaxPrivateData {
			t.Fatalf("parseReject(%x) = %d bytes", msg, len(pd))
		}
	})
}
