//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"testing"
	"time"

	"github.com/godirect/nd"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// testProvider returns a provider in a namespace of its own, so that tests
// running at once (and other processes) do not share ports.
func testProvider(t testing.TB, cfg shm.Config) *shm.Provider {
	if cfg.Namespace == "" {
		cfg.Namespace = "godirect-nd-shm-test-" + t.Name()
	}
	return shm.New(cfg)
}

// TestConformance runs the suite with both adapters in this process,
// connected through Unix sockets and shared memory exactly as two processes
// would be.
func TestConformance(t *testing.T) { ndtest.Run(t, testProvider(t, shm.Config{})) }

// rendezvousResponseTimeout is the ResponseTimeout of the rendezvous
// suites: a Send by rendezvous written after the peer's reader stopped (the
// peer closed meanwhile, which ndtest's Lifecycle cases do all the time)
// stays the sender's until the peer can no longer read its buffers, which
// the sender learns only after ResponseTimeout; the cases' drain waits
// ndtest.Timeout (10 s) for it to complete ErrCanceled.
const rendezvousResponseTimeout = 2 * time.Second

// TestConformanceRendezvous is the suite with every Send that carries a
// byte sent by rendezvous (SendThreshold 1).
func TestConformanceRendezvous(t *testing.T) {
	p := testProvider(t, shm.Config{SendThreshold: 1, ResponseTimeout: rendezvousResponseTimeout})
	ndtest.Run(t, p)
	t.Run("RendezvousCounted", func(t *testing.T) { rendezvousCounted(t, p, p) })
}

// rendezvousCounted moves bytes both ways over p (ndtest.CheckBytes: a
// Send, a Write, a Read and a ping-pong of 4 KiB) and checks, in the
// counts of local, this process's provider, that Sends went by rendezvous
// and were pulled (none where no process reads another's memory: the
// rings carry them). It is a case of its own, so that a run of any subset
// of a suite's cases checks only what that subset did.
func rendezvousCounted(t *testing.T, p nd.Provider, local *shm.Provider) {
	sent0, pulled0 := shm.RendezvousCounts(local)
	ndtest.CheckBytes(t, p, 4096)
	sent, pulled := shm.RendezvousCounts(local)
	sent, pulled = sent-sent0, pulled-pulled0
	if err := shm.ProcessMemoryError(); err != nil {
		if sent != 0 || pulled != 0 {
			t.Errorf("%d Sends went by rendezvous and %d were pulled without process memory access (%v), want 0", sent, pulled, err)
		}
		return
	}
	if sent == 0 || pulled == 0 || pulled > sent {
		t.Errorf("%d Sends went by rendezvous and %d were pulled, want 0 < pulled <= sent", sent, pulled)
	}
}

// TestConformanceRing is the suite with Reads and Writes through the rings.
func TestConformanceRing(t *testing.T) {
	ndtest.Run(t, testProvider(t, shm.Config{OneSided: shm.OneSidedRing}))
}

func ndtestRun(t *testing.T, p nd.Provider) { ndtest.Run(t, p) }
