//go:build linux

package shm_test

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestPeerKilled: the target process is killed (SIGKILL) while Reads
// and Writes of 16 MiB are in flight and Receives are posted. Everything
// pending completes within a bound, with ND_CANCELED or ND_IO_TIMEOUT (or
// Success for what finished before), and no goroutine or descriptor is
// left behind.
func TestPeerKilled(t *testing.T) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		t.Run(modeName(mode), func(t *testing.T) {
			fds, gs := openFDs(t), runtime.NumGoroutine()
			t.Run("kill", func(t *testing.T) { killMidTransfer(t, mode) })
			// One presence socket per address a provider announced lives as
			// long as the process.
			if !shm.SpinUntil(func() bool { return openFDs(t) <= fds+1 && runtime.NumGoroutine() <= gs }) {
				buf := make([]byte, 1<<20)
				t.Fatalf("leak: %d descriptors (before: %d), %d goroutines (before: %d)\n%s",
					openFDs(t), fds, runtime.NumGoroutine(), gs, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

func killMidTransfer(t *testing.T, mode shm.OneSided) {
	const size = 16 << 20
	c := startChild(t, fmt.Sprintf("godirect-nd-shm-kill-%d", time.Now().UnixNano()), shm.Config{OneSided: mode})
	d := ndtest.NewDataPath(t, c.p, size)
	a := d.Pair.Active
	// Writes, Reads and Receives each have memory of their own: a Read's
	// response may land while a later Write is still being copied out.
	buf := make([]byte, 2*size+4096)
	mr := a.Register(t, buf)
	sgl := []nd.SGE{{Buffer: buf[:size], Region: mr}}
	rsgl := []nd.SGE{{Buffer: buf[size : 2*size], Region: mr}}
	small := []nd.SGE{{Buffer: buf[2*size:], Region: mr}}
	var reqs []*nd.Result
	post := func(err error, r *nd.Result) {
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	for range 4 {
		r := new(nd.Result)
		post(a.Endpoint.Receive(r, small), r)
	}
	for i := range 12 {
		r := new(nd.Result)
		if i%2 == 0 {
			post(a.Endpoint.Write(r, sgl, d.Window, 0, 0), r)
		} else {
			post(a.Endpoint.Read(r, rsgl, d.Window, 0, 0), r)
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	seen := map[*nd.Result]bool{}
	out := make([]*nd.Result, 16)
	if !shm.SpinUntil(func() bool {
		for _, cq := range []nd.CompletionQueue{a.InCQ, a.OutCQ} {
			n := cq.GetResults(out)
			for _, r := range out[:n] {
				seen[r] = true
				switch r.Status {
				case nd.Success, nd.ErrCanceled, nd.ErrIOTimeout:
				default:
					t.Errorf("a request completed %v", r.Status)
				}
			}
		}
		return len(seen) == len(reqs)
	}) {
		t.Fatalf("%d of %d requests completed after the peer was killed", len(seen), len(reqs))
	}
	t.Logf("every pending request completed %v after SIGKILL", time.Since(start))
	<-c.exited
}

// TestStoppedPeerTimesOut: the peer process is stopped (SIGSTOP), alive
// but silent. A Send posted then, even just before the connection's
// watchdog looks, waits for its confirmation for at least ResponseTimeout,
// then the connection ends and the Send completes ErrIOTimeout.
func TestStoppedPeerTimesOut(t *testing.T) {
	const respTimeout = 300 * time.Millisecond
	c := startChild(t, fmt.Sprintf("godirect-nd-shm-stop-%d", time.Now().UnixNano()), shm.Config{ResponseTimeout: respTimeout})
	pr := ndtest.NewPair(t, c.p, ndtest.PairConfig{})
	a := pr.Active
	buf := []byte("to a stopped peer")
	mr := a.Register(t, buf)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer c.cmd.Process.Signal(syscall.SIGCONT)
	// The watchdog's next look waits until the Send is posted.
	looking, posted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	shm.SetWatchdogHook(func() {
		once.Do(func() {
			close(looking)
			<-posted
		})
	})
	t.Cleanup(func() { shm.SetWatchdogHook(nil) })
	<-looking
	sr := new(nd.Result)
	start := time.Now()
	err := a.Endpoint.Send(sr, []nd.SGE{{Buffer: buf, Region: mr}}, 0)
	close(posted)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*nd.Result, 1)
	var done time.Duration
	if !shm.SpinUntil(func() bool {
		if a.OutCQ.GetResults(out) == 0 {
			return false
		}
		done = time.Since(start)
		return true
	}) {
		t.Fatal("the Send to a stopped peer never completed")
	}
	if out[0] != sr || out[0].Status != nd.ErrIOTimeout {
		t.Fatalf("completion %p status %v, want the Send (%p) with ErrIOTimeout", out[0], out[0].Status, sr)
	}
	if done < respTimeout {
		t.Fatalf("the Send timed out after %v, before ResponseTimeout (%v)", done, respTimeout)
	}
	t.Logf("the Send completed ErrIOTimeout %v after it was posted", done)
}
