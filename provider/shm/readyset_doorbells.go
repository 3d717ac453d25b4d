//go:build windows || darwin || freebsd || (linux && shmportable)

package shm

import (
	"sync"

	"github.com/godirect/nd/internal/shmring"
)

// The readiness set's waiting side where there is no epoll to ask (Windows,
// macOS and FreeBSD, and Linux with the build tag shmportable, which tests
// that code there): a goroutine per link waits on the link's inbound data
// doorbell and queues the link's slot and generation once in the set's
// ready list; a wait of the set takes what the list holds, and a blocking
// one sleeps on a channel that queuing and wake signal. The waiting
// goroutine ends when the doorbell closes (the link's cleanup, after
// remove): what it queues meanwhile names a slot whose generation has moved
// on, or a set that was closed, and is ignored.
//
// On Windows the doorbell is an auto-reset event (a ring while nobody waits
// is kept for the next wait), and each waiting goroutine holds an OS thread
// in WaitForSingleObject while its link is idle. Elsewhere it is a pipe
// registered with the Go runtime's poller, so an idle link's goroutine is
// parked in the runtime's kqueue or epoll, not in a thread of its own; a
// kqueue of the set's own, as Linux's epoll, would save the goroutine's hop
// on a ring.

// readyEvent is one rung doorbell: Fd is the link's slot, Pad its
// generation (the names are epoll's, as on Linux).
type readyEvent struct {
	Fd  int32
	Pad int32
}

// readyReg is a link's registration: nothing to undo (the waiting
// goroutine ends with the doorbell).
type readyReg = struct{}

// readySet is a handle on a ready list; the zero value is a set that is
// not open.
type readySet struct{ r *readyList }

var noReadySet = readySet{}

// readyList is the set's shared state.
type readyList struct {
	mu     sync.Mutex
	queued []*bellWatch
	woken  bool
	signal chan struct{} // capacity 1: something was queued, or wake
}

// bellWatch is one link's doorbell as the set watches it.
type bellWatch struct {
	ev     readyEvent
	queued bool // in the ready list (readyList.mu)
}

func openReadySet() (readySet, error) {
	return readySet{r: &readyList{signal: make(chan struct{}, 1)}}, nil
}

// close does nothing: the waiting goroutines end with their doorbells.
func (s readySet) close() {}

// wake interrupts a blocking wait of the set (now or the next one).
func (s readySet) wake() {
	s.r.mu.Lock()
	s.r.woken = true
	s.r.mu.Unlock()
	s.r.notify()
}

func (r *readyList) notify() {
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// add starts the goroutine that waits on the doorbell b of the link in
// slot with generation gen.
func (s readySet) add(b *shmring.Doorbell, slot int32, gen uint32, _ *readyEvent) (readyReg, error) {
	w := &bellWatch{ev: readyEvent{Fd: slot, Pad: int32(gen)}}
	go s.r.watch(b, w)
	return readyReg{}, nil
}

// watch queues w each time its doorbell rings, until the doorbell closes.
func (r *readyList) watch(b *shmring.Doorbell, w *bellWatch) {
	for b.Wait() == nil {
		r.mu.Lock()
		if !w.queued {
			w.queued = true
			r.queued = append(r.queued, w)
		}
		r.mu.Unlock()
		r.notify()
	}
}

// remove does nothing: the doorbell's close ends its goroutine.
func (s readySet) remove(readyReg) {}

// wait returns, in out's backing array, the links whose doorbell rang,
// waiting (timeout not 0) until one rings or the set is woken; 0 never
// blocks. clearWake consumes a pending wake (the progress goroutine's
// wait); otherwise it stays. Each caller passes its own out.
func (s readySet) wait(out []readyEvent, timeout int, clearWake bool) []readyEvent {
	r := s.r
	for {
		r.mu.Lock()
		if len(r.queued) > 0 || timeout == 0 || clearWake && r.woken {
			n := min(len(out), len(r.queued))
			for i, w := range r.queued[:n] {
				out[i] = w.ev
				w.queued = false
			}
			rest := copy(r.queued, r.queued[n:])
			clear(r.queued[rest:])
			r.queued = r.queued[:rest]
			if clearWake {
				r.woken = false
			}
			r.mu.Unlock()
			return out[:n]
		}
		r.mu.Unlock()
		<-r.signal
	}
}
