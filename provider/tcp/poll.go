package tcp

import "github.com/godirect/nd/internal/engine"

var _ engine.Poller = (*link)(nil)

// Poll implements engine.Poller. Inbound traffic stays the reader's (it
// handles nothing, and returns false), which keeps polling the socket while
// Poll calls come (polls); a poll that finds the link inside a long read or
// write yields the processor to that copy, which is the work the poller
// waits for. Safe for concurrent use, also after the link ended.
func (l *link) Poll() bool {
	l.polls.Add(1)
	if l.inSyscall.Load() > 0 {
		yieldProcessor()
	}
	return false
}

// Watch implements engine.Poller: the reader and writer never stand down, so
// there is nothing to resume.
func (l *link) Watch() {}
