package tcp

import "syscall"

// yieldProcessor gives the processor to another thread that is ready to
// run. runtime.Gosched only switches goroutines on this thread; a writer or
// reader whose system call outlasted the runtime's patience runs on another
// thread, and on a process confined to one core it competes for that core
// with whoever polls.
func yieldProcessor() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
