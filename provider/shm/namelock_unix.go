//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// A name lock is a file of the transport's directory held with flock(2):
// the kernel drops the lock when its holder's process ends, so a name
// outlives no process, whatever files a crash leaves behind. An exclusive
// lock is a name only one holder has (a listener's port, the active side's
// port); shared locks mark a name that some process uses (an address an
// adapter serves).

// nameLock is a held lock: its open file and its path.
type nameLock struct {
	f    *os.File
	path string
}

// errNameTaken: another holder has the lock.
var errNameTaken = errors.New("shm: the name is in use")

// lockExclusive takes the exclusive lock on path without waiting, or
// fails with errNameTaken. The file is made if missing; release removes
// it. Since a releasing holder removes the file before it lets go, a
// lock taken on a file that is no longer the one at path is tried again.
func lockExclusive(path string) (*nameLock, error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errNameTaken
			}
			return nil, os.NewSyscallError("flock", err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return &nameLock{f: f, path: path}, nil
		}
		f.Close() // released and removed meanwhile: take the new one
	}
	return nil, errNameTaken
}

// release removes the lock's file and lets go of the lock.
func (n *nameLock) release() {
	os.Remove(n.path)
	n.f.Close()
}

// lockShared takes a shared lock on path; it waits only while another
// process looks (heldByAny holds the exclusive lock for an instant). The
// file is never removed.
func lockShared(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_SH); err != nil {
		f.Close()
		return nil, os.NewSyscallError("flock", err)
	}
	return f, nil
}

// heldByAny reports whether any process holds a lock on path: an
// exclusive lock on it fails while one does. (A lock of this process on
// another open file of path counts too.)
func heldByAny(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	flock(f, unix.LOCK_UN)
	return false
}

// flock applies how to f's open file, retrying on EINTR.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			if ferr = unix.Flock(int(fd), how); ferr != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return ferr
}
