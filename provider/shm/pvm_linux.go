//go:build linux && !shmportable

package shm

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
)

// probePeer reads 16 bytes at addr in process pid and compares them to want.
func probePeer(pid int, addr uint64, want []byte) error {
	if pid <= 0 || len(want) != 16 {
		return errors.New("no peer process")
	}
	var got [16]byte
	local := []unix.Iovec{localIov(got[:])}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 16}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != 16 || string(got[:]) != string(want) {
		return errors.New("probe mismatch")
	}
	return nil
}

// The one-sided copy as OneSidedMode names it.
const (
	copyCall = "process_vm_readv"
	copyMode = "process_vm"
)

var (
	selfOnce sync.Once
	selfErr  error
)

// selfProbe checks once whether process_vm_readv works at all here.
func selfProbe() error {
	selfOnce.Do(func() { selfErr = probePeer(os.Getpid(), probeAddr(), probe[:]) })
	return selfErr
}

// pvmCopy moves one payload between local (this process's registered
// memory) and the peer's buffers remote with one process_vm call: write
// true stores local into the peer (process_vm_writev), false loads the
// peer's bytes into local. It returns an error unless every byte moved.
func pvmCopy(pid int, local []byte, remote []unix.RemoteIovec, write bool, liov *[1]unix.Iovec) error {
	for len(local) > 0 {
		liov[0] = localIov(local)
		var n int
		var err error
		if write {
			n, err = unix.ProcessVMWritev(pid, liov[:], remote, 0)
		} else {
			n, err = unix.ProcessVMReadv(pid, liov[:], remote, 0)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return unix.EFAULT
		}
		local = local[n:]
		remote = skipRemote(remote, n)
	}
	return nil
}

// skipRemote drops the first n bytes of remote (entries and the start of
// the next one), as a process_vm call that moved n bytes leaves it.
func skipRemote(remote []unix.RemoteIovec, n int) []unix.RemoteIovec {
	for n > 0 && len(remote) > 0 {
		if remote[0].Len <= n {
			n -= remote[0].Len
			remote = remote[1:]
		} else {
			remote[0].Base += uintptr(n)
			remote[0].Len -= n
			n = 0
		}
	}
	return remote
}

// pvmPull reads n bytes of the peer's buffers remote (whose lengths add up
// to n) into the local buffers sgl from byte off on, front to back, with
// process_vm_readv of the peer: one call for the whole transfer (at most
// maxIovs entries on either side, far below the kernel's 1024), more only
// if one stops short. Only bytes off to off+n of sgl are written; sgl must
// hold them. liov is the local list's scratch space.
func pvmPull(pid int, sgl []nd.SGE, off, n int, remote []unix.RemoteIovec, liov *[maxIovs]unix.Iovec) error {
	return pvmSGL(pid, sgl, off, n, remote, liov, false)
}

// pvmSGL is pvmPull, or with write true its converse: bytes off to off+n of
// sgl are written into the peer's buffers remote (process_vm_writev).
func pvmSGL(pid int, sgl []nd.SGE, off, n int, remote []unix.RemoteIovec, liov *[maxIovs]unix.Iovec, write bool) error {
	done := 0
	for done < n {
		cnt, skip, left := 0, off+done, n-done
		for i := range sgl {
			if left == 0 {
				break
			}
			b := sgl[i].Buffer
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			b, skip = b[skip:], 0
			if len(b) > left {
				b = b[:left]
			}
			if cnt == len(liov) {
				return unix.EINVAL
			}
			liov[cnt] = localIov(b)
			cnt, left = cnt+1, left-len(b)
		}
		if left != 0 {
			return unix.EINVAL
		}
		var got int
		var err error
		if write {
			got, err = unix.ProcessVMWritev(pid, liov[:cnt], remote, 0)
		} else {
			got, err = unix.ProcessVMReadv(pid, liov[:cnt], remote, 0)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if got <= 0 || got > n-done {
			return unix.EFAULT
		}
		done += got
		remote = skipRemote(remote, got)
	}
	return nil
}
