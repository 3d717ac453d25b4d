package tcp_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/tcp"
)

// disconnectLimits are the accepting endpoint's limits in these tests.
var disconnectLimits = nd.EndpointLimits{
	InboundEntries: 2, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: hpServerIRD, OutboundReadLimit: 0,
}

// holdPassiveClosing holds the passive link's writer before it sends the
// end of the stream: held gets a token when the writer waits, and let lets
// it (and every later one) go on; the test's cleanup lets it too, before
// the adapter's cleanup, which runs first.
func holdPassiveClosing(t *testing.T) (held chan struct{}, let func()) {
	held = make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	let = func() { once.Do(func() { close(release) }) }
	tcp.HoldClosing(t, func(active bool) {
		if active {
			return
		}
		held <- struct{}{}
		<-release
	})
	t.Cleanup(let)
	return held, let
}

// Disconnect returns only once the end of the stream is handed to the
// kernel, so that a process that exits right after it still tells its
// peer: while the link's writer is held before it closes the stream,
// Disconnect waits until its context ends and says ErrCanceled; the
// connection still ends when the writer goes on, and the raw peer reads
// the end of the stream.
func TestDisconnectWaitsForTheEndOfTheStream(t *testing.T) {
	held, let := holdPassiveClosing(t)
	_, raw, a := acceptRaw(t, disconnectLimits, 4, func(*hpMPAOpts) {})
	defer a.c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := a.c.Disconnect(ctx)
	cancel()
	var oe *nd.OpError
	if !errors.Is(err, nd.ErrCanceled) || !errors.As(err, &oe) || oe.Op != "Disconnect" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Disconnect with the stream's end held back = %v, want Disconnect's ErrCanceled for the context's deadline", err)
	}
	<-held // the writer waits before the end of the stream
	let()
	if data, closed, err := raw.readToEOF(5 * time.Second); !closed || err != nil || len(data) != 0 {
		t.Fatalf("the peer read %d bytes, end of stream %v (%v); want none and the end", len(data), closed, err)
	}
	if err := a.c.Disconnect(context.Background()); !errors.Is(err, nd.ErrConnectionInvalid) {
		t.Errorf("a second Disconnect = %v, want ErrConnectionInvalid", err)
	}
	if err := a.c.NotifyDisconnect(context.Background()); err != nil {
		t.Errorf("NotifyDisconnect after Disconnect = %v, want nil", err)
	}
}

// Disconnect returns nil after the writer closed the stream, and by then
// the end is in the kernel: the raw peer reads it.
func TestDisconnectReturnsAfterTheEndOfTheStream(t *testing.T) {
	var returned atomic.Bool
	early := make(chan bool, 1)
	tcp.HoldClosing(t, func(active bool) {
		if !active {
			early <- returned.Load()
		}
	})
	_, raw, a := acceptRaw(t, disconnectLimits, 4, func(*hpMPAOpts) {})
	defer a.c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.c.Disconnect(ctx)
	returned.Store(true)
	if err != nil {
		t.Fatalf("Disconnect = %v, want nil", err)
	}
	select {
	case wasBack := <-early:
		if wasBack {
			t.Errorf("Disconnect returned before the writer closed the stream")
		}
	default:
		t.Errorf("Disconnect returned before the writer reached the end of the stream")
	}
	if data, closed, err := raw.readToEOF(5 * time.Second); !closed || err != nil || len(data) != 0 {
		t.Fatalf("the peer read %d bytes, end of stream %v (%v); want none and the end", len(data), closed, err)
	}
}

// After the peer ended the connection, the one Disconnect that succeeds
// still waits for this side's end of the stream: while the writer is held
// before it, Disconnect waits until its context ends (ErrCanceled); the
// raw peer reads the end once the writer goes on.
func TestDisconnectAfterThePeerEnded(t *testing.T) {
	held, let := holdPassiveClosing(t)
	_, raw, a := acceptRaw(t, disconnectLimits, 4, func(*hpMPAOpts) {})
	defer a.c.Close()

	raw.closeWrite()
	if err := a.c.NotifyDisconnect(t.Context()); err != nil {
		t.Fatalf("NotifyDisconnect after the peer's end of stream = %v, want nil", err)
	}
	<-held // the writer waits before this side's end of the stream
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := a.c.Disconnect(ctx)
	cancel()
	if !errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Disconnect after the peer ended, this side's end held back = %v, want ErrCanceled for the context's deadline", err)
	}
	let()
	if data, closed, err := raw.readToEOF(5 * time.Second); !closed || err != nil || len(data) != 0 {
		t.Fatalf("the peer read %d bytes, end of stream %v (%v); want none and the end", len(data), closed, err)
	}
	if err := a.c.Disconnect(context.Background()); !errors.Is(err, nd.ErrConnectionInvalid) {
		t.Errorf("a second Disconnect = %v, want ErrConnectionInvalid", err)
	}
}
