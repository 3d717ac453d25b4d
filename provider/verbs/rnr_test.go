//go:build verbs && linux

package verbs_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/verbs"
)

// rnrWindow is how long the tests watch a Send that found no Receive: rxe
// answers it with an RNR NAK at once, and a queue pair without retries
// completes it with an error within microseconds of that.
const rnrWindow = 500 * time.Millisecond

// TestRNRRetry: on RoCE/IB the receiver decides, by the RNR retry count it
// announces in the connection manager's message, whether a Send that finds
// no Receive waits for one. provider/verbs announces 0 (ND: the connection
// fails); a program that announces 7, as perftest and rping do, posts its
// Receives after the connection is up and counts on the sender to wait.
func TestRNRRetry(t *testing.T) {
	for _, d := range devices(t) {
		if d.iwarp {
			continue // iWARP has no RNR: a Send without a Receive ends the connection
		}
		p := single{verbs.New(), d.addr}
		t.Run(d.name+"/ReceiverAnnouncesRetry", func(t *testing.T) {
			a, b := ndtest.OpenAdapters(t, p)
			verbs.SetAnnouncedRNRRetry(b, 7)
			pr := ndtest.NewPairOn(t, a, b, ndtest.PairConfig{})
			src := bytes.Repeat([]byte("rnr-retry-"), 10)
			dst := make([]byte, len(src))
			srcMR, dstMR := pr.Active.Register(t, src), pr.Passive.Register(t, dst)
			var sr, rr nd.Result
			if err := pr.Active.Endpoint.Send(&sr, []nd.SGE{{Buffer: src, Region: srcMR}}, 0); err != nil {
				t.Fatalf("Send: %v", err)
			}
			// No Receive at the peer yet: the Send must wait, not fail.
			ctx, cancel := context.WithTimeout(context.Background(), rnrWindow)
			pr.Active.OutCQ.Notify(ctx, nd.NotifyAny)
			cancel()
			var out [1]*nd.Result
			if pr.Active.OutCQ.GetResults(out[:]) == 1 {
				t.Fatalf("the Send completed %v before the peer posted a Receive; want it to wait (the peer announced RNR retry 7)", out[0].Status)
			}
			if err := pr.Passive.Endpoint.Receive(&rr, []nd.SGE{{Buffer: dst, Region: dstMR}}); err != nil {
				t.Fatalf("Receive: %v", err)
			}
			ndtest.Expect(t, pr.Passive.InCQ, &rr, nd.Success, len(src))
			ndtest.Expect(t, pr.Active.OutCQ, &sr, nd.Success, len(src))
			if !bytes.Equal(dst, src) {
				t.Fatalf("received %q, want %q", dst, src)
			}
		})
		t.Run(d.name+"/ReceiverAnnouncesNone", func(t *testing.T) {
			pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
			src := []byte("no receive")
			srcMR := pr.Active.Register(t, src)
			var sr nd.Result
			if err := pr.Active.Endpoint.Send(&sr, []nd.SGE{{Buffer: src, Region: srcMR}}, 0); err != nil {
				t.Fatalf("Send: %v", err)
			}
			ndtest.Expect(t, pr.Active.OutCQ, &sr, nd.ErrRemoteError, -1)
			ndtest.AwaitDisconnect(t, pr.Passive.Connector, "a Send without a Receive")
		})
	}
}
