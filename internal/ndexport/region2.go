package ndexport

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/ndabi"
)

// Region2 is ND v2's IND2MemoryRegion: at most one registration at a time,
// its local token (a name in the adapter's token table) and, when it was
// registered with remote rights, its remote token (an nd remote access).
type Region2 struct {
	Base
	ad   *Adapter2
	file File

	mu     sync.Mutex
	busy   bool // Register or Deregister is under way
	mr     nd.MemoryRegion
	ra     nd.RemoteAccess
	flags  uint32
	local  atomic.Uint32
	remote atomic.Uint32
}

func (r *Region2) released() {}
func (r *Region2) finalize() {
	r.mu.Lock()
	mr, ra := r.mr, r.ra
	r.mr, r.ra = nil, nil
	r.mu.Unlock()
	if mr != nil {
		r.ad.tokens.remove(r.local.Load())
		if ra != nil {
			ra.Close()
		}
		r.ad.a.DeregisterMemory(context.Background(), mr)
	}
	r.ad.unhold()
}

const mrFlags = ndabi.MRFlagAllowLocalWrite | ndabi.MRFlagAllowRemoteRead | ndabi.MRFlagAllowRemoteWrite |
	ndabi.MRFlagRDMAReadSink | ndabi.MRFlagDoNotSecureVM

// Register is IND2MemoryRegion::Register: the consumer's n bytes at p, with
// flags (ND_MR_FLAG_*; remote read or write opens the buffer to every
// connection of the adapter under GetRemoteToken). The buffer checks are
// those of ND v1's RegisterMemory; unknown flags are ND_INVALID_PARAMETER_3;
// a region already registered is ND_INVALID_DEVICE_STATE.
func (r *Region2) Register(p unsafe.Pointer, n uintptr, flags uint32, ov *ndabi.Overlapped) nd.Status {
	buf, st := registrable(p, n, &r.ad.info, flags&(ndabi.MRFlagAllowLocalWrite|ndabi.MRFlagAllowRemoteWrite) != 0)
	if st != nd.Success {
		return st
	}
	if flags&^mrFlags != 0 {
		return nd.ErrInvalidParameter3
	}
	if ov == nil {
		return nd.ErrInvalidParameter4
	}
	r.mu.Lock()
	if r.busy || r.mr != nil {
		r.mu.Unlock()
		return nd.ErrInvalidDeviceState
	}
	r.busy = true
	r.mu.Unlock()
	st = r.start(r.file, ov, nd.ErrInvalidParameter4, func(ctx context.Context) nd.Status {
		defer func() {
			r.mu.Lock()
			r.busy = false
			r.mu.Unlock()
		}()
		mr, err := r.ad.a.RegisterMemory(ctx, buf)
		if err != nil {
			return status(err)
		}
		var ra nd.RemoteAccess
		if rights := remoteRights(flags); rights != 0 {
			if ra, err = nd.AllowRemoteAccess(r.ad.a, mr, buf, rights); err != nil {
				r.ad.a.DeregisterMemory(context.Background(), mr)
				return status(err)
			}
		}
		token, ok := r.ad.tokens.add(mr)
		if !ok {
			if ra != nil {
				ra.Close()
			}
			r.ad.a.DeregisterMemory(context.Background(), mr)
			return nd.ErrInsufficientResources
		}
		r.mu.Lock()
		r.mr, r.ra, r.flags = mr, ra, flags
		r.local.Store(token)
		if ra != nil {
			r.remote.Store(ra.Descriptor().Token)
		}
		r.mu.Unlock()
		return nd.Success
	})
	if st != nd.Pending {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
	}
	return st
}

// remoteRights are the nd rights of ND v2's memory region flags.
func remoteRights(flags uint32) nd.Flags {
	var rights nd.Flags
	if flags&ndabi.MRFlagAllowRemoteRead == ndabi.MRFlagAllowRemoteRead {
		rights |= nd.FlagAllowRead
	}
	if flags&ndabi.MRFlagAllowRemoteWrite == ndabi.MRFlagAllowRemoteWrite {
		rights |= nd.FlagAllowWrite
	}
	return rights
}

// Deregister is IND2MemoryRegion::Deregister: ND_DEVICE_BUSY while a
// memory window is bound in the region; a region not registered is
// ND_INVALID_DEVICE_STATE.
func (r *Region2) Deregister(ov *ndabi.Overlapped) nd.Status {
	if ov == nil {
		return nd.ErrInvalidParameter1
	}
	r.mu.Lock()
	if r.busy || r.mr == nil {
		r.mu.Unlock()
		return nd.ErrInvalidDeviceState
	}
	r.busy = true
	mr, ra := r.mr, r.ra
	r.mu.Unlock()
	st := r.start(r.file, ov, nd.ErrInvalidParameter1, func(ctx context.Context) nd.Status {
		defer func() {
			r.mu.Lock()
			r.busy = false
			r.mu.Unlock()
		}()
		own := 0
		if ra != nil {
			own = 1
		}
		if er, ok := mr.(*engine.Region); ok && er.Bound() > own {
			return nd.ErrDeviceBusy
		}
		if ra != nil {
			ra.Close()
		}
		if err := r.ad.a.DeregisterMemory(ctx, mr); err != nil {
			return status(err)
		}
		r.ad.tokens.remove(r.local.Load())
		r.mu.Lock()
		r.mr, r.ra = nil, nil
		r.local.Store(0)
		r.remote.Store(0)
		r.mu.Unlock()
		return nd.Success
	})
	if st != nd.Pending {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
	}
	return st
}

// GetLocalToken is IND2MemoryRegion::GetLocalToken (0 while not
// registered).
func (r *Region2) GetLocalToken() uint32 { return r.local.Load() }

// GetRemoteToken is IND2MemoryRegion::GetRemoteToken (0 unless registered
// with remote rights).
func (r *Region2) GetRemoteToken() uint32 { return r.remote.Load() }

// region returns the registration and its flags.
func (r *Region2) region() (nd.MemoryRegion, uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mr, r.flags
}

// Window2 is ND v2's IND2MemoryWindow.
type Window2 struct {
	Base
	ad    *Adapter2
	mw    nd.MemoryWindow
	token atomic.Uint32
}

func (w *Window2) released() {}
func (w *Window2) finalize() {
	w.mw.Close()
	w.ad.unhold()
}

// GetRemoteToken is IND2MemoryWindow::GetRemoteToken: the token of its
// last Bind, valid from the moment Bind returns.
func (w *Window2) GetRemoteToken() uint32 { return w.token.Load() }
