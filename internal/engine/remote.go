package engine

import (
	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// Remote access (nd.RemoteAccessAdapter): a Window bound to no endpoint.
// AccessFault lets every endpoint of the adapter through it; the links
// that publish windows to their peer (WindowTable) learn of it when it
// opens, when they attach while it is open, and when it closes.
// Adapter.publishMu orders those publications: a link never learns of an
// access after it learned that the access closed.

var _ nd.RemoteAccessAdapter = (*Adapter)(nil)

// remoteAccess is an open nd.RemoteAccess.
type remoteAccess struct {
	w    *Window
	desc nd.MWDescriptor
}

// AllowRemoteAccess implements nd.RemoteAccessAdapter.
func (a *Adapter) AllowRemoteAccess(mr nd.MemoryRegion, buf []byte, rights nd.Flags) (nd.RemoteAccess, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	r, _ := mr.(*Region)
	switch {
	case r == nil || r.a != a || !r.registered.Load():
		return nil, ndrules.Arg("AllowRemoteAccess", "mr", nd.ErrInvalidParameter1, "not a live registration of this adapter")
	case !inside(r.buf, buf):
		return nil, ndrules.Arg("AllowRemoteAccess", "buf", nd.ErrInvalidParameter2, "not inside mr")
	case rights&(nd.FlagAllowRead|nd.FlagAllowWrite) == 0:
		return nil, ndrules.Arg("AllowRemoteAccess", "rights", nd.ErrInvalidParameter3, "neither FlagAllowRead nor FlagAllowWrite")
	}
	rights &= nd.FlagAllowRead | nd.FlagAllowWrite
	a.publishMu.Lock()
	defer a.publishMu.Unlock()
	w := &Window{a: a}
	a.windowMu.Lock()
	if a.closed.Load() {
		a.windowMu.Unlock()
		return nil, nd.ErrDeviceRemoved
	}
	desc := a.bindLocked(w, r, buf, rights, nil)
	a.windowMu.Unlock()
	for _, t := range a.windowTables() {
		t.WindowBound(desc.Token, desc.Base, buf, rights)
	}
	return &remoteAccess{w: w, desc: desc}, nil
}

// inside reports whether sub is a non-empty part of buf.
func inside(buf, sub []byte) bool {
	_, ok := within(buf, sub)
	return ok && sub != nil
}

// Descriptor implements nd.RemoteAccess.
func (ra *remoteAccess) Descriptor() nd.MWDescriptor { return ra.desc }

// Close implements nd.RemoteAccess.
func (ra *remoteAccess) Close() error {
	a := ra.w.a
	a.publishMu.Lock()
	defer a.publishMu.Unlock()
	a.windowMu.Lock()
	open := ra.w.bound
	if open {
		a.unbindLocked(ra.w)
	}
	ra.w.closed = true
	a.windowMu.Unlock()
	if open {
		for _, t := range a.windowTables() {
			t.WindowUnbound(ra.desc.Token)
		}
	}
	return nil
}

// windowTables returns the links of the adapter's endpoints that publish
// windows to their peer. publishMu held.
func (a *Adapter) windowTables() []WindowTable {
	a.mu.Lock()
	cs := make([]*Connector, 0, len(a.connectors))
	for c := range a.connectors {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	var ts []WindowTable
	for _, c := range cs {
		c.mu.Lock()
		ep := c.ep
		c.mu.Unlock()
		if ep == nil {
			continue
		}
		ep.mu.Lock()
		t, ok := ep.link.(WindowTable)
		ep.mu.Unlock()
		if ok {
			ts = append(ts, t)
		}
	}
	return ts
}

// publishRemoteAccess tells a newly attached link that publishes windows
// of the remote accesses open now. publishMu held.
func (a *Adapter) publishRemoteAccess(t WindowTable) {
	type open struct {
		token  uint32
		base   uint64
		buf    []byte
		rights nd.Flags
	}
	var opens []open
	a.windowMu.RLock()
	for token, w := range a.windows {
		if w.ep == nil {
			opens = append(opens, open{token, w.base, w.buf, w.rights})
		}
	}
	a.windowMu.RUnlock()
	for _, o := range opens {
		t.WindowBound(o.token, o.base, o.buf, o.rights)
	}
}

// closeRemoteAccess revokes every open remote access as the adapter
// closes (its connections are gone).
func (a *Adapter) closeRemoteAccess() {
	a.publishMu.Lock()
	defer a.publishMu.Unlock()
	a.windowMu.Lock()
	for _, w := range a.windows {
		if w.ep == nil {
			a.unbindLocked(w)
			w.closed = true
		}
	}
	a.windowMu.Unlock()
}
