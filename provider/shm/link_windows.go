package shm

import "time"

// waitUnread waits, at teardown, until the peer can no longer read the
// buffers of the Sends this side sent by rendezvous and that were not
// acknowledged (see link_linux.go): until the peer's reader is done with
// the outbound ring up to end, the peer process is gone, or
// ResponseTimeout passed. It looks every millisecond.
func (l *link) waitUnread(end uint64) {
	if h := testHookUnread.Load(); h != nil {
		(*h)(l)
	}
	deadline := time.Now().Add(l.t.p.cfg.ResponseTimeout)
	for {
		l.mu.Lock()
		h, err := l.tx.Consumed()
		l.mu.Unlock()
		if err != nil || h >= end || time.Now().After(deadline) || l.pid == nil || l.pid.Exited() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// releaseSys closes the peer's process handle and the port reservation.
func (l *link) releaseSys() { l.conn.release() }
