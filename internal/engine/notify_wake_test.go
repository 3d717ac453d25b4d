package engine

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/handoff"
)

// pollingTransport is a transport whose inbound traffic is moved as
// provider/tcp's readiness set moves it (engine.Progress): by the
// application's polls while they come, and otherwise, or while an
// application waits in Notify, by a progress goroutine that runs
// handoff.Run. Its "socket" is a count of messages arrived and not yet
// moved, level-triggered as epoll is: the progress goroutine blocks only
// while none is pending, and wakes when one arrives or Watch interrupts
// it. Moving a message completes the next of results into cq.
//
// The hooks let a test make a message arrive at each point of the
// application's way from an empty poll to a wait in Notify.
type pollingTransport struct {
	noTransport
	h    *handoff.Handoff
	gone time.Duration // the progress goroutine's sleep between looks

	mu                sync.Mutex
	cq                *CQ
	arrived, moved    int
	results           [4]nd.Result
	owner             slotCount
	closed            bool
	polls             int
	serving           bool        // the progress goroutine is in serve
	afterPoll         func(n int) // after the n-th Poll (from 1) moved what was there
	beforeWatch       func()      // in Watch, before the progress goroutine is told
	afterHandoffWatch func()      // in Watch, after handoff.Watch, before the interrupt

	ready     chan struct{} // a message arrived (the kernel's readiness)
	interrupt chan struct{} // Watch ends the progress goroutine's wait
	done      chan struct{} // the progress goroutine ended
}

func newPollingTransport(gone time.Duration) *pollingTransport {
	return &pollingTransport{
		h: handoff.New(), gone: gone,
		ready: make(chan struct{}, 1), interrupt: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// start runs the progress goroutine for the transport's queue cq.
func (p *pollingTransport) start(cq *CQ) {
	p.cq = cq
	go func() {
		defer close(p.done)
		p.h.Run(p.gone, p.ended, p.serve)
	}()
}

// stop ends the progress goroutine and waits for it.
func (p *pollingTransport) stop() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.h.Wake()
	p.kick(p.interrupt)
	<-p.done
}

func (p *pollingTransport) ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// kick sends on c unless a send is pending already.
func (p *pollingTransport) kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// arrive makes one message arrive on the "socket".
func (p *pollingTransport) arrive() {
	p.mu.Lock()
	p.arrived++
	p.mu.Unlock()
	p.kick(p.ready)
}

// move completes a Result for every message arrived and not moved yet, and
// reports whether there was one.
func (p *pollingTransport) move() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	handled := p.moved < p.arrived
	for ; p.moved < p.arrived; p.moved++ {
		p.owner.posted++
		p.cq.push(&p.results[p.moved], &p.owner, false)
	}
	return handled
}

func (p *pollingTransport) pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.moved < p.arrived
}

// serve is the progress goroutine's turn: it moves what arrives until an
// application polls again and none waits.
func (p *pollingTransport) serve(turn *handoff.Turn) bool {
	p.mu.Lock()
	p.serving = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.serving = false
		p.mu.Unlock()
	}()
	for {
		p.move()
		if p.ended() {
			return false
		}
		if turn.Over() {
			return true
		}
		if !p.pending() {
			select {
			case <-p.ready:
			case <-p.interrupt:
			}
		}
	}
}

// Poll implements Progress.
func (p *pollingTransport) Poll() bool {
	p.h.PollStart()
	defer p.h.PollEnd()
	handled := p.move()
	p.mu.Lock()
	p.polls++
	n, hook := p.polls, p.afterPoll
	p.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return handled
}

// Watch implements Progress.
func (p *pollingTransport) Watch() {
	if p.beforeWatch != nil {
		p.beforeWatch()
	}
	p.h.Watch()
	if p.afterHandoffWatch != nil {
		p.afterHandoffWatch()
	}
	p.kick(p.interrupt)
}

// Unwatch implements Progress.
func (p *pollingTransport) Unwatch() { p.h.Unwatch() }

// TestNotifyAfterPollsMissesNoArrival: an application that polled an empty
// queue for a while (so the progress goroutine left the traffic to its
// polls and sleeps) and then waits in Notify gets a message that arrives at
// any point of that way at once: at the fake instant it arrives, not when
// the progress goroutine's sleep would have ended by itself. Each case
// places the arrival at one point; the bubble's clock shows whether a
// timer had to rescue the wait, and a wait nobody ends is the bubble's
// deadlock.
func TestNotifyAfterPollsMissesNoArrival(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(p *pollingTransport, arrived chan<- time.Time)
	}{
		// WaitResults' first GetResults polled and found nothing; the
		// message arrives before Notify polls.
		{"AfterTheEmptyPoll", func(p *pollingTransport, arrived chan<- time.Time) {
			p.afterPoll = func(n int) {
				if n == 1 {
					arrived <- time.Now()
					p.arrive()
				}
			}
		}},
		// Notify's own poll found nothing; the message arrives before
		// Notify records its waiter.
		{"AfterNotifysPoll", func(p *pollingTransport, arrived chan<- time.Time) {
			p.afterPoll = func(n int) {
				if n == 2 {
					arrived <- time.Now()
					p.arrive()
				}
			}
		}},
		// As above, and another poller moves it into the queue before
		// Notify records its waiter: the completion is pending.
		{"MovedBeforeTheWaiterIsRecorded", func(p *pollingTransport, arrived chan<- time.Time) {
			p.afterPoll = func(n int) {
				if n == 2 {
					arrived <- time.Now()
					p.arrive()
					p.move()
				}
			}
		}},
		// The waiter is recorded; the progress goroutine is not told yet.
		{"BeforeWatch", func(p *pollingTransport, arrived chan<- time.Time) {
			p.beforeWatch = func() {
				arrived <- time.Now()
				p.arrive()
			}
		}},
		// The hand-off knows of the waiter; the progress goroutine's wait
		// is not interrupted yet.
		{"BeforeTheInterrupt", func(p *pollingTransport, arrived chan<- time.Time) {
			p.afterHandoffWatch = func() {
				arrived <- time.Now()
				p.arrive()
			}
		}},
		// Everyone waits: the application in Notify, the progress
		// goroutine for the socket.
		{"WhileEveryoneWaits", func(p *pollingTransport, arrived chan<- time.Time) {
			go func() {
				synctest.Wait()
				arrived <- time.Now()
				p.arrive()
			}()
		}},
	} {
		// The progress goroutine sleeps between looks at the polls, or
		// it took over once they stopped and waits for the socket.
		for _, serving := range []bool{false, true} {
			name := tc.name + "/ProgressAsleep"
			if serving {
				name = tc.name + "/ProgressServing"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testNotifyAfterPolls(t, serving, tc.arm) })
			})
		}
	}
}

func testNotifyAfterPolls(t *testing.T, serving bool, arm func(p *pollingTransport, arrived chan<- time.Time)) {
	// The progress goroutine's sleep is provider/tcp's (pollerGone): a
	// lost wake-up would cost one sleep, which the fake clock shows.
	p := newPollingTransport(100 * time.Microsecond)
	a := NewAdapter(netip.MustParseAddr("127.0.0.1"), nd.AdapterInfo{MaxCQEntries: 8}, p)
	defer a.Close()
	cq, err := a.CreateCompletionQueue(4)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	p.start(cq.(*CQ))
	defer p.stop()

	// The application polls an empty queue for a millisecond, more often
	// than the progress goroutine looks: its polls have the traffic, and
	// the progress goroutine sleeps. Once they stop for longer than a
	// sleep, it takes the traffic over and waits for the socket.
	got := make([]*nd.Result, 4)
	for range 100 {
		time.Sleep(10 * time.Microsecond)
		if n := cq.GetResults(got); n != 0 {
			t.Fatalf("GetResults took %d completions before any arrived", n)
		}
	}
	if serving {
		time.Sleep(time.Millisecond)
	}
	synctest.Wait()
	p.mu.Lock()
	p.polls = 0
	nowServing := p.serving
	p.mu.Unlock()
	if nowServing != serving {
		t.Fatalf("the progress goroutine serves: %v, want %v", nowServing, serving)
	}

	arrived := make(chan time.Time, 1)
	arm(p, arrived)
	n, err := nd.Waiter{}.WaitResults(context.Background(), cq, got)
	taken := time.Now()
	if err != nil || n != 1 || got[0] != &p.results[0] {
		t.Fatalf("WaitResults = %d, %v (first %p), want 1 completion (%p)", n, err, got[0], &p.results[0])
	}
	if at := <-arrived; taken != at {
		t.Errorf("the completion was taken %v after its message arrived, want at once", taken.Sub(at))
	}
}
