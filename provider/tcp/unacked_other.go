//go:build !linux && !darwin && !freebsd

package tcp

// sentUnacked: this platform's sockets do not tell what the peer
// acknowledged.
func sentUnacked(uintptr) (int, error) { return 0, errUnackedUnknown }
