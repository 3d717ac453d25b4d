package shm

// peerExited reports whether the peer process is gone (or was never known).
func (l *link) peerExited() bool { return l.pid == nil || l.pid.Exited() }

// releaseSys closes the peer's process handle and the port reservation.
func (l *link) releaseSys() { l.conn.release() }
