//go:build darwin || freebsd || (linux && shmportable)

package shm

import "golang.org/x/sys/unix"

// peerExited reports whether the peer process is gone: kill(pid, 0) says
// ESRCH (a pid of 0 is unknown: never gone). Without one-sided copies here
// no Send goes by rendezvous, so waitUnread does not wait in practice; it
// keeps the contract.
func (l *link) peerExited() bool { return l.pid > 0 && unix.Kill(l.pid, 0) == unix.ESRCH }

// releaseSys releases what the platform holds for the link beyond its
// socket and segment: the active side's port reservation.
func (l *link) releaseSys() {
	if r := l.t.takeReservation(l); r != nil {
		r.release()
	}
}
