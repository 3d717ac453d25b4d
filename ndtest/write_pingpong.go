package ndtest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// pingpongRounds is how many round trips writePolledByteAnswered makes
// (through provider/ndspi under Wine a round trip takes about a
// millisecond). Microsoft's ndrpingpong met a second store of the polled
// byte about once in 3000 round trips through the DLL under Wine.
const pingpongRounds = 3000

// writePolledByteAnswered is the ping-pong of ND's RDMA ping-pong tools
// (ndrpingpong): each side polls byte 0 of a window the peer Writes, and
// stores its next value in that very byte as it answers. The active side
// stores the ping in its byte 0 and Writes a ping to the passive side's;
// the passive side polls its byte 0 until the ping is there, stores its
// pong in the same byte and Writes a pong back; the active side polls for
// the pong. The values stay the same every round, as in the tools. (The
// tools Write from the polled buffer itself; here each Write's byte comes
// from a buffer of its own, so that the race detector, which cannot see
// the ordering that in-order placement gives, sees no unordered access.)
// While a side polls the byte it also polls its completion queue for its
// last Write, so that the bytes keep moving; a side's inbound bytes may be
// placed by the other side's goroutine or the provider's own.
//
// A provider whose placement stores the polled byte twice (a copy that
// writes it again after the poller saw it and answered) undoes the
// answer: the passive side sees the ping again and answers a round that
// never came, and the last ping waits for a pong that is never sent.
func writePolledByteAnswered(t *testing.T, p nd.Provider) {
	if m, ok := p.(interface{ MemoryInStepAtCalls() bool }); ok && m.MemoryInStepAtCalls() {
		t.Skip("a side's memory is in step with the other process only at calls (ndtest/remote): a Write cannot be seen landing by polling")
	}
	pr := NewPair(t, p, PairConfig{})
	const ping, pong = 'X', 'Y'
	a, b := newPolledSide(t, pr.Active, ping), newPolledSide(t, pr.Passive, pong)
	answered := make(chan error, 1)
	go func() {
		for round := range pingpongRounds {
			if err := b.await(ping); err != nil {
				answered <- fmt.Errorf("passive side, round %d: %w", round, err)
				return
			}
			storePolled(&b.buf[0], pong)
			if err := b.write(a.desc); err != nil {
				answered <- fmt.Errorf("passive side, round %d: Write: %w", round, err)
				return
			}
		}
		answered <- b.await(pong) // its last Write's completion
	}()
	for round := range pingpongRounds {
		storePolled(&a.buf[0], ping)
		mustPost(t, "Write", a.write(b.desc))
		if err := a.await(pong); err != nil {
			t.Fatalf("active side, round %d of %d: %v (passive side: %v)", round, pingpongRounds, err, <-answered)
		}
	}
	if err := a.await(pong); err != nil {
		t.Fatalf("active side, after the last round: %v", err)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if a.answers != pingpongRounds || b.answers != pingpongRounds {
		t.Fatalf("Writes completed: active %d, passive %d; want %d each", a.answers, b.answers, pingpongRounds)
	}
}

// polledSide is one side of writePolledByteAnswered: a 64-byte buffer in a
// window the peer may Write, whose byte 0 is polled, and the one-byte
// buffer this side's Writes send.
type polledSide struct {
	s       *Side
	buf     []byte // the window's bytes; byte 0 is polled and answered in
	src     []byte // the value this side Writes
	sgl     []nd.SGE
	desc    nd.MWDescriptor
	res     nd.Result
	pending bool // res is posted and not yet reaped
	answers int  // Writes completed
	out     [1]*nd.Result
}

func newPolledSide(t *testing.T, s *Side, value byte) *polledSide {
	t.Helper()
	x := &polledSide{s: s, buf: make([]byte, 64), src: []byte{value}}
	_, _, x.desc = bindWindow(t, s, x.buf, nd.FlagAllowWrite, nil)
	x.sgl = one(x.src, s.Register(t, x.src))
	return x
}

// write posts the one-byte Write of the side's value to byte 0 of the
// peer's window remote; the side's previous Write must have completed.
func (x *polledSide) write(remote nd.MWDescriptor) error {
	if x.pending {
		return fmt.Errorf("a Write is still outstanding")
	}
	x.pending = true
	return x.s.Endpoint.Write(&x.res, x.sgl, remote, 0, 0)
}

// await polls byte 0 until it holds want and the side's last Write has
// completed, reaping that completion on the way; it fails on a wrong
// completion, or when Timeout passes (a round stalled, however slow the
// host is otherwise).
func (x *polledSide) await(want byte) error {
	deadline := time.Now().Add(Timeout)
	for !x.spin(want) || x.pending {
		if x.pending && x.s.OutCQ.GetResults(x.out[:]) == 1 {
			if x.out[0] != &x.res || x.res.Status != nd.Success || x.res.BytesTransferred != 1 {
				return fmt.Errorf("completion %p (want %p) %v, %d bytes; want its Write, ND_SUCCESS, 1 byte", x.out[0], &x.res, x.out[0].Status, x.out[0].BytesTransferred)
			}
			x.pending = false
			x.answers++
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("byte 0 is %q, waiting for %q (Write outstanding: %v): the peer's answer never came, or this side's Write carried the wrong byte", loadPolled(&x.buf[0]), want, x.pending)
		}
	}
	return nil
}

// spin polls byte 0 in a tight loop, as the tools do, for at most
// spinPolls loads, and reports whether it holds want: a placement that
// stores the byte twice is only seen by a poller that looks again within
// the instructions between the two stores. A burst that found nothing
// yields the processor, so that on a busy host (other tests polling too)
// the provider's goroutines that move the bytes get to run.
func (x *polledSide) spin(want byte) bool {
	for range spinPolls {
		if loadPolled(&x.buf[0]) == want {
			return true
		}
	}
	runtime.Gosched()
	return false
}

const spinPolls = 256

// loadPolled reads the polled byte as the tools do: a plain load, kept out
// of the race detector's sight, since the provider's placement of it is
// ordered before this load only by in-order placement, which the detector
// cannot see. It is never inlined, so every call loads the byte afresh.
//
//go:norace
//go:noinline
func loadPolled(p *byte) byte { return *p }

// storePolled stores the answer in the polled byte, out of the race
// detector's sight like loadPolled.
//
//go:norace
//go:noinline
func storePolled(p *byte, v byte) { *p = v }
