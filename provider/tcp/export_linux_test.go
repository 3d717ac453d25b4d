package tcp

import "golang.org/x/sys/unix"

// DirectQueued returns how many bytes wait unread in the socket of p's one
// link that application polls read directly, or -1 if p has not exactly
// one such link.
func DirectQueued(p *Provider) int {
	d := p.t.progress.links.Direct()
	if len(d) != 1 {
		return -1
	}
	n := -1
	if err := d[0].sock.raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return -1
	}
	return n
}

// Unacknowledged returns how many bytes written on p's one directly read
// link the peer has not acknowledged, or -1 if p has not exactly one such
// link.
func Unacknowledged(p *Provider) int {
	d := p.t.progress.links.Direct()
	if len(d) != 1 {
		return -1
	}
	n := -1
	if err := d[0].sock.raw.Control(func(fd uintptr) { n, _ = sentUnacked(fd) }); err != nil {
		return -1
	}
	return n
}
