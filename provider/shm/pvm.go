package shm

import (
	"crypto/rand"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The probe: each side names a 16-byte buffer of random bytes in its
// handshake message; the peer reads it with process_vm_readv and reports
// whether it got the same bytes. Only then does the prober copy one-sided
// payloads against that peer's memory, in that direction.
var probe = func() *[16]byte {
	b := new([16]byte)
	rand.Read(b[:])
	return b
}()

// probeAddr returns the address of this process's probe buffer.
func probeAddr() uint64 { return addrOf(probe[:]) }

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
		// Skip what moved in the remote list.
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
	}
	return nil
}
