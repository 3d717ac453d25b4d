//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd/internal/shmring"
)

// The readiness set's waiting side on macOS and FreeBSD (and on Linux with
// the build tag shmportable), as on Windows: a goroutine per link waits on
// the link's inbound data doorbell (a pipe, registered with the Go
// runtime's poller, so an idle link's goroutine is parked in the runtime's
// kqueue or epoll, not in a thread of its own) and queues the link's slot
// and generation once in the set's ready list; a wait of the set takes
// what the list holds, and a blocking one sleeps on a channel that
// queuing and wake signal. The waiting goroutine ends when the doorbell
// closes (the link's cleanup, after remove): what it queues meanwhile
// names a slot whose generation has moved on, or a set that was closed,
// and is ignored. A kqueue of the set's own, as Linux's epoll, would save
// the goroutine's hop on a ring; this keeps one code for the three
// systems.

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

// resourceError names the resource a failed system call ran out of, when
// it did: file descriptors, memory, memory mappings.
func resourceError(call string, err error) error {
	switch unwrapErrno(err) {
	case unix.EMFILE:
		return fmt.Errorf("%s: out of file descriptors (the process's RLIMIT_NOFILE): %w", call, err)
	case unix.ENFILE:
		return fmt.Errorf("%s: out of file descriptors (the system's limit): %w", call, err)
	case unix.ENOMEM:
		return fmt.Errorf("%s: out of memory or memory mappings: %w", call, err)
	}
	return os.NewSyscallError(call, err)
}
