package shm

import (
	"errors"
	"sync"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/winipc"
)

// On Windows the one-sided copies are ReadProcessMemory and
// WriteProcessMemory on the peer's process handle (winipc.Process), opened
// with PROCESS_VM_READ, VM_WRITE and VM_OPERATION when Windows grants them;
// a connection uses them only after its probe read the peer's probe bytes
// through that handle. Each call copies one contiguous range on each side,
// so a buffer list is copied piece by piece.

// remoteIovec is a range of the peer's memory (the fields are Linux's).
type remoteIovec struct {
	Base uintptr
	Len  int
}

// iovec is the local side's scratch entry, which the Windows copies do
// not need.
type iovec struct{}

var errCopy = errors.New("shm: the peer's buffers do not match the length copied")

// probePeer reads 16 bytes at addr in the peer process and compares them to
// want.
func probePeer(p peerProc, addr uint64, want []byte) error {
	if p == nil || len(want) != 16 {
		return errors.New("no peer process")
	}
	return p.Probe(addr, want)
}

// The one-sided copy as OneSidedMode names it.
const (
	copyCall = "ReadProcessMemory"
	copyMode = "ReadProcessMemory"
)

var (
	selfOnce sync.Once
	selfErr  error
)

// selfProbe checks once whether this process may read process memory
// through a process handle at all.
func selfProbe() error {
	selfOnce.Do(func() {
		p, err := winipc.OpenProcess(windows.GetCurrentProcessId())
		if err != nil {
			selfErr = err
			return
		}
		defer p.Close()
		selfErr = p.Probe(probeAddr(), probe[:])
	})
	return selfErr
}

// pvmCopy moves one payload between local (this process's registered
// memory) and the peer's buffers remote: write true stores local into the
// peer, false loads the peer's bytes into local. It returns an error
// unless every byte moved.
func pvmCopy(p peerProc, local []byte, remote []remoteIovec, write bool, _ *[1]iovec) error {
	for _, r := range remote {
		if len(local) == 0 {
			break
		}
		n := min(r.Len, len(local))
		if err := copyPeer(p, uint64(r.Base), local[:n], write); err != nil {
			return err
		}
		local = local[n:]
	}
	if len(local) != 0 {
		return errCopy
	}
	return nil
}

// copyPeer copies b to (write) or from the peer's memory at addr.
func copyPeer(p peerProc, addr uint64, b []byte, write bool) error {
	if write {
		return p.Write(addr, b)
	}
	return p.Read(addr, b)
}

// pvmPull reads n bytes of the peer's buffers remote (whose lengths add up
// to n) into the local buffers sgl from byte off on, front to back. Only
// bytes off to off+n of sgl are written; sgl must hold them.
func pvmPull(p peerProc, sgl []nd.SGE, off, n int, remote []remoteIovec, liov *[maxIovs]iovec) error {
	return pvmSGL(p, sgl, off, n, remote, liov, false)
}

// pvmSGL is pvmPull, or with write true its converse: bytes off to off+n of
// sgl are written into the peer's buffers remote.
func pvmSGL(p peerProc, sgl []nd.SGE, off, n int, remote []remoteIovec, _ *[maxIovs]iovec, write bool) error {
	ri, rdone := 0, 0 // the remote entry, and its bytes already copied
	for i := 0; i < len(sgl) && n > 0; i++ {
		b := sgl[i].Buffer
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b, off = b[off:], 0
		if len(b) > n {
			b = b[:n]
		}
		n -= len(b)
		for len(b) > 0 {
			for ri < len(remote) && rdone == remote[ri].Len {
				ri, rdone = ri+1, 0
			}
			if ri == len(remote) {
				return errCopy
			}
			k := min(len(b), remote[ri].Len-rdone)
			if err := copyPeer(p, uint64(remote[ri].Base)+uint64(rdone), b[:k], write); err != nil {
				return err
			}
			b, rdone = b[k:], rdone+k
		}
	}
	if n != 0 {
		return errCopy
	}
	return nil
}
