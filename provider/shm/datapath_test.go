//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestDataPathAllocatesNothing: posting and reaping a Send/Receive pair, a
// Read and a Write allocate nothing, through the rings and process_vm_*,
// and with every Send by rendezvous.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			ndtest.CheckAllocs(t, testProvider(t, shm.Config{OneSided: mode}))
		})
	}
	t.Run("rendezvous", func(t *testing.T) {
		if err := shm.ProcessMemoryError(); err != nil {
			t.Skip("no Send goes by rendezvous here:", err)
		}
		p := testProvider(t, shm.Config{SendThreshold: 1})
		ndtest.CheckAllocs(t, p)
		if _, pulled := shm.RendezvousCounts(p); pulled == 0 {
			t.Error("no Send went by rendezvous")
		}
	})
	t.Run("rendezvous-split", func(t *testing.T) {
		// 1 MiB Sends: pulled by the reader and the pull helper.
		if err := shm.ProcessMemoryError(); err != nil {
			t.Skip("no Send goes by rendezvous here:", err)
		}
		p := testProvider(t, shm.Config{})
		d := ndtest.NewDataPath(t, p, 1<<20)
		op := func() { d.SendReceive(t) }
		op()
		if n := testing.AllocsPerRun(100, op); n != 0 {
			t.Errorf("%v allocations per 1 MiB Send/Receive, want 0", n)
		}
		if _, pulled := shm.RendezvousCounts(p); pulled < 100 {
			t.Errorf("%d Sends pulled, want them all", pulled)
		}
	})
	t.Run("ring-1MiB", func(t *testing.T) {
		// 1 MiB Sends through the rings, in many records.
		p := testProvider(t, shm.Config{OneSided: shm.OneSidedRing, SendThreshold: -1})
		d := ndtest.NewDataPath(t, p, 1<<20)
		op := func() { d.SendReceive(t) }
		op()
		if n := testing.AllocsPerRun(100, op); n != 0 {
			t.Errorf("%v allocations per 1 MiB Send/Receive through the rings, want 0", n)
		}
		if _, pulled := shm.RendezvousCounts(p); pulled != 0 {
			t.Errorf("%d Sends pulled by rendezvous, want none", pulled)
		}
	})
}

// TestDataPathBytes checks the bytes the data-path operations move, so that
// the benchmarks measure transfers that really happen.
func TestDataPathBytes(t *testing.T) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		for _, size := range []int{4096, 3 << 20} { // 3 MiB Sends by rendezvous
			t.Run(fmt.Sprint(mode, "/", size), func(t *testing.T) {
				ndtest.CheckBytes(t, testProvider(t, shm.Config{OneSided: mode}), size)
			})
		}
	}
}

// BenchmarkPeers measures many connections sharing one completion queue a
// side (ndtest.BenchmarkPeers).
func BenchmarkPeers(b *testing.B) {
	ndtest.BenchmarkPeers(b, testProvider(b, shm.Config{}), ndtest.PeerCounts)
}

// BenchmarkIdleConnections reports what an idle connection's endpoint
// costs (ndtest.IdleCost) with 500 connections in this process, both ends
// here: heap bytes and goroutines per endpoint.
func BenchmarkIdleConnections(b *testing.B) {
	for range b.N {
		heap, gs := ndtest.IdleCost(b, testProvider(b, shm.Config{}), 500)
		b.ReportMetric(heap, "heap-B/endpoint")
		b.ReportMetric(gs, "goroutines/endpoint")
	}
}

// TestSilentPingPongGetsItsSlotsBack: the two sides answer each other with
// silent Sends on outbound queues one request deep, polling only (an
// application poll holds back the Ack of a quiet message). Each Send's
// entry comes back before the side's next Send: on a queue this shallow a
// silent Send is not quiet, and the peer acknowledges it as it handles it,
// as hardware would.
func TestSilentPingPongGetsItsSlotsBack(t *testing.T) {
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1, InboundSGE: 1, OutboundSGE: 1}
	pr := ndtest.NewPair(t, testProvider(t, shm.Config{}), ndtest.PairConfig{ActiveLimits: limits, PassiveLimits: limits, CQEntries: 4})
	type side struct {
		s                *ndtest.Side
		buf, rbuf        []byte
		sendSGL, recvSGL []nd.SGE
		send, recv       nd.Result
	}
	mk := func(s *ndtest.Side) *side {
		x := &side{s: s, buf: make([]byte, 16)}
		mr := s.Register(t, x.buf)
		x.rbuf = x.buf[8:]
		x.sendSGL = []nd.SGE{{Buffer: x.buf[:8], Region: mr}}
		x.recvSGL = []nd.SGE{{Buffer: x.rbuf, Region: mr}}
		return x
	}
	a, p := mk(pr.Active), mk(pr.Passive)
	// await polls x's inbound queue (no Notify) until its Receive completes
	// with the stamp.
	await := func(x *side, stamp uint64) {
		t.Helper()
		out := make([]*nd.Result, 1)
		if !shm.SpinUntil(func() bool { return x.s.InCQ.GetResults(out) == 1 }) {
			t.Fatalf("round %d: no Receive completed", stamp)
		}
		if out[0] != &x.recv || x.recv.Status != nd.Success || x.recv.BytesTransferred != 8 || binary.LittleEndian.Uint64(x.rbuf) != stamp {
			t.Fatalf("round %d: completion %p (Receive %p) %v, %d bytes, stamp %d", stamp, out[0], &x.recv, out[0].Status, out[0].BytesTransferred, binary.LittleEndian.Uint64(x.rbuf))
		}
	}
	post := func(x *side) {
		t.Helper()
		if err := x.s.Endpoint.Receive(&x.recv, x.recvSGL); err != nil {
			t.Fatal(err)
		}
	}
	send := func(x *side, stamp uint64) {
		t.Helper()
		binary.LittleEndian.PutUint64(x.buf, stamp)
		if err := x.s.Endpoint.Send(&x.send, x.sendSGL, nd.FlagSilentSuccess); err != nil {
			t.Fatalf("round %d: Send: %v", stamp, err)
		}
	}
	post(a)
	post(p)
	for i := range uint64(2000) {
		send(a, 2*i)
		await(p, 2*i)
		post(p)
		send(p, 2*i+1)
		await(a, 2*i+1)
		post(a)
	}
}
