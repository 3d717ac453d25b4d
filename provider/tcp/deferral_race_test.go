package tcp_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

// TestHeldResponseSurvivesInlineSend: the peer's zero-length Read Request,
// whose response is held back for the application's answer, is handled
// just after a Send going out on the posting goroutine took its batch of
// jobs. The response is not in that batch, and must still leave: once, a
// send ended its deferral after taking the batch, so that nothing sent it
// (the writer was not woken and the hold's timer was stopped), and a peer
// waiting for it (a godirect peer confirming its Sends) waited forever.
func TestHeldResponseSurvivesInlineSend(t *testing.T) {
	if !tcp.RawIO {
		t.Skip("sends go out on the posting goroutine only with raw socket calls")
	}
	limits := nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1, InboundReadLimit: hpServerIRD}
	ad, raw, acc := acceptRaw(t, limits, 16, func(*hpMPAOpts) {})
	buf := []byte("8 bytes!")
	mr, err := ad.RegisterMemory(context.Background(), buf)
	if err != nil {
		t.Fatal(err)
	}
	// The application polls, so that its polls move the inbound bytes
	// rather than the progress goroutine.
	var out [4]*nd.Result
	for range 1000 {
		acc.cq.GetResults(out[:])
	}
	ranHook := false
	tcp.OnFirstInlineBatch(t, func(held func() bool) {
		ranHook = true
		if err := raw.put(raw.readReq(0, 0, 0)); err != nil {
			t.Error(err)
			return
		}
		// This goroutine's polls (or the progress goroutine) handle the
		// Read Request, whose response is queued and held back, while the
		// send is under way.
		deadline := time.Now().Add(time.Second)
		for !held() && time.Now().Before(deadline) {
			acc.cq.GetResults(out[:])
			runtime.Gosched()
		}
	})
	var res nd.Result
	if err := acc.ep.Send(&res, []nd.SGE{{Buffer: buf, Region: mr}}, 0); err != nil {
		t.Fatal(err)
	}
	if !ranHook {
		t.Skip("the Send did not go out on the posting goroutine")
	}
	var sawSend, sawResponse bool
	for !sawSend || !sawResponse {
		seg, err := raw.readSegment(5 * time.Second)
		if err != nil {
			t.Fatalf("reading what the server sends (Send seen %v, Read Response seen %v): %v", sawSend, sawResponse, err)
		}
		switch {
		case seg.Opcode == iwarp.OpSend && string(seg.Payload) == string(buf):
			sawSend = true
		case seg.Opcode == iwarp.OpReadResponse && seg.STag == hpSinkSTag(1):
			sawResponse = true
		}
	}
}
