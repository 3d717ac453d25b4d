//go:build linux || darwin || freebsd

package shm

import (
	"github.com/godirect/nd"
	"golang.org/x/sys/unix"
)

// takeSegment maps a segment the peer passed, after checking that it is a
// file of exactly the announced size that it cannot shrink where the
// system can seal (fixedSizeFile). It closes fds.
func (l *link) takeSegment(msg []byte, fds []osHandle) bool {
	defer closeAll(fds)
	if len(msg) != 13 || len(fds) != 1 {
		return false
	}
	id, size := getU32(msg[1:]), getU64(msg[5:])
	if id == 0 || size == 0 || size > uint64(Info.MaxRegistrationSize) {
		return false
	}
	if !fixedSizeFile(fds[0], size) {
		return false
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if _, dup := l.peerSegs[id]; dup || len(l.peerSegs) >= maxPeerSegments {
		return false
	}
	mem, err := unix.Mmap(fds[0], 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err == unix.ENOMEM {
		return true // out of memory or mappings: copies go by process_vm (Linux) or the ring instead
	}
	if err != nil {
		return false
	}
	if l.peerSegs == nil {
		l.peerSegs = make(map[uint32][]byte)
	}
	l.peerSegs[id] = mem
	return true
}

// closeShared closes the duplicate of an AllocateMemory segment's descriptor
// that allocationOf returned, once it is passed to the peer.
func closeShared(fd osHandle) { unix.Close(fd) }

// unmapPeerSegments releases the peer's segments (cleanup).
func (l *link) unmapPeerSegments() {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	for id, m := range l.peerSegs {
		unix.Munmap(m)
		delete(l.peerSegs, id)
	}
}

// pullSegments maps the segments whose messages wait on the socket, without
// blocking, and reports whether it took any. A side calls it when the peer
// names a segment it has not mapped (in its window table, or in a Send by
// rendezvous): the peer passes a segment before it names it, so the
// message is waiting (or the watcher has just taken it). The watcher alone
// would leave such a copy to process_vm (Linux) or the ring for as long as
// the Go scheduler does not run it, which is up to a scheduler tick (about
// 10 ms) when the application polls on the same processor. A message of
// another kind, or one not all there yet, stays for the watcher.
func (l *link) pullSegments() bool {
	rc, err := l.conn.SyscallConn()
	if err != nil {
		return false
	}
	took, bad := false, false
	rc.Control(func(fd uintptr) {
		l.sockRx.Lock()
		defer l.sockRx.Unlock()
		var buf [16]byte
		for {
			if t, ok := peekMessageType(int(fd)); !ok || t != msgSegment {
				return
			}
			msg, fds, err := recvMessage(int(fd), buf[:])
			if err == errNoDescriptors {
				continue // out of descriptors: that segment stays unmapped
			}
			if err != nil || !l.takeSegment(msg, fds) {
				bad = true
				return
			}
			took = true
		}
	})
	if bad {
		l.shutdown(nd.ErrConnectionAborted, true)
	}
	return took
}
