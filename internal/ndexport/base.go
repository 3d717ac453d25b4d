package ndexport

import (
	"sync"
	"sync/atomic"
)

// Object is an exported ND object: one of this package's v1 or v2 types.
type Object interface {
	// base returns the object's reference counts and overlapped requests.
	base() *Base
	// released runs once, when the consumer's last reference goes, after
	// the object's pending requests completed.
	released()
	// finalize runs once, when nothing refers to or depends on the object:
	// it closes the object's nd resources and lets go of what it held.
	finalize()
}

// live counts the objects not yet finalized (and the class factories and
// server locks cmd/ndprovider adds), for DllCanUnloadNow; liveDown is
// broadcast when it drops.
var (
	live     atomic.Int64
	liveMu   sync.Mutex
	liveDown = sync.NewCond(&liveMu)
)

// Live is the number of exported objects alive, plus what AddLive added.
// It is safe for concurrent use.
func Live() int64 { return live.Load() }

// AddLive adds n to Live's count: cmd/ndprovider counts its class factories
// and IClassFactory::LockServer locks with it.
func AddLive(n int64) {
	live.Add(n)
	if n < 0 {
		liveMu.Lock()
		liveDown.Broadcast()
		liveMu.Unlock()
	}
}

// WaitLive blocks until Live is at most n or done is closed; it reports
// whether Live reached n.
func WaitLive(n int64, done <-chan struct{}) bool {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
		case <-stop:
		}
		liveMu.Lock()
		liveDown.Broadcast()
		liveMu.Unlock()
	}()
	liveMu.Lock()
	defer liveMu.Unlock()
	for live.Load() > n {
		select {
		case <-done:
			return false
		default:
		}
		liveDown.Wait()
	}
	return true
}

// Base is embedded by every exported object: the consumer's (COM)
// references, the object's lifetime (those references plus one per
// dependent object or pending request), its overlapped requests, and the
// handle of its C face. Its methods are safe for concurrent use.
type Base struct {
	self Object
	refs atomic.Int32
	life atomic.Int32
	// Face is the object's C face (its COM interface pointer), which
	// cmd/ndprovider sets when it exports the object.
	Face atomic.Uintptr
	ops  overlappedOps
}

// init starts b with one reference, the consumer's.
func (b *Base) init(self Object) {
	b.self = self
	b.refs.Store(1)
	b.life.Store(1)
	live.Add(1)
}

func (b *Base) base() *Base { return b }

// BaseOf returns o's reference counts and overlapped requests.
func BaseOf(o Object) *Base { return o.base() }

// AddRef adds a consumer reference and returns the new count; on an object
// whose references are gone it returns 0 and adds nothing.
func (b *Base) AddRef() uint32 {
	for {
		r := b.refs.Load()
		if r <= 0 {
			return 0
		}
		if b.refs.CompareAndSwap(r, r+1) {
			b.life.Add(1)
			return uint32(r + 1)
		}
	}
}

// Release drops a consumer reference and returns the count left; on an
// object whose references are gone it returns 0 and does nothing. The last
// reference's Release returns once the object's pending requests are
// complete.
func (b *Base) Release() uint32 {
	for {
		r := b.refs.Load()
		if r <= 0 {
			return 0
		}
		if b.refs.CompareAndSwap(r, r-1) {
			if r == 1 {
				// The consumer is done with the object: its pending
				// requests are canceled and complete before Release
				// returns, so that nothing writes the consumer's
				// OVERLAPPEDs afterwards (ND's own tools free theirs
				// right after releasing).
				b.CancelOverlappedRequests()
				b.self.released()
			}
			b.unhold()
			return uint32(r - 1)
		}
	}
}

// Alive reports whether the consumer still holds a reference.
func (b *Base) Alive() bool { return b.refs.Load() > 0 }

// hold keeps the object from being finalized until unhold.
func (b *Base) hold() { b.life.Add(1) }

// unhold drops what hold added; the last one finalizes the object.
func (b *Base) unhold() {
	if b.life.Add(-1) == 0 {
		b.self.finalize()
		AddLive(-1)
	}
}
