package shm_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestQuietSendsAcknowledged: a receiver that polls holds back the Ack of
// silent Sends, yet their sender's queue (four entries here) keeps
// draining: while the receiver polls, and after it stopped polling without
// waiting in Notify (its reader sends the held Ack). Every message arrives
// once, in order, and no silent Send leaves a completion.
func TestQuietSendsAcknowledged(t *testing.T) {
	limits := ndtest.DefaultLimits
	limits.OutboundEntries = 4
	pair := ndtest.NewPair(t, testProvider(t, shm.Config{}), ndtest.PairConfig{ActiveLimits: limits})
	a, b := pair.Active, pair.Passive
	if a.Inline < 8 {
		t.Skipf("inline size %d", a.Inline)
	}
	const slots, total = 8, 300
	dst := make([]byte, slots*8)
	mr := b.Register(t, dst)
	var recvs [slots]nd.Result
	post := func(i int) {
		s := i % slots
		if err := b.Endpoint.Receive(&recvs[s], []nd.SGE{{Buffer: dst[s*8 : s*8+8], Region: mr}}); err != nil {
			t.Fatalf("Receive %d: %v", i, err)
		}
	}
	for i := range slots {
		post(i)
	}
	var sendRes nd.Result // silent: written only if a Send fails
	var msg [8]byte
	var out [4]*nd.Result
	// send posts Send i (inline, so msg may change at once), polling the
	// sender's queue while it is full of unacknowledged silent Sends.
	send := func(i int, deadline time.Time) {
		binary.LittleEndian.PutUint64(msg[:], uint64(i))
		for {
			err := a.Endpoint.Send(&sendRes, []nd.SGE{{Buffer: msg[:]}}, nd.FlagSilentSuccess)
			if err == nil {
				return
			}
			if !errors.Is(err, nd.ErrNoMoreEntries) {
				t.Fatalf("Send %d: %v", i, err)
			}
			if n := a.OutCQ.GetResults(out[:]); n > 0 {
				t.Fatalf("a silent Send completed: %v", out[0].Status)
			}
			if time.Now().After(deadline) {
				t.Fatalf("Send %d: the queue stayed full", i)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	sent, got := 0, 0
	for got < total {
		for sent < total && sent < got+slots {
			send(sent, deadline)
			sent++
		}
		n := b.InCQ.GetResults(out[:])
		for _, r := range out[:n] {
			s := got % slots
			if r != &recvs[s] || r.Status != nd.Success || r.BytesTransferred != 8 {
				t.Fatalf("message %d: result %p status %v bytes %d", got, r, r.Status, r.BytesTransferred)
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
			t.Fatalf("%d of %d messages arrived", got, total)
		}
	}
	// The receiver no longer polls (and does not wait in Notify): its
	// reader sends the Ack its last Poll held back, so four signaled
	// zero-byte Sends, posted without waiting, find the whole queue free.
	for i := range 4 {
		post(total + i)
	}
	var last [4]nd.Result
	seen := 0
	for i := range last {
		for {
			err := a.Endpoint.Send(&last[i], nil, 0)
			if err == nil {
				break
			}
			if !errors.Is(err, nd.ErrNoMoreEntries) || time.Now().After(deadline) {
				t.Fatalf("signaled Send %d: %v", i, err)
			}
			n := a.OutCQ.GetResults(out[:])
			for _, r := range out[:n] {
				if r != &last[seen] || r.Status != nd.Success {
					t.Fatalf("completion %p (%v), want signaled Send %d's", r, r.Status, seen)
				}
				seen++
			}
		}
	}
	for ; seen < len(last); seen++ {
		ndtest.Expect(t, a.OutCQ, &last[seen], nd.Success, 0)
	}
	for i := range 4 {
		ndtest.Expect(t, b.InCQ, &recvs[(total+i)%slots], nd.Success, 0)
	}
	ndtest.ExpectEmpty(t, a.OutCQ)
}
