//go:build shmportable

package shm

import "golang.org/x/sys/unix"

// peerCred returns the user id and process id of the process at the other
// end of the Unix socket fd (SO_PEERCRED): the portable Unix transport
// built on Linux to be tested (build tag shmportable).
func peerCred(fd int) (uid int, pid int, ok bool) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, 0, false
	}
	return int(cred.Uid), int(cred.Pid), true
}
