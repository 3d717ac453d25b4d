package tcp_test

import (
	"testing"
	"time"

	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

// An active side facing a foreign responder in peer-to-peer mode that
// answers nothing after the RTR (as siw does when the RTR reached its
// socket before it installed the callback that reads it) sends zero-length
// RDMA Writes after the RTR, as many as configured and no more, so that
// the responder's socket gets new bytes and reads the RTR.
func TestSilentForeignPeerIsNudged(t *testing.T) {
	for _, peer := range siwPeers {
		for _, crc := range []bool{false, true} {
			for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
				t.Run(peer.name+"/"+rtrCaseName(crc, rtr), func(t *testing.T) {
					tcp.SetRTRNudge(t, time.Millisecond, 2)
					testNudges(t, crc, rtr, peer.pd, 2)
				})
			}
		}
	}
}

func testNudges(t *testing.T, crc bool, rtr iwarp.RTRFlags, pd []byte, nudges int) {
	r := startSIWResponderAs(t, rtr, 1+nudges, pd)
	s, ctx := connectToResponder(t, r, crc)
	if err := s.Connector.CompleteConnect(ctx); err != nil {
		t.Fatalf("CompleteConnect: %v", err)
	}
	select {
	case err := <-r.fail:
		t.Fatal(err)
	case <-r.seen:
	case <-ctx.Done():
		t.Fatalf("the responder did not get the RTR and %d nudges", nudges)
	}
	// The nudges are over (their number is reached): a Disconnect now
	// ends the stream, and nothing but the RTR and the nudges came.
	if err := s.Connector.Disconnect(ctx); err != nil {
		t.Logf("Disconnect: %v", err)
	}
	segs := r.frames(t)
	if len(segs) != 1+nudges {
		t.Fatalf("%d FPDUs after the MPA reply, want the RTR and %d nudges: %+v", len(segs), nudges, segs)
	}
	if segs[0].Opcode != rtrOpcode(rtr) {
		t.Fatalf("first FPDU %v, want the RTR (%v)", segs[0].Opcode, rtrOpcode(rtr))
	}
	for i, sg := range segs[1:] {
		if sg.Opcode != iwarp.OpWrite || sg.STag != iwarp.RTRWriteSTag || len(sg.Payload) != 0 {
			t.Fatalf("nudge %d: %v STag %#x, %d bytes; want a zero-length Write through STag %#x", i+1, sg.Opcode, sg.STag, len(sg.Payload), iwarp.RTRWriteSTag)
		}
	}
}
