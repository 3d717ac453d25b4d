package tcp

import (
	"syscall"

	"github.com/godirect/nd/internal/engine"
)

var _ engine.Poller = (*link)(nil)

// yieldProcessor gives the processor to another thread that is ready to
// run. runtime.Gosched only switches goroutines on this thread; a writer or
// reader whose system call outlasted the runtime's patience runs on another
// thread, and on a process confined to one core it competes for that core
// with whoever polls.
func yieldProcessor() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// Poll implements engine.Poller. Inbound traffic stays the reader's (it
// handles nothing, and returns false); a poll that finds the link inside a
// long read or write yields the processor to that copy, which is the work
// the poller waits for. Safe for concurrent use, also after the link ended.
func (l *link) Poll() bool {
	if l.inSyscall.Load() > 0 {
		yieldProcessor()
	}
	return false
}

// Watch implements engine.Poller: the reader and writer never stand down, so
// there is nothing to resume.
func (l *link) Watch() {}
