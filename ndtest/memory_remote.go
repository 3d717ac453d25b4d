package ndtest

import (
	"errors"
	"testing"

	"github.com/godirect/nd"
)

// remoteAccessCases check remote access to registered memory from every
// connection of an adapter (nd.RemoteAccessAdapter, ND v2's memory regions
// registered with ND_MR_FLAG_ALLOW_REMOTE_READ/_WRITE). A provider
// without it must say ND_NOT_SUPPORTED; the cases are then skipped.
var remoteAccessCases = []testCase{
	{"RemoteAccess/EveryConnection", `docs/semantics.md "every connection": one descriptor serves Reads and Writes from every connection of the adapter, present and later`, remoteAccessEveryConnection},
	{"RemoteAccess/Rights", `docs/semantics.md "remote access rights": a Write through a read-only access fails ND_ACCESS_VIOLATION and ends that connection only; the bytes are untouched`, remoteAccessRights},
	{"RemoteAccess/Close", `docs/semantics.md "RemoteAccess.Close": after Close a Read through the descriptor fails ND_ACCESS_VIOLATION, and the region can be deregistered`, remoteAccessClose},
	{"RemoteAccess/Parameters", `docs/semantics.md "AllowRemoteAccess parameters": a bad region ND_INVALID_PARAMETER_1, a buffer outside it _2, no rights _3; the open access keeps its region busy and cannot be invalidated by the peer`, remoteAccessParameters},
}

// allowRemote opens buf inside mr on s's adapter, or skips t when the
// provider has no remote access.
func allowRemote(t *testing.T, s *Side, mr nd.MemoryRegion, buf []byte, rights nd.Flags) nd.RemoteAccess {
	t.Helper()
	ra, err := nd.AllowRemoteAccess(s.Adapter, mr, buf, rights)
	if errors.Is(err, nd.ErrNotSupported) {
		t.Skip("the provider has no remote access to registered memory (ND_NOT_SUPPORTED)")
	}
	if err != nil {
		t.Fatalf("AllowRemoteAccess: %v", err)
	}
	t.Cleanup(func() { ra.Close() })
	return ra
}

func remoteAccessEveryConnection(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	pr1 := NewPairOn(t, a, b, PairConfig{})
	buf := pattern(512, 41)
	mr := pr1.Passive.Register(t, buf)
	desc := allowRemote(t, pr1.Passive, mr, buf[128:384], allowRW).Descriptor()
	if desc.Length != 256 || desc.Token == 0 {
		t.Fatalf("descriptor %+v: want length 256 and a token", desc)
	}
	// A connection made after the access opened reaches it too.
	pr2 := NewPairOn(t, a, b, PairConfig{})
	want := append([]byte(nil), buf...)
	for i, pr := range []*Pair{pr1, pr2} {
		data := pattern(64, byte(50+i))
		r := rdmaWrite(t, pr.Active, desc, uint64(64*i), data, 0)
		Expect(t, pr.Active.OutCQ, r, nd.Success, 64)
		copy(want[128+64*i:], data)
	}
	for _, pr := range []*Pair{pr2, pr1} {
		r, got := rdmaRead(t, pr.Active, desc, 0, 256, 0)
		Expect(t, pr.Active.OutCQ, r, nd.Success, 256)
		checkBytes(t, "Read through the remote access", got, want[128:384])
	}
	checkBytes(t, "registered buffer after the Writes", buf, want)
}

func remoteAccessRights(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	pr1 := NewPairOn(t, a, b, PairConfig{})
	pr2 := NewPairOn(t, a, b, PairConfig{})
	buf := pattern(256, 42)
	want := append([]byte(nil), buf...)
	mr := pr1.Passive.Register(t, buf)
	desc := allowRemote(t, pr1.Passive, mr, buf, nd.FlagAllowRead).Descriptor()
	ar, _ := postRecv(t, pr2.Active, 8)
	pRecv, _ := postRecv(t, pr2.Passive, 8)
	r := rdmaWrite(t, pr2.Active, desc, 0, pattern(32, 43), 0)
	expectAccessViolation(t, pr2.Active.OutCQ, r, nd.CauseRemoteAccess)
	expectTerminated(t, pr2, []*nd.Result{ar}, []*nd.Result{pRecv})
	checkBytes(t, "read-only buffer after a refused Write", buf, want)
	r, got := rdmaRead(t, pr1.Active, desc, 0, 256, 0)
	Expect(t, pr1.Active.OutCQ, r, nd.Success, 256)
	checkBytes(t, "Read from the other connection", got, want)
}

func remoteAccessClose(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	buf := pattern(128, 44)
	mr := pr.Passive.Register(t, buf)
	ra := allowRemote(t, pr.Passive, mr, buf, allowRW)
	desc := ra.Descriptor()
	r, _ := rdmaRead(t, pr.Active, desc, 0, 128, 0)
	Expect(t, pr.Active.OutCQ, r, nd.Success, 128)
	expectStatus(t, "Close", ra.Close(), nd.Success)
	expectStatus(t, "Close again", ra.Close(), nd.Success)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	r, _ = rdmaRead(t, pr.Active, desc, 0, 128, 0)
	expectAccessViolation(t, pr.Active.OutCQ, r, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
	expectStatus(t, "DeregisterMemory after Close", pr.Passive.Adapter.DeregisterMemory(ctx(t), mr), nd.Success)
}

func remoteAccessParameters(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	buf := pattern(128, 45)
	mr := s.Register(t, buf[:64])
	other := pr.Active.Register(t, pattern(64, 46))
	bad := []struct {
		what   string
		mr     nd.MemoryRegion
		buf    []byte
		rights nd.Flags
		want   nd.Status
	}{
		{"a nil region", nil, buf[:64], allowRW, nd.ErrInvalidParameter1},
		{"a region of another adapter", other, other.Bytes(), allowRW, nd.ErrInvalidParameter1},
		{"a buffer outside the region", mr, buf[64:], allowRW, nd.ErrInvalidParameter2},
		{"a buffer straddling the region's end", mr, buf[32:96], allowRW, nd.ErrInvalidParameter2},
		{"an empty buffer", mr, nil, allowRW, nd.ErrInvalidParameter2},
		{"no rights", mr, buf[:64], nd.FlagReadFence, nd.ErrInvalidParameter3},
	}
	for _, c := range bad {
		ra, err := nd.AllowRemoteAccess(s.Adapter, c.mr, c.buf, c.rights)
		if errors.Is(err, nd.ErrNotSupported) {
			t.Skip("the provider has no remote access to registered memory (ND_NOT_SUPPORTED)")
		}
		if ra != nil {
			ra.Close()
		}
		expectStatus(t, "AllowRemoteAccess with "+c.what, err, c.want)
	}
	ra := allowRemote(t, s, mr, buf[:64], nd.FlagAllowWrite)
	expectStatus(t, "DeregisterMemory with the access open", s.Adapter.DeregisterMemory(ctx(t), mr), nd.ErrDeviceBusy)
	// The peer cannot close it: SendAndInvalidate naming its token fails.
	ar, _ := postRecv(t, pr.Active, 8)
	rr, _ := postRecv(t, s, 64)
	sr := new(nd.Result)
	mustPost(t, "SendAndInvalidate(remote access token)", pr.Active.Endpoint.SendAndInvalidate(sr, nil, ra.Descriptor(), 0))
	Expect(t, s.InCQ, rr, nd.ErrInvalidationError, -1)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
	ra.Close()
	expectStatus(t, "DeregisterMemory after Close", s.Adapter.DeregisterMemory(ctx(t), mr), nd.Success)
}
