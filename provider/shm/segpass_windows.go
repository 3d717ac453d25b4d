package shm

import (
	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/winipc"
)

// takeSegment maps a section the peer named for an AllocateMemory segment,
// after checking that it holds the announced size (mapping it fails
// otherwise). It closes hs. A section the peer freed before this side
// could take it arrives without its handle (readMessage): the connection
// goes on without that mapping.
func (l *link) takeSegment(msg []byte, hs []osHandle) bool {
	defer closeAll(hs)
	if len(msg) != 13 || len(hs) != 1 {
		return false
	}
	id, size := getU32(msg[1:]), getU64(msg[5:])
	if id == 0 || size == 0 || size > uint64(Info.MaxRegistrationSize) {
		return false
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if _, dup := l.peerSegs[id]; dup || len(l.peerSegs) >= maxPeerSegments {
		return false
	}
	h := hs[0]
	hs[0] = 0 // MapSection owns it
	sec, err := winipc.MapSection(h, int(size))
	if err != nil {
		return false
	}
	sec.CloseHandle() // the view stays
	if l.peerSegs == nil {
		l.peerSegs = make(map[uint32][]byte)
	}
	l.peerSegs[id] = sec.Bytes()
	return true
}

// unmapPeerSegments releases the peer's segments (cleanup).
func (l *link) unmapPeerSegments() {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	for id, m := range l.peerSegs {
		windows.UnmapViewOfFile(uintptr(addrOf(m)))
		delete(l.peerSegs, id)
	}
}

// pullSegments reports false: the pipe has one reader, the watcher, which
// maps the segments the peer names; until it has, copies into them take
// ReadProcessMemory / WriteProcessMemory or the ring.
func (l *link) pullSegments() bool { return false }
