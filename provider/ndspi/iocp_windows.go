//go:build windows && (amd64 || arm64)

package ndspi

import (
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
)

// port is one loaded provider's I/O completion port and the OVERLAPPEDs of
// its requests. The overlapped files of the provider's adapters (ND v1's
// GetFileHandle, ND v2's CreateOverlappedFile) are bound to it; one
// goroutine, for the life of the process (a loaded provider is never
// unloaded), takes its packets and wakes the request each names.
//
// Each OVERLAPPED lives in a record outside the Go heap: the OVERLAPPED,
// then the record's index (which the packet's OVERLAPPED address leads
// back to), then a word that ND v1's GetOverlappedResult writes its byte
// count into. A record is handed out for one request and taken back only
// after the request's completion packet was seen, so the provider never
// writes an OVERLAPPED that another request uses.
type port struct {
	h windows.Handle

	mu      spinLock // a request takes its OVERLAPPED without parking (see guard)
	chunks  []cmem
	waiters []*waiter
	free    []*waiter
}

// waiter is one OVERLAPPED record and the channel its packet wakes.
type waiter struct {
	ov   uintptr       // the OVERLAPPED
	done chan struct{} // one value per packet
}

const (
	ovRecord      = 64  // bytes per record
	ovIndex       = 32  // the record's index, after the OVERLAPPED
	ovBytes       = 40  // ND v1 GetOverlappedResult's byte count
	ovChunk       = 256 // records allocated at once
	ovOverlapSize = 32  // sizeof(OVERLAPPED)
)

// newPort creates a completion port and starts its goroutine.
func newPort() (*port, error) {
	h, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 0)
	if err != nil {
		return nil, &nd.OpError{Op: "CreateIoCompletionPort", Status: nd.ErrInsufficientResources, Err: err}
	}
	p := &port{h: h}
	go p.loop()
	return p, nil
}

// bind associates an overlapped file with the port.
func (p *port) bind(file windows.Handle) error {
	if _, err := windows.CreateIoCompletionPort(file, p.h, 0, 0); err != nil {
		return &nd.OpError{Op: "CreateIoCompletionPort", Status: nd.ErrInsufficientResources, Err: err}
	}
	return nil
}

// get hands out a record with its OVERLAPPED zeroed. It allocates only when
// every record is in use.
func (p *port) get() (*waiter, error) {
	p.mu.lock()
	defer p.mu.unlock()
	if len(p.free) == 0 {
		m, err := allocC(ovRecord * ovChunk)
		if err != nil {
			return nil, err
		}
		p.chunks = append(p.chunks, m)
		for i := range ovChunk {
			w := &waiter{ov: m.ptr(i * ovRecord), done: make(chan struct{}, 1)}
			*(*uint64)(at(w.ov + ovIndex)) = uint64(len(p.waiters))
			p.waiters = append(p.waiters, w)
			p.free = append(p.free, w)
		}
	}
	w := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	clear(unsafe.Slice((*byte)(at(w.ov)), ovOverlapSize))
	return w, nil
}

// put takes a record back once its request completed.
func (p *port) put(w *waiter) {
	p.mu.lock()
	p.free = append(p.free, w)
	p.mu.unlock()
}

// loop takes the port's packets and wakes their requests. A packet whose
// OVERLAPPED is none of the port's is ignored (no one else's requests
// complete through the files bound to it).
func (p *port) loop() {
	for {
		var n uint32
		var key uintptr
		var ov *windows.Overlapped
		err := windows.GetQueuedCompletionStatus(p.h, &n, &key, &ov, windows.INFINITE)
		if ov == nil {
			if err != nil && err != windows.WAIT_TIMEOUT {
				return // the port is gone
			}
			continue
		}
		a := uintptr(unsafe.Pointer(ov))
		p.mu.lock()
		var w *waiter
		for _, c := range p.chunks {
			if a >= c.addr && a < c.addr+uintptr(c.n) {
				if i := *(*uint64)(at(a + ovIndex)); i < uint64(len(p.waiters)) && p.waiters[i].ov == a {
					w = p.waiters[i]
				}
				break
			}
		}
		p.mu.unlock()
		if w != nil {
			select {
			case w.done <- struct{}{}:
			default:
			}
		}
	}
}
