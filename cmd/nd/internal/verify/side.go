package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// side is one end of one connection: its session, its memory (one
// registration), its requests and their ledger, and the watch for the
// connection's end. One goroutine drives it.
type side struct {
	cfg     *config
	id      int    // the connection's number, from 1
	role    string // "client" or "server"
	a       nd.Adapter
	s       *session.Session
	mem     []byte
	mr      nd.MemoryRegion
	ledger  *ledger
	rp      *reaper
	scratch []byte // for pattern checks

	upAt     time.Time
	stopMW   context.CancelFunc
	ended    chan struct{} // closed once NotifyDisconnect returned (or the watch stopped)
	endedAt  time.Time     // when NotifyDisconnect returned; zero if it did not
	finished bool          // the client's done was answered: the end is the normal one
}

// newSide registers n bytes of memory for a side of connection id.
func newSide(ctx context.Context, cfg *config, id int, role string, a nd.Adapter, n, scratch int) (*side, error) {
	sd := &side{cfg: cfg, id: id, role: role, a: a, ledger: newLedger(), scratch: make([]byte, scratch)}
	sd.mem = make([]byte, n)
	mr, err := a.RegisterMemory(ctx, sd.mem)
	if err != nil {
		return nil, fmt.Errorf("RegisterMemory(%d bytes): %w", n, err)
	}
	sd.mr = mr
	return sd, nil
}

// attach takes the side's session (endpoint and queue).
func (sd *side) attach(s *session.Session) {
	sd.s = s
	sd.rp = &reaper{cq: s.CQ, ledger: sd.ledger, results: make([]*nd.Result, 64)}
}

// watch starts waiting for the connection's end, once it is up.
func (sd *side) watch(ctx context.Context) {
	sd.upAt = time.Now()
	sd.ended = make(chan struct{})
	ctx, sd.stopMW = context.WithCancel(ctx)
	wake, woken := context.WithCancel(ctx)
	sd.rp.wake = wake
	go func() {
		if sd.s.Conn.NotifyDisconnect(ctx) == nil {
			sd.endedAt = time.Now()
		}
		close(sd.ended)
		woken()
	}()
}

// disconnected reports whether NotifyDisconnect returned.
func (sd *side) disconnected() bool {
	select {
	case <-sd.ended:
		return !sd.endedAt.IsZero()
	default:
		return false
	}
}

// failed reports whether the connection ended other than by the normal
// end: a request failed, or the connection ended before the client's done
// was answered.
func (sd *side) failed() bool {
	return !sd.ledger.failedAt.IsZero() && !sd.finished || sd.disconnected() && !sd.finished
}

// post records a request the provider accepted.
func (sd *side) post(r *request, err error) error {
	if err != nil {
		return fmt.Errorf("posting a %s: %w", r.op, err)
	}
	sd.ledger.post(r)
	return nil
}

// sge is one scatter/gather entry over the side's memory.
func (sd *side) sge(b []byte) []nd.SGE { return []nd.SGE{{Buffer: b, Region: sd.mr}} }

// bind binds a window over b for the peer's Reads and Writes, and waits
// for the Bind.
func (sd *side) bind(ctx context.Context, b []byte) (nd.MWDescriptor, error) {
	mw, err := sd.a.CreateMemoryWindow(nil)
	if err != nil {
		return nd.MWDescriptor{}, fmt.Errorf("CreateMemoryWindow: %w", err)
	}
	r := &request{op: opBind}
	sd.ledger.add(r)
	d, err := sd.s.EP.Bind(&r.res, sd.mr, mw, b, nd.FlagAllowRead|nd.FlagAllowWrite)
	if err := sd.post(r, err); err != nil {
		return nd.MWDescriptor{}, err
	}
	if err := sd.rp.reapUntil(ctx, func() bool { return !r.posted || sd.failed() }); err != nil {
		return nd.MWDescriptor{}, err
	}
	if r.res.Status != nd.Success {
		return nd.MWDescriptor{}, fmt.Errorf("the Bind completed with %w", r.res.Status)
	}
	return d, nil
}

// end reports a connection whose run ended with runErr (nil: the run
// completed or the connection failed): it ends a connection still up,
// waits for every request to complete exactly once, closes the session
// and the registration, and checks that the provider is back to base. A
// connection that failed gives errFailed (which -fail-ok accepts) or an
// error naming the failure.
func (sd *side) end(ctx context.Context, base usage, runErr error) error {
	failed := sd.failed()
	if sd.s != nil && !sd.disconnected() {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sd.s.Conn.Disconnect(dctx)
		cancel()
	}
	var drainErr error
	if sd.rp != nil {
		drainErr = sd.rp.drain(ctx, 30*time.Second, 100*time.Millisecond)
	}
	sd.close()
	posted, completed := sd.ledger.totals()
	accounts := fmt.Sprintf("posted %d, completed %d: %s", posted, completed, sd.ledger.summary())
	result := runErr
	if runErr != nil {
		sd.cfg.report("%s: connection %d ERROR after %.3f s: %v; %s", sd.role, sd.id, time.Since(sd.upAt).Seconds(), runErr, accounts)
	} else if failed {
		at, how := sd.endedAt, "NotifyDisconnect returned"
		if !sd.ledger.failedAt.IsZero() && (at.IsZero() || sd.ledger.failedAt.Before(at)) {
			at, how = sd.ledger.failedAt, "a "+sd.ledger.failedOp.String()+" completed "+sd.ledger.failure.Name()
		}
		status := "none"
		if sd.ledger.telling != nd.Success {
			status = sd.ledger.telling.Name()
		}
		sd.cfg.report("%s: connection %d FAILED at=%s (%.3f s after it was up): learned as %s; status=%s; NotifyDisconnect %s; %s",
			sd.role, sd.id, unixTime(at), at.Sub(sd.upAt).Seconds(), how, status, returned(sd.endedAt), accounts)
		result = fmt.Errorf("connection %d: %w: status %s", sd.id, errFailed, status)
		if sd.ledger.telling != nd.Success && !networkStatus(sd.ledger.telling) {
			result = fmt.Errorf("connection %d failed with %w, which no network failure gives", sd.id, sd.ledger.telling)
		}
	} else {
		sd.cfg.report("%s: connection %d ended normally after %.3f s: %s", sd.role, sd.id, time.Since(sd.upAt).Seconds(), accounts)
	}
	if drainErr != nil {
		return fmt.Errorf("connection %d: not every request completed exactly once: %w", sd.id, drainErr)
	}
	if posted != completed {
		return fmt.Errorf("connection %d: %d requests posted, %d completed", sd.id, posted, completed)
	}
	if !sd.cfg.server && !sd.cfg.client {
		// Both sides in this process: one's usage includes the other's.
		return result
	}
	u, ok := settle(base, 10*time.Second)
	sd.cfg.report("%s: after connection %d: %v (before it: %v): %s", sd.role, sd.id, u, base, map[bool]string{true: "nothing left", false: "LEAK"}[ok])
	if !ok {
		return errors.Join(result, fmt.Errorf("connection %d left %v behind, before it %v", sd.id, u, base))
	}
	return result
}

// returned describes when NotifyDisconnect returned.
func returned(t time.Time) string {
	if t.IsZero() {
		return "did not return"
	}
	return "returned at=" + unixTime(t)
}

// close releases the session, the watch and the registration.
func (sd *side) close() {
	if sd.s != nil {
		sd.s.Close()
	}
	if sd.stopMW != nil {
		sd.stopMW()
		<-sd.ended
	}
	if sd.mr != nil {
		sd.a.DeregisterMemory(context.Background(), sd.mr)
		sd.mr = nil
	}
}
