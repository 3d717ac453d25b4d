package tcp_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

// TestInlineSendPartialWrite: Sends small enough to be written on the
// posting goroutine go to a peer that does not read, until the socket takes
// one of those writes only in part and the send queue fills behind it (the
// writer holds the rest). Once the peer reads, every Send arrives whole and
// in order, and every one completes Success, in order.
func TestInlineSendPartialWrite(t *testing.T) {
	if !tcp.RawIO {
		t.Skip("Sends go out on the posting goroutine only where sockets are written with raw non-blocking calls (Unix)")
	}
	const depth, size = 64, 4096
	ad, raw, a := acceptRaw(t, nd.EndpointLimits{
		InboundEntries: 1, OutboundEntries: depth, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: hpServerIRD,
	}, 2*depth, func(o *hpMPAOpts) {
		// Not a godirect peer: no confirmation Reads, Sends complete
		// once written.
		o.noPrefix = true
	})
	buf := make([]byte, depth*size)
	mr, err := ad.RegisterMemory(t.Context(), buf)
	if err != nil {
		t.Fatalf("RegisterMemory: %v", err)
	}
	results := make([]nd.Result, depth)
	out := make([]*nd.Result, depth)
	posted, done := 0, 0
	reap := func() {
		n := a.cq.GetResults(out)
		for _, r := range out[:n] {
			if r != &results[done%depth] || r.Status != nd.Success {
				t.Fatalf("completion %d: %p with %v, want Send %d's Result %p with Success", done, r, r.Status, done, &results[done%depth])
			}
			done++
		}
	}
	partial0 := tcp.PartialInlineWrites()
	const limit = (256 << 20) / size
	deadline := time.Now().Add(20 * time.Second)
	for tcp.PartialInlineWrites() == partial0 || posted-done < depth {
		reap()
		if posted-done == depth {
			if time.Now().After(deadline) {
				t.Fatalf("the send queue stayed full, %d Sends in, without a partial inline write", posted)
			}
			runtime.Gosched() // the writer finishes what is queued
			continue
		}
		if posted == limit {
			t.Fatalf("no inline write was partial after %d Sends of %d bytes", posted, size)
		}
		if err := a.ep.Send(&results[posted%depth], []nd.SGE{{Buffer: sendPattern(buf, posted, size), Region: mr}}, 0); err != nil {
			t.Fatalf("Send %d: %v", posted, err)
		}
		posted++
	}

	got := make(chan error, 1)
	go func() {
		var want [size]byte
		for i := range posted {
			seg, err := raw.readSegment(10 * time.Second)
			switch {
			case err != nil:
				got <- err
				return
			case seg.Opcode != iwarp.OpSend || !seg.Last || seg.MSN != uint32(i+1) || seg.MO != 0:
				got <- fmt.Errorf("segment %d: %v last=%v MSN %d MO %d, want Send %d whole", i, seg.Opcode, seg.Last, seg.MSN, seg.MO, i+1)
				return
			case string(seg.Payload) != string(fillPattern(want[:], i)):
				got <- fmt.Errorf("Send %d arrived with other bytes", i)
				return
			}
		}
		got <- nil
	}()
	deadline = time.Now().Add(20 * time.Second)
	for done < posted {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Sends completed", done, posted)
		}
		reap()
		runtime.Gosched()
	}
	t.Logf("%d Sends of %d bytes, %d partial inline writes", posted, size, tcp.PartialInlineWrites()-partial0)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// sendPattern writes Send i's bytes into its slot of buf and returns it.
func sendPattern(buf []byte, i, size int) []byte {
	depth := len(buf) / size
	return fillPattern(buf[i%depth*size:][:size], i)
}

// fillPattern fills b with bytes that name message i.
func fillPattern(b []byte, i int) []byte {
	for j := range b {
		b[j] = byte(i*7 + j)
	}
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

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
	// The held response must not leave by its deferral's timer while the
	// hook below looks at it (20 µs is shorter than a poll under -race);
	// the timer still ends a deferral the fix leaves in place.
	tcp.SetDeferLimit(t, 100*time.Millisecond)
	limits := nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1, InboundReadLimit: hpServerIRD}
	ad, raw, acc := acceptRaw(t, limits, 16, func(*hpMPAOpts) {})
	buf := []byte("8 bytes!")
	mr, err := ad.RegisterMemory(t.Context(), buf)
	if err != nil {
		t.Fatal(err)
	}
	// The application polls, so that its polls move the inbound bytes
	// rather than the progress goroutine.
	var out [4]*nd.Result
	for range 1000 {
		acc.cq.GetResults(out[:])
	}
	ranHook, setUp := false, false
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
		setUp = held()
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
	if !setUp {
		// Another goroutine sent the response before the hook returned:
		// the run could not have failed.
		t.Skip("the response was not held back while the send was under way")
	}
}
