//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

var benchSizes = []int{64 << 10, 1 << 20, 16 << 20}

// BenchmarkDataPath is ndtest's data-path benchmark with both adapters in
// this process, through the real shared-memory path (Unix socket setup,
// rings, eventfd doorbells, process_vm_*): PingPong half round trips at 8 B
// and 4 KiB, Read and Write bandwidth.
func BenchmarkDataPath(b *testing.B) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		b.Run(modeName(mode), func(b *testing.B) {
			ndtest.Benchmark(b, testProvider(b, shm.Config{OneSided: mode}))
		})
	}
}

func modeName(m shm.OneSided) string {
	if m == shm.OneSidedRing {
		return "ring"
	}
	return "pvm"
}

// benchRDMA measures Read or Write bandwidth over p at benchSizes, 8 in
// flight.
func benchRDMA(b *testing.B, p nd.Provider) {
	for _, op := range []string{"Read", "Write"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", op, size), func(b *testing.B) {
				d := ndtest.NewDataPath(b, p, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					d.Stream(b, op == "Write", 8)
				}
				d.Drain(b)
			})
		}
	}
}

// BenchmarkRDMA is Read and Write bandwidth at 64 KiB, 1 MiB and 16 MiB in
// one process.
func BenchmarkRDMA(b *testing.B) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		b.Run(modeName(mode), func(b *testing.B) { benchRDMA(b, testProvider(b, shm.Config{OneSided: mode})) })
	}
}

// BenchmarkRDMAAllocated is Read and Write bandwidth in one process into a
// window over memory from shm.AllocateMemory: the initiator copies with
// copy() through its mapping of the target's segment.
func BenchmarkRDMAAllocated(b *testing.B) {
	p := testProvider(b, shm.Config{})
	for _, op := range []string{"Read", "Write"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", op, size), func(b *testing.B) {
				pr := ndtest.NewPair(b, p, ndtest.PairConfig{CQEntries: 64})
				abuf := make([]byte, size)
				amr := pr.Active.Register(b, abuf)
				pbuf, err := shm.AllocateMemory(size)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { shm.FreeMemory(pbuf) })
				pmr := pr.Passive.Register(b, pbuf)
				mw, err := pr.Passive.Adapter.CreateMemoryWindow(nil)
				if err != nil {
					b.Fatal(err)
				}
				var res nd.Result
				desc, err := pr.Passive.Endpoint.Bind(&res, pmr, mw, pbuf, nd.FlagAllowRead|nd.FlagAllowWrite)
				if err != nil {
					b.Fatal(err)
				}
				ndtest.Expect(b, pr.Passive.OutCQ, &res, nd.Success, -1)
				sgl := []nd.SGE{{Buffer: abuf, Region: amr}}
				out := make([]*nd.Result, 1)
				ep, cq := pr.Active.Endpoint, pr.Active.OutCQ
				post := func() {
					var err error
					if op == "Write" {
						err = ep.Write(&res, sgl, desc, 0, 0)
					} else {
						err = ep.Read(&res, sgl, desc, 0, 0)
					}
					if err != nil {
						b.Fatal(err)
					}
					for cq.GetResults(out) == 0 {
					}
					if res.Status != nd.Success {
						b.Fatal(res.Status)
					}
				}
				post() // the segment reaches the initiator meanwhile
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					post()
				}
			})
		}
	}
}

// BenchmarkTwoProcesses is Read and Write bandwidth with the target (the
// passive side) in a child process. Only the active side posts, so the
// ndtest/remote proxy is off the measured path (it keeps the child's
// registered memory in step only at the calls the parent makes on it).
func BenchmarkTwoProcesses(b *testing.B) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		b.Run(modeName(mode), func(b *testing.B) {
			c := startChild(b, fmt.Sprintf("godirect-nd-shm-bench-%d", time.Now().UnixNano()), shm.Config{OneSided: mode})
			benchRDMA(b, c.p)
		})
	}
}

var sink []byte

// BenchmarkCopy is single-core copy() bandwidth over the same sizes, the
// baseline for one-copy transfers.
func BenchmarkCopy(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			src, dst := make([]byte, size), make([]byte, size)
			for i := range src {
				src[i] = byte(i)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
			}
			sink = dst
		})
	}
}
