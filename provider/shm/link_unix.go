//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"time"

	"golang.org/x/sys/unix"
)

// waitUnread waits, at teardown, until the peer can no longer read the
// buffers of the Sends this side sent by rendezvous and that were not
// acknowledged (see link_linux.go): until the peer's reader is done with
// the outbound ring up to end, the peer process is gone (kill(pid, 0)
// says ESRCH; a pid of 0 is unknown), or ResponseTimeout passed. It looks
// every millisecond. Without one-sided copies here no Send goes by
// rendezvous, so this does not wait in practice; it keeps the contract.
func (l *link) waitUnread(end uint64) {
	if h := testHookUnread.Load(); h != nil {
		(*h)(l)
	}
	deadline := time.Now().Add(l.t.p.cfg.ResponseTimeout)
	for {
		l.mu.Lock()
		h, err := l.tx.Consumed()
		l.mu.Unlock()
		if err != nil || h >= end || time.Now().After(deadline) || l.pid > 0 && unix.Kill(l.pid, 0) == unix.ESRCH {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// releaseSys releases what the platform holds for the link beyond its
// socket and segment: the active side's port reservation.
func (l *link) releaseSys() {
	if r := l.t.takeReservation(l); r != nil {
		r.release()
	}
}
