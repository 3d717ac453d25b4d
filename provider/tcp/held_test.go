package tcp_test

import (
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestHeldResponseReleasedByOtherPoll: both ends of a connection live in
// this process, and the application waits for the passive side's Send to
// complete by polling that side's completion queue only. The completion
// needs the active side's answer to its confirmation Read, which the
// active side holds back for an answer of its application's that is not
// coming: the application polls the other side. Polls of the passive side
// must send it. The hold's timer is set to an hour, so nothing else does.
func TestHeldResponseReleasedByOtherPoll(t *testing.T) {
	tcp.SetDeferLimit(t, time.Hour)
	pr := ndtest.NewPair(t, tcp.New(tcp.Config{}), ndtest.PairConfig{})
	a, p := pr.Active, pr.Passive
	ab, pb := make([]byte, 8), make([]byte, 8)
	asgl := []nd.SGE{{Buffer: ab, Region: a.Register(t, ab)}}
	psgl := []nd.SGE{{Buffer: pb, Region: p.Register(t, pb)}}
	var out [1]*nd.Result
	reap := func(cq nd.CompletionQueue, want *nd.Result) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for cq.GetResults(out[:]) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no completion in 10 s")
			}
		}
		if out[0] != want || want.Status != nd.Success {
			t.Fatalf("completion %p with %v, want %p with Success", out[0], out[0].Status, want)
		}
	}
	for i := range 20 {
		var recv, rrcv, send, rsend nd.Result
		ab[0] = byte(i)
		if err := p.Endpoint.Receive(&recv, psgl); err != nil {
			t.Fatal(err)
		}
		if err := a.Endpoint.Receive(&rrcv, asgl); err != nil {
			t.Fatal(err)
		}
		if err := a.Endpoint.Send(&send, asgl, 0); err != nil {
			t.Fatal(err)
		}
		reap(p.InCQ, &recv)
		if err := p.Endpoint.Send(&rsend, psgl, 0); err != nil {
			t.Fatal(err)
		}
		reap(a.InCQ, &rrcv)
		reap(a.OutCQ, &send)
		reap(p.OutCQ, &rsend) // needs the active side's held answer
		if pb[0] != byte(i) || ab[0] != byte(i) {
			t.Fatalf("round %d: the bytes did not go round", i)
		}
	}
}
