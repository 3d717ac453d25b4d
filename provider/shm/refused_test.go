//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestRefusedSendReported: a small Send through the ring that the receiver
// refuses (no Receive posted, or one too small) completes with
// ND_REMOTE_ERROR at the sender, as docs/semantics.md says for shm; the
// too-small Receive completes ND_BUFFER_OVERFLOW, and both sides learn
// that the connection ended.
func TestRefusedSendReported(t *testing.T) {
	p := testProvider(t, shm.Config{})
	for _, tc := range []struct {
		name string
		recv int // the Receive's size, -1: none posted
	}{
		{"NoReceive", -1},
		{"ReceiveTooSmall", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
			var rr nd.Result
			if tc.recv >= 0 {
				buf := make([]byte, tc.recv)
				if err := pr.Passive.Endpoint.Receive(&rr, []nd.SGE{{Buffer: buf, Region: pr.Passive.Register(t, buf)}}); err != nil {
					t.Fatal(err)
				}
			}
			src := make([]byte, 64)
			var sr nd.Result
			if err := pr.Active.Endpoint.Send(&sr, []nd.SGE{{Buffer: src, Region: pr.Active.Register(t, src)}}, 0); err != nil {
				t.Fatal(err)
			}
			ndtest.Expect(t, pr.Active.OutCQ, &sr, nd.ErrRemoteError, -1)
			if tc.recv >= 0 {
				ndtest.Expect(t, pr.Passive.InCQ, &rr, nd.ErrBufferOverflow, -1)
			}
			ndtest.AwaitDisconnect(t, pr.Active.Connector, "the refused Send")
			ndtest.AwaitDisconnect(t, pr.Passive.Connector, "the refused Send")
		})
	}
}
