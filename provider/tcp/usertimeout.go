package tcp

import (
	"net"
	"syscall"
	"time"
)

// setUserTimeout bounds how long raw's socket keeps unacknowledged data
// (Config.UserTimeout); d <= 0 leaves the system's limit. It is a best
// effort: a platform or system that refuses the option keeps its own
// limit, and the connection goes on.
func setUserTimeout(raw syscall.RawConn, d time.Duration) {
	if d <= 0 || !userTimeoutSupported {
		return
	}
	raw.Control(func(fd uintptr) { setUserTimeoutFD(fd, d) })
}

// setConnUserTimeout is setUserTimeout on an accepted connection.
func setConnUserTimeout(c *net.TCPConn, d time.Duration) {
	if raw, err := c.SyscallConn(); err == nil {
		setUserTimeout(raw, d)
	}
}

// connUserTimeout returns c's bound on unacknowledged data (0: the
// system's limit).
func connUserTimeout(c *net.TCPConn) (time.Duration, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var d time.Duration
	var gerr error
	if err := raw.Control(func(fd uintptr) { d, gerr = userTimeoutOf(fd) }); err != nil {
		return 0, err
	}
	return d, gerr
}
