//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
)

// TestCancelReturnsOverlapped cancels Notify requests while the provider
// holds them, 200 rounds over each ND version: each returns ErrCanceled
// with the context's error only after its completion came, and its
// OVERLAPPED goes back to the port, so the port ends with every record
// free. A context that ended before the call makes no request at all.
func TestCancelReturnsOverlapped(t *testing.T) {
	dll := os.Getenv("GODIRECT_NDSPI_TEST_DLL")
	if dll == "" {
		t.Skip("GODIRECT_NDSPI_TEST_DLL is not set: it names godirect's ND provider DLL (.ci/wine/run-ndspi sets it)")
	}
	for _, v := range []int{2, 1} {
		p := New(Config{DLL: dll, Class: ndexport.TCPClassID, Version: v})
		addrs, err := p.Addresses()
		if err != nil {
			t.Fatal(err)
		}
		na, err := p.OpenAdapter(addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		a := na.(*adapter)
		nq, err := a.CreateCompletionQueue(4)
		if err != nil {
			t.Fatal(err)
		}
		q := nq.(*cq)
		for i := range 200 {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			issued := make(chan struct{})
			before := q.g.cancelCount()
			rq := q.request()
			go func() {
				done <- rq.do(ctx, func(ov uintptr) nd.Status {
					defer close(issued)
					if v == 1 {
						return q.obj.call(ndabi.INDCompletionQueueNotify, uintptr(nd.NotifyAny), ov)
					}
					return q.obj.call(ndabi.IND2CompletionQueueNotify, uintptr(nd.NotifyAny), ov)
				})
			}()
			<-issued // the provider holds the request
			cancel()
			err := <-done
			var oe *nd.OpError
			if !errors.As(err, &oe) || oe.Status != nd.ErrCanceled || !errors.Is(err, context.Canceled) {
				t.Fatalf("v%d round %d: canceled Notify = %v", v, i, err)
			}
			if q.g.cancelCount() == before {
				t.Fatalf("v%d round %d: no CancelOverlappedRequests was made", v, i)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		before := q.g.cancelCount()
		if err := q.Notify(ctx, nd.NotifyAny); !errors.Is(err, nd.ErrCanceled) || q.g.cancelCount() != before {
			t.Fatalf("v%d: Notify with an ended context = %v (cancels %d -> %d)", v, err, before, q.g.cancelCount())
		}
		prt := a.b.port
		prt.mu.lock()
		free, all := len(prt.free), len(prt.waiters)
		prt.mu.unlock()
		if free != all {
			t.Fatalf("v%d: %d of the port's %d OVERLAPPEDs are free after every request ended", v, free, all)
		}
		q.Close()
		na.Close()
	}
}
