//go:build linux

package tcp

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// TestEmptyReadPause: after an application's direct poll whose read found
// nothing, the application's polls do not read the connection again until
// emptyReadPause times that poll's duration has passed, and the bytes that
// arrived meanwhile stay in the socket until the first poll after it,
// which delivers them. The test's own clock makes the times exact, and the
// test holds the readiness set's lock, which the application's direct
// polls do not take: the progress goroutine, if it serves the connection,
// cannot read it meanwhile.
func TestEmptyReadPause(t *testing.T) {
	var now, step atomic.Int64
	step.Store(100)
	old := monotime
	monotime = func() int64 { return now.Add(step.Load()) }
	t.Cleanup(func() { monotime = old })

	pa, pb := New(Config{}), New(Config{})
	a := openFirstAdapter(t, pa)
	b := openFirstAdapter(t, pb)
	pr := ndtest.NewPairOn(t, a, b, ndtest.PairConfig{})
	buf := make([]byte, 16)
	var recv nd.Result
	if err := pr.Active.Endpoint.Receive(&recv, []nd.SGE{{Buffer: buf, Region: pr.Active.Register(t, buf)}}); err != nil {
		t.Fatal(err)
	}
	pa.t.progress.mu.Lock()
	defer pa.t.progress.mu.Unlock()
	d := pa.t.progress.links.Direct()
	if len(d) != 1 {
		t.Fatalf("the active provider polls %d links directly, want 1", len(d))
	}
	inq := func() int {
		n := -1
		if err := d[0].sock.raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var out [1]*nd.Result
	// The poll reads at 100 and finds nothing at 200 (the clock moves 100
	// at each look): no read before 200 + 2*100.
	if n := pr.Active.InCQ.GetResults(out[:]); n != 0 {
		t.Fatalf("GetResults = %d before anything was sent", n)
	}
	step.Store(0)
	if got, want := pa.t.progress.readAfter.Load(), now.Load()+100*emptyReadPause; got != want {
		t.Fatalf("no read before %d, want %d", got, want)
	}
	if err := pr.Passive.Endpoint.Send(new(nd.Result), []nd.SGE{{Buffer: []byte("hello")}}, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for polls := 0; inq() <= 0 || polls < 100; polls++ {
		if n := pr.Active.InCQ.GetResults(out[:]); n != 0 {
			t.Fatalf("a poll before the pause ended took %d results", n)
		}
		if time.Now().After(deadline) {
			t.Fatal("the Send's bytes never reached the socket")
		}
	}
	now.Store(pa.t.progress.readAfter.Load())
	if n := pr.Active.InCQ.GetResults(out[:]); n != 1 || out[0] != &recv || recv.Status != nd.Success || recv.BytesTransferred != 5 {
		t.Fatalf("the first poll after the pause: %d results, want the Receive with 5 bytes", n)
	}
	if string(buf[:5]) != "hello" {
		t.Fatalf("received %q", buf[:5])
	}
}

// openFirstAdapter opens p's first address's adapter until the test ends.
func openFirstAdapter(t *testing.T, p *Provider) nd.Adapter {
	t.Helper()
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("Addresses() = %v, %v", addrs, err)
	}
	a, err := p.OpenAdapter(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
