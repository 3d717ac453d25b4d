package ndtest

// The randomized lifecycle property: several goroutines interleave posts,
// polls, Notify waits and closes on a connected pair; whatever the order,
// every request a posting call accepted completes exactly once, every call
// returns what docs/semantics.md says for the closes that preceded it, and
// no provider goroutine or descriptor is left behind.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// The environment variables of the property test.
const (
	// LifecycleSeedEnv sets the first seed (default 1); a failure names
	// the seed that reproduces it.
	LifecycleSeedEnv = "GODIRECT_LIFECYCLE_SEED"
	// LifecycleDurationEnv runs seeds one after another for this long (a
	// time.ParseDuration string such as "10m") instead of
	// LifecycleIterations of them.
	LifecycleDurationEnv = "GODIRECT_LIFECYCLE_DURATION"
)

// LifecycleIterations is how many seeds the property runs by default.
var LifecycleIterations = 100

// The operations of a lifecycle program; a program is a sequence of
// (operation, goroutine) byte pairs.
const (
	pActiveSend = iota
	pActiveReceive
	pActiveRead
	pActiveWrite
	pActiveBindAgain
	pPassiveSend
	pPassiveReceive
	pPassiveRead
	pPassiveWrite
	pPollActiveIn
	pPollActiveOut
	pPollPassiveIn
	pPollPassiveOut
	pNotifyActiveIn
	pNotifyPassiveOut
	pFlushActive
	pDisconnectPassive
	pResizeActiveOut
	pClose // + side*objCount + object
	pOps   = pClose + 2*int(objCount)
)

// lcGoroutines is how many goroutines run a program.
const lcGoroutines = 3

// runLifecycleProperty runs the property over seeds, from LifecycleSeedEnv
// on, for LifecycleIterations seeds or for LifecycleDurationEnv.
func runLifecycleProperty(t *testing.T, p nd.Provider) {
	seed := uint64(1)
	if v := os.Getenv(LifecycleSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", LifecycleSeedEnv, v, err)
		}
		seed = n
	}
	var until time.Time
	if v := os.Getenv(LifecycleDurationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", LifecycleDurationEnv, v, err)
		}
		until = time.Now().Add(d)
	}
	// One program first, so that what a provider starts once (a progress
	// goroutine, a readiness set) exists before the snapshot.
	RunLifecycleProgram(t, p, lcProgram(seed))
	base := TakeLeakSnapshot()
	start := time.Now()
	n, posted, closes := 0, int64(0), int64(0)
	for i := 0; ; i++ {
		if until.IsZero() && i >= LifecycleIterations {
			break
		}
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		s := seed + uint64(i)
		w := runProgram(t, p, lcProgram(s), fmt.Sprintf("seed %d (%s=%d)", s, LifecycleSeedEnv, s))
		posted += w.postedOK.Load()
		closes += w.closes.Load()
		n++
	}
	CheckLeaks(t, base)
	t.Logf("lifecycle property: %d programs (seeds %d..%d), %d requests accepted, %d closes, in %v",
		n, seed, seed+uint64(n)-1, posted, closes, time.Since(start).Round(time.Millisecond))
}

// lcProgram generates the program of seed: mostly posts and polls, with a
// few closes anywhere in it.
func lcProgram(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := 40 + r.IntN(160)
	prog := make([]byte, 0, 2*n+2)
	for range n {
		op := r.IntN(pClose)
		if r.IntN(100) < 5 {
			op = pClose + r.IntN(2*int(objCount))
		}
		prog = append(prog, byte(op), byte(r.IntN(lcGoroutines)))
	}
	// The order everything is closed in at the end, and the queues' shape.
	return append(prog, byte(r.IntN(256)), byte(r.IntN(2)))
}

// RunLifecycleProgram runs one lifecycle program on p: a connected pair is
// made, the program's operations run on lcGoroutines goroutines, then every
// object is closed and every queue drained. It fails t if a request that a
// posting call accepted does not complete exactly once, with an allowed
// status, or if a call returns other than what the closes before it
// decide. Programs are byte strings, (operation, goroutine) pairs; any
// byte string is a valid program, which is what the fuzz targets feed it.
func RunLifecycleProgram(t testing.TB, p nd.Provider, prog []byte) {
	t.Helper()
	runProgram(t, p, prog, "program")
}

func runProgram(t testing.TB, p nd.Provider, prog []byte, name string) *lcWorld {
	t.Helper()
	shared := len(prog) > 0 && prog[len(prog)-1]&1 == 1
	order := slicesPermutation(lcAllObjects, prog)
	w, err := newLCWorld(t, p, shared)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var per [lcGoroutines][]int
	for i := 0; i+1 < len(prog); i += 2 {
		g := int(prog[i+1]) % lcGoroutines
		per[g] = append(per[g], int(prog[i])%pOps)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range per {
		wg.Go(func() {
			<-start
			for _, op := range per[g] {
				w.run(op)
			}
		})
	}
	close(start)
	wg.Wait()
	w.closeEverything(order)
	w.drain()
	w.report(t, name)
	return w
}

// slicesPermutation returns objs in an order chosen by the program's
// checksum.
func slicesPermutation(objs []lcObject, prog []byte) []lcObject {
	var sum uint64
	for _, b := range prog {
		sum = sum*131 + uint64(b)
	}
	r := rand.New(rand.NewPCG(sum, 1))
	out := append([]lcObject(nil), objs...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// run carries out one operation.
func (w *lcWorld) run(op int) {
	a, b := w.active, w.passive
	switch op {
	case pActiveSend:
		w.post(a, opSend)
	case pActiveReceive:
		w.post(a, opReceive)
	case pActiveRead:
		w.post(a, opRead)
	case pActiveWrite:
		w.post(a, opWrite)
	case pActiveBindAgain:
		w.post(a, opBindAgain)
	case pPassiveSend:
		w.post(b, opSend)
	case pPassiveReceive:
		w.post(b, opReceive)
	case pPassiveRead:
		w.post(b, opRead)
	case pPassiveWrite:
		w.post(b, opWrite)
	case pPollActiveIn:
		w.poll(a, a.in)
	case pPollActiveOut:
		w.poll(a, a.out)
	case pPollPassiveIn:
		w.poll(b, b.in)
	case pPollPassiveOut:
		w.poll(b, b.out)
	case pNotifyActiveIn:
		w.notify(a, objInCQ)
	case pNotifyPassiveOut:
		w.notify(b, objOutCQ)
	case pFlushActive:
		deps := a.deps(objEndpoint)
		anyBefore, adapterBefore := a.closedBefore(deps)
		w.mayEnd.Store(true)
		err := a.ep.Flush()
		w.checkCall(a, "active Flush", deps, anyBefore, adapterBefore, err)
	case pDisconnectPassive:
		deps := b.deps(objConnector)
		anyBefore, adapterBefore := b.closedBefore(deps)
		w.mayEnd.Store(true)
		c, cancel := ctxTimeout()
		err := b.c.Disconnect(c)
		cancel()
		w.checkCall(b, "passive Disconnect", deps, anyBefore, adapterBefore, err, nd.ErrConnectionInvalid)
	case pResizeActiveOut:
		deps := a.deps(objOutCQ)
		anyBefore, adapterBefore := a.closedBefore(deps)
		err := a.out.Resize(lcCQEntries)
		w.checkCall(a, "active OutCQ.Resize", deps, anyBefore, adapterBefore, err)
	default:
		k := op - pClose
		s := a
		if k >= int(objCount) {
			s, k = b, k-int(objCount)
		}
		w.close(s, lcObject(k))
	}
}
