//go:build verbs && linux

package verbs

import (
	"os"
	"syscall"
)

// The asynchronous events of a device context (ibv_get_async_event) are
// read by one goroutine per context, started with the first shared receive
// queue on it and kept for the life of the process (contexts are
// rdma_cm's, shared by every adapter of the device). It waits for the
// descriptor in the Go poller and hands IBV_EVENT_SRQ_LIMIT_REACHED to the
// queue that srq_context names; other events are acknowledged and dropped
// (the queue pairs report their errors through their completions).

// watchAsync starts the event goroutine of ctx once.
func (p *Provider) watchAsync(ctx cContext) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.async[ctx] {
		return nil
	}
	fd, err := asyncFD(ctx)
	if err != nil {
		return err
	}
	dfd, err := syscall.Dup(fd)
	if err != nil {
		return err
	}
	syscall.CloseOnExec(dfd)
	f := os.NewFile(uintptr(dfd), "ibv_async_fd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	p.async[ctx] = true
	go p.asyncLoop(ctx, rc)
	return nil
}

func (p *Provider) asyncLoop(ctx cContext, rc syscall.RawConn) {
	for {
		var typ int
		var h uintptr
		var got bool
		var evErr error
		err := rc.Read(func(uintptr) bool {
			typ, h, got, evErr = getAsyncEvent(ctx)
			return got || evErr != nil
		})
		if err != nil || evErr != nil {
			return
		}
		if typ != evSRQLimit || h == 0 {
			continue
		}
		p.mu.Lock()
		s := p.srqs[h]
		p.mu.Unlock()
		if s != nil {
			s.onLimit()
		}
	}
}

// registerSRQ gives s the handle its events carry.
func (p *Provider) registerSRQ(s *srq) uintptr {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextSRQ++
	p.srqs[p.nextSRQ] = s
	return p.nextSRQ
}

func (p *Provider) unregisterSRQ(h uintptr) {
	p.mu.Lock()
	delete(p.srqs, h)
	p.mu.Unlock()
}
