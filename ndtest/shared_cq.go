package ndtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// sharedCQConnections is how many connections the SharedCQ cases attach to
// one completion queue a side.
const sharedCQConnections = 12

// sharedCQCases check many endpoints attached to one completion queue a
// side, as ND's users attach them (MS-MPI: one queue per adapter): each
// completion is the very Result of its own endpoint's request, with its own
// bytes, in post order per endpoint; and one connection's failure ends that
// connection only.
var sharedCQCases = []testCase{
	{"InterleavedTraffic", `docs/semantics.md "completion order": endpoints sharing a queue each get their own Results, bytes and post order`, sharedCQInterleaved},
	{"OneConnectionFails", `docs/semantics.md "error completion": one connection's failure on a shared queue ends that connection only`, sharedCQOneFails},
}

// sharedCQInterleaved: several rounds of Sends over every connection, the
// connections taken in a different order each round and several messages
// in flight on each, with each message's bytes naming its connection and
// its place; both queues deliver every completion once, per endpoint in
// post order, and each Receive holds its own message.
func sharedCQInterleaved(t *testing.T, p nd.Provider) {
	const (
		n     = sharedCQConnections
		depth = 3 // messages in flight per connection (PeerLimits allow 4)
		size  = 64
	)
	ps := NewPeers(t, p, n, size*depth, true)
	type slot struct {
		conn, seq int
	}
	sends := make([][depth]nd.Result, n)
	recvs := make([][depth]nd.Result, n)
	owner := map[*nd.Result]slot{}
	for i := range n {
		for k := range depth {
			owner[&sends[i][k]] = slot{i, k}
			owner[&recvs[i][k]] = slot{i, k}
		}
	}
	// NewPeers left a Receive of the whole buffer posted on every
	// connection: a message of the whole buffer takes it, so that every
	// later Receive is one of the test's.
	for _, e := range ps.Active {
		mustPost(t, "Send", e.Endpoint.Send(&e.Send, e.SGL, 0))
	}
	ps.reap(t, ps.ActiveCQ, n)
	ps.reap(t, ps.PassiveCQ, n)
	out := make([]*nd.Result, 7) // an odd batch, so that batches split rounds
	for round := range 4 {
		for i := range n {
			for k := range depth {
				sgl := []nd.SGE{{Buffer: ps.Passive[i].Buf[k*size : (k+1)*size], Region: ps.Passive[i].SGL[0].Region}}
				clear(sgl[0].Buffer)
				mustPost(t, "Receive", ps.Passive[i].Endpoint.Receive(&recvs[i][k], sgl))
			}
		}
		for k := range depth {
			for j := range n {
				i := (j*5 + round*7 + k) % n
				a := ps.Active[i]
				msg := a.Buf[k*size : (k+1)*size]
				for b := range msg {
					msg[b] = byte(i*31 + k*7 + round*3 + b)
				}
				sgl := []nd.SGE{{Buffer: msg, Region: a.SGL[0].Region}}
				mustPost(t, "Send", a.Endpoint.Send(&sends[i][k], sgl, 0))
			}
		}
		nextSend, nextRecv := make([]int, n), make([]int, n)
		deadline := time.Now().Add(Timeout)
		for got := 0; got < 2*n*depth; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of %d completions within %v", round, got, 2*n*depth, Timeout)
			}
			for _, cq := range []nd.CompletionQueue{ps.ActiveCQ, ps.PassiveCQ} {
				m := cq.GetResults(out)
				for _, r := range out[:m] {
					s, ok := owner[r]
					if !ok {
						t.Fatalf("round %d: a completion %p that no request of the test posted", round, r)
					}
					isSend := r == &sends[s.conn][s.seq]
					if (cq == ps.ActiveCQ) != isSend {
						t.Fatalf("round %d: connection %d's request %d completed on the other side's queue", round, s.conn, s.seq)
					}
					next := nextRecv
					if isSend {
						next = nextSend
					}
					if s.seq != next[s.conn] {
						t.Fatalf("round %d: connection %d completed request %d before %d (post order per endpoint)", round, s.conn, s.seq, next[s.conn])
					}
					next[s.conn]++
					if r.Status != nd.Success || r.BytesTransferred != size {
						t.Fatalf("round %d: connection %d request %d: %v, %d bytes; want Success, %d", round, s.conn, s.seq, r.Status, r.BytesTransferred, size)
					}
					if !isSend {
						want := ps.Active[s.conn].Buf[s.seq*size : (s.seq+1)*size]
						got := ps.Passive[s.conn].Buf[s.seq*size : (s.seq+1)*size]
						checkBytes(t, fmt.Sprintf("round %d connection %d message %d", round, s.conn, s.seq), got, want)
					}
				}
				got += m
			}
		}
	}
	ExpectEmpty(t, ps.ActiveCQ)
	ExpectEmpty(t, ps.PassiveCQ)
}

// sharedCQOneFails: one connection of those sharing the queues gets a Send
// larger than its Receive, which ends that connection (ND_BUFFER_OVERFLOW
// for the Receive, ND_CANCELED for the one behind it); every other
// connection keeps its traffic, with its exact statuses and bytes, before
// and after.
func sharedCQOneFails(t *testing.T, p nd.Provider) {
	const n, bad = sharedCQConnections, 5
	ps := NewPeers(t, p, n, 64, true)
	pb, ab := ps.Passive[bad], ps.Active[bad]
	// NewPeers left a 64-byte Receive posted on every connection. On the
	// bad connection a message takes it; a Receive of 16 bytes and one of
	// 64 follow, and a 64-byte Send.
	var pr [2]nd.Result
	short := []nd.SGE{{Buffer: pb.Buf[:16], Region: pb.SGL[0].Region}}
	mustPost(t, "Send", ab.Endpoint.Send(&ab.Send, ab.SGL, 0))
	Expect(t, ps.ActiveCQ, &ab.Send, nd.Success, 64)
	Expect(t, ps.PassiveCQ, &pb.Recv, nd.Success, 64)
	mustPost(t, "Receive", pb.Endpoint.Receive(&pr[0], short))
	mustPost(t, "Receive", pb.Endpoint.Receive(&pr[1], pb.SGL))
	mustPost(t, "Send", ab.Endpoint.Send(&ab.Send, ab.SGL, 0))
	// The bad connection's completions and a round of every other
	// connection's come in any order between connections.
	others := make([]int, 0, n-1)
	for i := range n {
		if i != bad {
			others = append(others, i)
		}
	}
	for _, i := range others {
		e := ps.Active[i]
		mustPost(t, "Send", e.Endpoint.Send(&e.Send, e.SGL, 0))
	}
	out := make([]*nd.Result, 8)
	want := map[*nd.Result]nd.Status{&pr[0]: nd.ErrBufferOverflow, &pr[1]: nd.ErrCanceled}
	for _, i := range others {
		want[&ps.Active[i].Send] = nd.Success
		want[&ps.Passive[i].Recv] = nd.Success
	}
	var senderStatus *nd.Status
	deadline := time.Now().Add(Timeout)
	for len(want) > 0 || senderStatus == nil {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions missing within %v (bad connection's Send reported: %v)", len(want), Timeout, senderStatus != nil)
		}
		for _, cq := range []nd.CompletionQueue{ps.ActiveCQ, ps.PassiveCQ} {
			m := cq.GetResults(out)
			for _, r := range out[:m] {
				if r == &ab.Send {
					st := r.Status
					senderStatus = &st
					continue
				}
				st, ok := want[r]
				if !ok {
					t.Fatalf("an unexpected completion %p (%v)", r, r.Status)
				}
				if r.Status != st {
					t.Fatalf("completion %p: %v, want %v", r, r.Status, st)
				}
				if st == nd.Success && r.BytesTransferred != 64 {
					t.Fatalf("completion %p: %d bytes, want 64", r, r.BytesTransferred)
				}
				delete(want, r)
			}
		}
	}
	switch *senderStatus {
	case nd.Success, nd.ErrRemoteError:
	default:
		t.Fatalf("the oversized Send completed with %v, want ND_SUCCESS or ND_REMOTE_ERROR", *senderStatus)
	}
	if err := pb.Connector.NotifyDisconnect(ctx(t)); err != nil {
		t.Fatalf("NotifyDisconnect on the failed connection: %v", err)
	}
	// The others go on: a few more rounds, with their bytes.
	for round := range 3 {
		for _, i := range others {
			mustPost(t, "Receive", ps.Passive[i].Endpoint.Receive(&ps.Passive[i].Recv, ps.Passive[i].SGL))
			msg := ps.Active[i].Buf
			for b := range msg {
				msg[b] = byte(i + round + b)
			}
			mustPost(t, "Send", ps.Active[i].Endpoint.Send(&ps.Active[i].Send, ps.Active[i].SGL, 0))
		}
		ps.reap(t, ps.ActiveCQ, len(others))
		ps.reap(t, ps.PassiveCQ, len(others))
		for _, i := range others {
			checkBytes(t, fmt.Sprintf("round %d connection %d", round, i), ps.Passive[i].Buf, ps.Active[i].Buf)
		}
	}
}
