//go:build linux && !shmportable

package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The buffer lists of the one-sided copies are the kernel's: process_vm_readv
// and process_vm_writev take them as they are.
type (
	iovec       = unix.Iovec
	remoteIovec = unix.RemoteIovec
)

// localIov describes b for the kernel: the iovec points at a slice this
// process owns for the duration of the call it is given to (see addr.go).
//
// localIov describes b for process_vm_*.
func localIov(b []byte) unix.Iovec {
	v := unix.Iovec{Base: unsafe.SliceData(b)}
	v.SetLen(len(b))
	return v
}
