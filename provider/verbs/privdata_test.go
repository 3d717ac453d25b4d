package verbs

import (
	"bytes"
	"testing"
)

// pad returns pd followed by zeros up to n bytes, as the IB CM delivers
// private data (its messages have fixed-size fields).
func pad(pd []byte, n int) []byte {
	return append(append([]byte(nil), pd...), make([]byte, n-len(pd))...)
}

func TestPrivateDataRoundTrip(t *testing.T) {
	for _, iw := range []bool{true, false} {
		max, padTo := iwarpPrivateData, 0
		if !iw {
			max, padTo = ibCallerData, ibRequestData
		}
		for _, protocol := range []int{0, 1, 6, 255} {
			for _, n := range []int{0, 1, max} {
				data := bytes.Repeat([]byte{0}, n) // zeros: the padding's own byte
				if n > 0 {
					data[0] = 0xa5
				}
				pd := wrapPrivateData(iw, protocol, data)
				if padTo > 0 {
					if len(pd) > padTo {
						t.Fatalf("iwarp=%v: %d bytes of application data take %d bytes, more than the IB CM's %d", iw, n, len(pd), padTo)
					}
					pd = pad(pd, padTo)
				}
				p, kind, user := unwrap(iw, pd)
				if p != protocol || kind != peerGodirect || !bytes.Equal(user, data) {
					t.Errorf("iwarp=%v: unwrap(wrap(%d, %d bytes)) = %d, %d, %x; want %d, %d, %x", iw, protocol, n, p, kind, user, protocol, peerGodirect, data)
				}
			}
		}
	}
}

// TestPrivateDataForeignPeer: what rping, perftest and other rdma_cm
// programs send (often nothing, which the IB CM pads with zeros) is not a
// godirect request; it goes to the port's listener with the lowest
// protocol, and the application sees the bytes as they arrived.
func TestPrivateDataForeignPeer(t *testing.T) {
	cases := []struct {
		name string
		iw   bool
		pd   []byte
	}{
		{"IB/REQ/none", false, pad(nil, ibRequestData)},
		{"IB/REP/none", false, pad(nil, 196)},
		{"IB/REJ/none", false, pad(nil, ibRejectData)},
		{"IB/empty", false, nil},
		{"IB/one", false, []byte{6}},
		{"IB/rping-like", false, pad([]byte{0, 0, 0, 1, 0x12, 0x34}, ibRequestData)},
		{"IB/old-header", false, pad([]byte{6, 3, 'a', 'b', 'c'}, ibRequestData)},
		{"IB/iwarp-prefix", false, pad([]byte{'g', 'd', 1, 6}, ibRequestData)},
		{"IB/length-too-long", false, append([]byte{'g', 'd', 2, 6, 9}, "12345678"...)},
		{"IB/unknown-version", false, pad([]byte{'g', 'd', 3, 6, 0}, ibRequestData)},
		{"iWARP/none", true, nil},
		{"iWARP/other", true, []byte("hello, rping")},
		{"iWARP/zeros", true, make([]byte, 8)},
	}
	for _, c := range cases {
		p, kind, user := unwrap(c.iw, c.pd)
		if p != -1 || kind != peerForeign || !bytes.Equal(user, c.pd) {
			t.Errorf("%s: unwrap(%x) = %d, %d, %x; want -1, %d, all of it", c.name, c.pd, p, kind, user, peerForeign)
		}
	}
}

func TestPrivateDataTCPPeer(t *testing.T) {
	p, kind, user := unwrap(true, []byte{'g', 'd', 1, 9, 'x'})
	if p != 9 || kind != peerTCP || string(user) != "x" {
		t.Errorf("unwrap(provider/tcp's prefix) = %d, %d, %q; want 9, %d, x", p, kind, user, peerTCP)
	}
}

// TestPrivateDataSizes: the application data ND lets through fits the IB
// CM's smallest message of each side with the framing.
func TestPrivateDataSizes(t *testing.T) {
	if got := len(wrapPrivateData(false, 255, make([]byte, ibCallerData))); got != ibRequestData {
		t.Errorf("a request with MaxCallerData (%d) bytes is %d bytes; the IB CM REQ carries %d", ibCallerData, got, ibRequestData)
	}
	if got := len(wrapPrivateData(false, 0, make([]byte, ibCalleeData))); got != ibRejectData {
		t.Errorf("a reply with MaxCalleeData (%d) bytes is %d bytes; the IB CM REJ carries %d", ibCalleeData, got, ibRejectData)
	}
}

func FuzzUnwrap(f *testing.F) {
	f.Add(false, pad(nil, ibRequestData))
	f.Add(false, pad(wrapPrivateData(false, 6, []byte("abc")), ibRequestData))
	f.Add(false, []byte{'g', 'd', 2, 6, 200})
	f.Add(true, wrapPrivateData(true, 6, []byte("abc")))
	f.Add(true, []byte{'g', 'd', 1, 0})
	f.Fuzz(func(t *testing.T, iw bool, pd []byte) {
		p, kind, user := unwrap(iw, pd)
		if kind == peerForeign {
			if p != -1 || !bytes.Equal(user, pd) {
				t.Fatalf("foreign: %d, %x from %x", p, user, pd)
			}
			return
		}
		if p < 0 || p > 255 {
			t.Fatalf("protocol %d from %x", p, pd)
		}
		// A godirect frame is exactly what wrapPrivateData makes (but for
		// provider/tcp's version byte), followed by padding at most.
		w := wrapPrivateData(iw, p, user)
		if kind == peerTCP {
			w[2] = pd[2]
		}
		if !bytes.HasPrefix(pd, w) {
			t.Fatalf("unwrap(%x) = %d, %d, %x, which wraps to %x", pd, p, kind, user, w)
		}
		if iw && len(w) != len(pd) {
			t.Fatalf("iWARP: %x left over from %x", pd[len(w):], pd)
		}
	})
}
