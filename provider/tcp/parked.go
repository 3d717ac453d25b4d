package tcp

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Every yieldPolls-th poll of a link yields the processor, and every
// parkedPolls-th also serves the parked links (otherWork). Looking for
// parked links with data is a system call (epoll_wait): at every 32nd poll
// it cost an nd perf send_lat client, whose control connection stays idle,
// 3 to 6% of its latency.
const (
	yieldPolls  = 32
	parkedPolls = 256
)

// otherWork lets the process's other tcp work go on while the application
// polls polled: it yields the processor to the goroutines that are ready
// (writers, readers woken by a poll, timers), and, if withParked, reads
// the sockets of the links whose reader waits in the runtime's network
// poller and that have data.
//
// In a process on one processor (GOMAXPROCS 1) an application that polls
// without pause leaves no other moment for either: a goroutine runs at the
// scheduler's preemption, every 10 ms, and a reader parked in the network
// poller wakes only when the runtime next polls the network, as rarely.
// Until then the requests of a peer to a connection the application does
// not poll (an RDMA Read of its memory, say) wait. In-process
// BenchmarkDataPath on one core: Read 4 KiB 126 to 24 us, Write 4 KiB 230
// to 34 us; a Read of an idle connection's window while the application
// polls another connection: 18 ms to about 0.9 ms.
func otherWork(polled *link, withParked bool) {
	runtime.Gosched()
	if !withParked {
		return
	}
	if n := parked.count.Load(); n == 0 || n == 1 && polled.rxParked.Load() {
		return
	}
	var buf [16]*link
	for _, h := range parked.ready(polled, buf[:0]) {
		h.pollRx()
	}
}

// parked is the process's set of links whose reader waits in the network
// poller, with the means to find those with data (parked_linux.go: an
// epoll set of their sockets).
var parked = parkedSet{byID: make(map[int32]*link)}

type parkedSet struct {
	count  atomic.Int32 // len(byID)
	mu     sync.Mutex
	byID   map[int32]*link
	nextID int32
	watch  readyWatch
}

// setParked records whether l's reader waits in the network poller, in
// l.rxParked and in the process's set of such links.
func (l *link) setParked(on bool) {
	s := &parked
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.rxParked.Swap(on) == on {
		return
	}
	if on {
		s.nextID++
		if s.nextID <= 0 {
			s.nextID = 1
		}
		l.parkedID = s.nextID
		s.byID[l.parkedID] = l
		s.watch.add(l)
	} else {
		s.watch.remove(l)
		delete(s.byID, l.parkedID)
	}
	s.count.Store(int32(len(s.byID)))
}

// ready appends to out (up to its capacity) the parked links other than
// polled whose socket has data (or, where that cannot be asked, one of
// them in turn).
func (s *parkedSet) ready(polled *link, out []*link) []*link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watch.ready(s, polled, out)
}

// roundRobin picks the parked links one at a time, in turn.
type roundRobin struct{ last int32 }

// next appends to out the parked link after the last one it picked (by
// parked ID), other than polled; s.mu held.
func (r *roundRobin) next(s *parkedSet, polled *link, out []*link) []*link {
	var first, after *link
	for id, h := range s.byID {
		if h == polled {
			continue
		}
		if id > r.last && (after == nil || id < after.parkedID) {
			after = h
		}
		if first == nil || id < first.parkedID {
			first = h
		}
	}
	if after == nil {
		after = first
	}
	if after != nil {
		r.last = after.parkedID
		out = append(out, after)
	}
	return out
}
