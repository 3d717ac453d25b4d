package ndtest

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// runSilentQueue checks that silent Sends free their queue entries without
// a completion: a sender with four outbound entries streams silent Sends
// while the receiver polls, and once the receiver stopped polling (without
// waiting in Notify) four signaled Sends, posted without waiting, find the
// whole queue free. A transport may confirm or acknowledge silent Sends
// lazily; it must not leave them unconfirmed. Every message arrives once,
// in order, and no silent Send leaves a completion.
func runSilentQueue(t *testing.T, p nd.Provider) {
	limits := DefaultLimits
	limits.OutboundEntries = 4
	pr := NewPair(t, p, PairConfig{ActiveLimits: limits})
	a, b := pr.Active, pr.Passive
	if a.Inline < 8 {
		t.Skipf("the endpoint grants %d bytes of inline data, the test sends 8", a.Inline)
	}
	const slots, total = 8, 300
	dst := make([]byte, slots*8)
	mr := b.Register(t, dst)
	var recvs [slots]nd.Result
	post := func(i int) {
		s := i % slots
		mustPost(t, "Receive", b.Endpoint.Receive(&recvs[s], []nd.SGE{{Buffer: dst[s*8 : s*8+8], Region: mr}}))
	}
	for i := range slots {
		post(i)
	}
	deadline := time.Now().Add(Timeout)
	var out [4]*nd.Result
	// postFull posts with post, polling the sender's queue while it is full
	// of Sends not yet confirmed; the completions it finds must be want's.
	var want []*nd.Result
	postFull := func(what string, post func() error) {
		for {
			err := post()
			if err == nil {
				return
			}
			if !errors.Is(err, nd.ErrNoMoreEntries) {
				t.Fatalf("%s: %v", what, err)
			}
			n := a.OutCQ.GetResults(out[:])
			for _, r := range out[:n] {
				if len(want) == 0 || r != want[0] || r.Status != nd.Success {
					t.Fatalf("%s: a completion %p (%v) while the queue was full", what, r, r.Status)
				}
				want = want[1:]
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the queue stayed full for %v", what, Timeout)
			}
		}
	}
	var silent nd.Result // written only if a silent Send fails
	var msg [8]byte
	sent, got := 0, 0
	for got < total {
		for sent < total && sent < got+slots {
			binary.LittleEndian.PutUint64(msg[:], uint64(sent))
			postFull("silent Send", func() error {
				return a.Endpoint.Send(&silent, []nd.SGE{{Buffer: msg[:]}}, nd.FlagSilentSuccess)
			})
			sent++
		}
		n := b.InCQ.GetResults(out[:])
		for _, r := range out[:n] {
			s := got % slots
			if r != &recvs[s] || r.Status != nd.Success || r.BytesTransferred != 8 {
				t.Fatalf("message %d: Result %p, %v, %d bytes", got, r, r.Status, r.BytesTransferred)
			}
			if v := binary.LittleEndian.Uint64(dst[s*8:]); v != uint64(got) {
				t.Fatalf("message %d carried %d", got, v)
			}
			if got+slots < total {
				post(got + slots)
			}
			got++
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages arrived within %v", got, total, Timeout)
		}
	}
	for i := range 4 {
		post(total + i)
	}
	var last [4]nd.Result
	for i := range last {
		want = append(want, &last[i])
		postFull("signaled Send", func() error { return a.Endpoint.Send(&last[i], nil, 0) })
	}
	for _, r := range want {
		Expect(t, a.OutCQ, r, nd.Success, 0)
	}
	for i := range 4 {
		Expect(t, b.InCQ, &recvs[(total+i)%slots], nd.Success, 0)
	}
	ExpectEmpty(t, a.OutCQ)
}
