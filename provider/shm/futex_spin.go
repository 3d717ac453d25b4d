//go:build windows || darwin || freebsd || (linux && shmportable)

package shm

import "time"

// Where no futex crosses processes, the target waits for the initiator's
// in-flight count to fall by a sleeping spin: the count is looked at again
// after each futexSleep. On Windows WaitOnAddress keys by virtual address
// within one process; macOS has no cross-process futex in its public
// interface; FreeBSD's _umtx_op would be a second platform-specific path
// for a rare wait (a window unbound while the peer copies against it,
// bounded by ResponseTimeout). Linux with the build tag shmportable runs
// this code to test it.

// futexNap is how long futexSleep sleeps at most before the caller looks
// again.
const futexNap = 100 * time.Microsecond

// futexSleep sleeps for a short while, at most d; the caller checks *p
// again (p and v are for the Linux futex's signature).
func futexSleep(p *uint32, v uint32, d time.Duration) {
	if d <= 0 {
		return
	}
	time.Sleep(min(d, futexNap))
}

// futexWakeAll does nothing: the target's futexSleep wakes by itself.
func futexWakeAll(p *uint32) {}
