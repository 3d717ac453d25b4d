package ndtest

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// srqCloseWhileBusy: the shared queue closes while one goroutine posts
// Receives to it, another streams Sends over every connection and the test
// reaps both completion queues. Every Receive the queue accepted completes
// exactly once, with ND_SUCCESS and a whole message or with ND_CANCELED,
// and posting after the close returns ND_INVALID_HANDLE (ND's rule that a
// post which returned no error is followed by exactly one completion).
func srqCloseWhileBusy(t *testing.T, p nd.Provider) {
	const (
		n     = 4
		size  = 64
		depth = 32
		total = 4096 // Receives the poster may post
	)
	ps := newSRQPeers(t, p, n, size, nd.SharedReceiveQueueLimits{Entries: depth, SGE: 1}, true)
	bufs := make([]byte, total*size)
	mr := registerOn(t, ps.b, bufs)
	rs := make([]nd.Result, total)
	index := make(map[*nd.Result]int, total)
	for k := range rs {
		index[&rs[k]] = k
	}

	// The poster posts rs in order until the queue refuses for good.
	var posted atomic.Int64
	var postErr error
	poster := make(chan struct{})
	go func() {
		defer close(poster)
		sgl := make([]nd.SGE, 1)
		for k := 0; k < total; {
			sgl[0] = nd.SGE{Buffer: bufs[k*size : (k+1)*size], Region: mr}
			err := ps.srq.Receive(&rs[k], sgl)
			switch {
			case err == nil:
				k++
				posted.Store(int64(k))
			case errors.Is(err, nd.ErrNoMoreEntries):
				runtime.Gosched()
			default:
				postErr = err
				return
			}
		}
	}()

	// The sender keeps one Send in flight per connection, and sends a round
	// only when the Receives posted exceed the messages sent by a round
	// (credits, as applications on a shared queue keep), so that no
	// connection fails for lack of a Receive before the close.
	var stop atomic.Bool
	var sendErr error
	sender := make(chan struct{})
	go func() {
		defer close(sender)
		var sends [n]nd.Result
		out := make([]*nd.Result, n)
		for seq := 0; !stop.Load(); seq++ {
			for posted.Load()-int64(seq*n) < n && !stop.Load() {
				runtime.Gosched()
			}
			for i := range n {
				msg := ps.active[i].Buf
				fillPattern(msg, byte(i*37+seq))
				msg[0], msg[1] = byte(i), byte(seq)
				if err := ps.active[i].Endpoint.Send(&sends[i], ps.active[i].SGL, 0); err != nil {
					sendErr = fmt.Errorf("connection %d: Send: %w", i, err)
					return
				}
			}
			deadline := time.Now().Add(Timeout)
			for got := 0; got < n; {
				got += ps.activeCQ.GetResults(out[:n-got])
				if time.Now().After(deadline) {
					sendErr = fmt.Errorf("%d of %d Send completions within %v", got, n, Timeout)
					return
				}
				runtime.Gosched()
			}
		}
	}()

	seen := make([]int, total)
	out := make([]*nd.Result, 16)
	var successes int
	reap := func() {
		for _, cq := range []nd.CompletionQueue{ps.passiveCQ, ps.srqCQ} {
			m := cq.GetResults(out)
			for _, r := range out[:m] {
				k, ok := index[r]
				if !ok {
					t.Fatalf("a completion %p (%v) that is no Receive of the test", r, r.Status)
				}
				seen[k]++
				switch r.Status {
				case nd.Success:
					if cq != ps.passiveCQ || r.BytesTransferred != size {
						t.Fatalf("Receive %d: Success with %d bytes on the shared queue's own completion queue %v; want %d bytes on the endpoints'", k, r.BytesTransferred, cq == ps.srqCQ, size)
					}
					msg := bufs[k*size : (k+1)*size]
					want := make([]byte, size)
					fillPattern(want, msg[0]*37+msg[1])
					want[0], want[1] = msg[0], msg[1]
					checkBytes(t, fmt.Sprintf("Receive %d", k), msg, want)
					successes++
				case nd.ErrCanceled:
				default:
					t.Fatalf("Receive %d completed with %v; want ND_SUCCESS or ND_CANCELED", k, r.Status)
				}
			}
		}
	}
	deadline := time.Now().Add(Timeout)
	for successes < 3*depth && time.Now().Before(deadline) {
		reap()
		runtime.Gosched()
	}
	if err := ps.srq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-poster
	stop.Store(true)
	<-sender
	if !errors.Is(postErr, nd.ErrInvalidHandle) {
		t.Fatalf("the poster stopped with %v; want ND_INVALID_HANDLE after the close", postErr)
	}
	// Sends on a connection that ended (the close, or the queue running
	// empty before it) are accepted and complete: the sender never fails.
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	accepted := int(posted.Load())
	for {
		reap()
		missing := 0
		for k := range accepted {
			if seen[k] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline.Add(Timeout)) {
			t.Fatalf("%d of %d accepted Receives never completed", missing, accepted)
		}
		runtime.Gosched()
	}
	for k, c := range seen {
		if c > 1 || (k >= accepted && c != 0) {
			t.Fatalf("Receive %d completed %d times (%d accepted)", k, c, accepted)
		}
	}
	t.Logf("%d Receives accepted, %d completed with a message", accepted, successes)
}
