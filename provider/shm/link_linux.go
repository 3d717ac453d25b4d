//go:build linux && !shmportable

package shm

import (
	"time"

	"golang.org/x/sys/unix"
)

// waitUnread waits, at teardown, until the peer can no longer read the
// buffers of the Sends this side sent by rendezvous and that were not
// acknowledged, before cleanup hands them back to the application
// (ND_CANCELED): until the peer's reader is done with the outbound ring up
// to end (its head passed it: it handled those records, or gave them up
// when it stopped, see shmring.Consumer.Abandon), the peer process is
// gone, or ResponseTimeout passed (a peer that reads later anyway only
// gets wrong bytes into its own Receive). A peer whose wedging timed the
// connection out (ND_IO_TIMEOUT) is not waited for again.
func (l *link) waitUnread(end uint64) {
	if s := currentSeams(); s != nil {
		s.unreadWait(l)
	}
	pidfd, err := unix.PidfdOpen(l.pid, 0)
	if err == unix.ESRCH {
		return
	}
	if err == nil {
		defer unix.Close(pidfd)
	} else {
		pidfd = -1
	}
	deadline := time.Now().Add(l.t.p.cfg.ResponseTimeout)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		l.mu.Lock()
		h, err := l.tx.Consumed()
		l.mu.Unlock()
		if err != nil || h >= end || time.Now().After(deadline) {
			return
		}
		// Sleep a millisecond, or less if the peer exits (its pidfd turns
		// readable); a negative fd is ignored.
		if n, _ := unix.Poll(fds, 1); n > 0 {
			return
		}
	}
}

// releaseSys releases what the platform holds for the link beyond its
// socket and segment: nothing on Linux.
func (l *link) releaseSys() {}
