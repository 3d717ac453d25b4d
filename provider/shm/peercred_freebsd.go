package shm

import "golang.org/x/sys/unix"

// peerCred returns the user id of the process at the other end of the
// Unix socket fd (LOCAL_PEERCRED's struct xucred), and 0 for its process
// id: x/sys does not expose xucred's cr_pid, which only the rendezvous
// teardown would use (waitUnread), and no Send goes by rendezvous here.
func peerCred(fd int) (uid int, pid int, ok bool) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, 0, false
	}
	return int(cred.Uid), 0, true
}
