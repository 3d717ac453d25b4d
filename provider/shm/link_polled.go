//go:build windows || darwin || freebsd || (linux && shmportable)

package shm

import "time"

// waitUnread waits, at teardown, until the peer can no longer read the
// buffers of the Sends this side sent by rendezvous and that were not
// acknowledged (see link_linux.go): until the peer's reader is done with
// the outbound ring up to end, the peer process is gone (peerExited), or
// ResponseTimeout passed. It looks every millisecond: these systems have
// no descriptor that turns readable when a process exits (Linux's pidfd).
func (l *link) waitUnread(end uint64) {
	if s := currentSeams(); s != nil {
		s.unreadWait(l)
	}
	deadline := time.Now().Add(l.t.p.cfg.ResponseTimeout)
	for {
		l.mu.Lock()
		h, err := l.tx.Consumed()
		l.mu.Unlock()
		if err != nil || h >= end || time.Now().After(deadline) || l.peerExited() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
