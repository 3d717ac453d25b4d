package shm

import "golang.org/x/sys/unix"

// peerCred returns the user id and process id of the process at the other
// end of the Unix socket fd: LOCAL_PEERCRED (struct xucred) and
// LOCAL_PEERPID.
func peerCred(fd int) (uid int, pid int, ok bool) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, 0, false
	}
	pid, err = unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = 0
	}
	return int(cred.Uid), pid, true
}
