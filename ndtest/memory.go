package ndtest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/godirect/nd"
)

// memoryCases check memory registration and memory windows (ndmemorytest and
// ndmw): registration errors, deregistration with a bound window, Bind and
// Invalidate errors, window reuse, SendAndInvalidate, windows bound to one
// endpoint, a large Read/transform/Write exchange, and the descriptor's wire
// form.
var memoryCases = []testCase{
	{"RegisterNil", `docs/semantics.md "registration": registering no buffer fails ND_INVALID_PARAMETER`, memoryRegisterNil},
	{"RegisterEmpty", `docs/semantics.md "registration": registering an empty buffer fails ND_INVALID_BUFFER_SIZE`, memoryRegisterEmpty},
	{"RegisterTooLarge", `docs/semantics.md "registration": a buffer beyond MaxRegistrationSize fails ND_INVALID_PARAMETER`, memoryRegisterTooLarge},
	{"RegionBytes", `docs/semantics.md "registration": a region covers exactly its buffer's bytes`, memoryRegionBytes},
	{"DeregisterWithWindowBound", `docs/semantics.md "DeregisterMemory with a bound window": a region with a window bound fails ND_DEVICE_BUSY until the window is invalidated`, memoryDeregisterWithWindowBound},
	{"BindOutsideRegion", `docs/semantics.md "Bind parameters": a buffer outside the region fails ND_INVALID_PARAMETER_4`, memoryBindOutsideRegion},
	{"BindWithoutRights", `docs/semantics.md "Bind parameters": flags granting neither read nor write fail ND_INVALID_PARAMETER_6`, memoryBindWithoutRights},
	{"BindBoundWindow", `docs/semantics.md "Bind of a window already bound": binding a window already bound completes ND_INVALID_REQUEST`, memoryBindBoundWindow},
	{"InvalidateUnbound", `docs/semantics.md "Invalidate of a window not bound to this endpoint": invalidating a window that is not bound completes ND_INVALIDATION_ERROR`, memoryInvalidateUnbound},
	{"InvalidateOnOtherEndpoint", `docs/semantics.md "Invalidate of a window not bound to this endpoint": an endpoint other than the one that bound the window completes ND_INVALIDATION_ERROR, and the window stays usable`, memoryInvalidateOnOtherEndpoint},
	{"WindowReuse", `docs/semantics.md "rebinding": an invalidated window can be bound again, with a new token`, memoryWindowReuse},
	{"CloseInvalidatesWindow", `docs/semantics.md "MemoryWindow": closing a bound window invalidates it: its region can be deregistered and its descriptor fails`, memoryCloseInvalidatesWindow},
	{"SendAndInvalidate/ThenRead", `docs/semantics.md "SendAndInvalidate": the receiver's window is invalidated as the Receive completes, its invalidate Result reports ND_SUCCESS, and a Read through the old descriptor fails`, memorySendAndInvalidateThen("Read")},
	{"SendAndInvalidate/ThenWrite", `docs/semantics.md "SendAndInvalidate": the receiver's window is invalidated as the Receive completes, its invalidate Result reports ND_SUCCESS, and a Write through the old descriptor fails`, memorySendAndInvalidateThen("Write")},
	{"SendAndInvalidate/UnknownToken", `docs/semantics.md "SendAndInvalidate naming a window the receiver cannot invalidate": an unknown token completes the Receive with ND_INVALIDATION_ERROR and ends the connection`, memorySendAndInvalidateUnknownToken},
	{"SendAndInvalidate/AlreadyInvalidated", `docs/semantics.md "SendAndInvalidate naming a window the receiver cannot invalidate": a window already invalidated completes the Receive with ND_INVALIDATION_ERROR`, memorySendAndInvalidateAlreadyInvalidated},
	// A window is usable only by its endpoint's peer: the same descriptor
	// from another connection between the same adapters is refused.
	{"WindowBoundToEndpoint/Read", `docs/semantics.md "windows and the connection": a window serves only its endpoint's peer`, memoryWindowBoundToEndpoint("Read")},
	{"WindowBoundToEndpoint/Write", `docs/semantics.md "windows and the connection": a window serves only its endpoint's peer`, memoryWindowBoundToEndpoint("Write")},
	{"Transform", `docs/semantics.md "window offsets": a large window is read, transformed and written back intact`, testTransform},
	{"DescriptorWireForm", `docs/semantics.md "descriptor": the descriptor's 20-byte wire form (big-endian base, length, token) names the window`, memoryDescriptorWireForm},
}

// ndmemorytest NdMRInvalidBuffer
func memoryRegisterNil(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	mr, err := a.RegisterMemory(ctx(t), nil)
	if err == nil {
		a.DeregisterMemory(ctx(t), mr)
	}
	expectStatus(t, "RegisterMemory(nil)", err, nd.ErrInvalidParameter)
}

func memoryRegisterEmpty(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	mr, err := a.RegisterMemory(ctx(t), []byte{})
	if err == nil {
		a.DeregisterMemory(ctx(t), mr)
	}
	expectStatus(t, "RegisterMemory(empty)", err, nd.ErrInvalidBufferSize)
}

func memoryRegisterTooLarge(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	n := query(t, a).MaxRegistrationSize + 1
	skipIfTooBig(t, int64(n), "a registration beyond MaxRegistrationSize")
	mr, err := a.RegisterMemory(ctx(t), make([]byte, n))
	if err == nil {
		a.DeregisterMemory(ctx(t), mr)
	}
	expectStatus(t, "RegisterMemory(MaxRegistrationSize+1 bytes)", err, nd.ErrInvalidParameter)
}

func memoryRegionBytes(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	buf := pattern(100, 1)
	mr, err := a.RegisterMemory(ctx(t), buf)
	if err != nil {
		t.Fatalf("RegisterMemory: %v", err)
	}
	defer a.DeregisterMemory(ctx(t), mr)
	if b := mr.Bytes(); len(b) != len(buf) || &b[0] != &buf[0] {
		t.Fatalf("MemoryRegion.Bytes() is not the registered buffer")
	}
}

// ndmemorytest NdMRDeregister
func memoryDeregisterWithWindowBound(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	mr, mw, _ := bindWindow(t, s, pattern(4096, 2), nd.FlagAllowRead, nil)
	expectStatus(t, "DeregisterMemory with a window bound", s.Adapter.DeregisterMemory(ctx(t), mr), nd.ErrDeviceBusy)
	invalidate(t, s, mw)
	expectStatus(t, "DeregisterMemory after Invalidate", s.Adapter.DeregisterMemory(ctx(t), mr), nd.Success)
}

func memoryBindOutsideRegion(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	buf := pattern(128, 3)
	mr := s.Register(t, buf[:64])
	mw := newWindow(t, s, nil)
	_, err := s.Endpoint.Bind(new(nd.Result), mr, mw, pattern(32, 4), nd.FlagAllowRead)
	expectStatus(t, "Bind of a buffer outside the region", err, nd.ErrInvalidParameter4)
	_, err = s.Endpoint.Bind(new(nd.Result), mr, mw, buf[32:96], nd.FlagAllowRead)
	expectStatus(t, "Bind of a buffer straddling the region's end", err, nd.ErrInvalidParameter4)
	ExpectEmpty(t, s.OutCQ)
	bind(t, s, mr, mw, buf[16:48], nd.FlagAllowRead) // the window and endpoint are unaffected
}

func memoryBindWithoutRights(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	buf := pattern(64, 5)
	mr := s.Register(t, buf)
	mw := newWindow(t, s, nil)
	for _, f := range []nd.Flags{0, nd.FlagSilentSuccess, nd.FlagReadFence} {
		_, err := s.Endpoint.Bind(new(nd.Result), mr, mw, buf, f)
		expectStatus(t, "Bind without FlagAllowRead or FlagAllowWrite", err, nd.ErrInvalidParameter6)
	}
	ExpectEmpty(t, s.OutCQ)
	bind(t, s, mr, mw, buf, nd.FlagAllowWrite)
}

func memoryBindBoundWindow(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	activeFirst(t, pr)
	ar, _ := postRecv(t, pr.Active, 8)
	buf := pattern(64, 6)
	mr, mw, _ := bindWindow(t, s, buf, nd.FlagAllowRead, nil)
	res := new(nd.Result)
	_, err := s.Endpoint.Bind(res, mr, mw, buf, nd.FlagAllowRead)
	mustPost(t, "second Bind", err)
	Expect(t, s.OutCQ, res, nd.ErrInvalidRequest, -1)
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
}

func memoryInvalidateUnbound(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	activeFirst(t, pr)
	ar, _ := postRecv(t, pr.Active, 8)
	mw := newWindow(t, s, nil)
	res := new(nd.Result)
	mustPost(t, "Invalidate of an unbound window", s.Endpoint.Invalidate(res, mw, 0))
	Expect(t, s.OutCQ, res, nd.ErrInvalidationError, -1)
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
}

func memoryInvalidateOnOtherEndpoint(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	pr1 := NewPairOn(t, a, b, PairConfig{})
	pr2 := NewPairOn(t, a, b, PairConfig{})
	win := pattern(256, 7)
	_, mw, desc := bindWindow(t, pr1.Passive, win, nd.FlagAllowRead, nil)
	activeFirst(t, pr2)
	res := new(nd.Result)
	mustPost(t, "Invalidate on another endpoint", pr2.Passive.Endpoint.Invalidate(res, mw, 0))
	Expect(t, pr2.Passive.OutCQ, res, nd.ErrInvalidationError, -1)
	expectTerminated(t, pr2, nil, nil)
	rr, got := rdmaRead(t, pr1.Active, desc, 0, 256, 0)
	Expect(t, pr1.Active.OutCQ, rr, nd.Success, 256)
	checkBytes(t, "window still bound on its endpoint", got, win)
}

// Bind, Invalidate, bind again: a new token; the old descriptor fails,
// the new one works.
func memoryWindowReuse(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	w1, w2 := pattern(512, 8), pattern(256, 9)
	mr1 := s.Register(t, w1)
	mr2 := s.Register(t, w2)
	mw := newWindow(t, s, nil)
	d1 := bind(t, s, mr1, mw, w1, nd.FlagAllowRead)
	r, got := rdmaRead(t, pr.Active, d1, 0, 512, 0)
	Expect(t, pr.Active.OutCQ, r, nd.Success, 512)
	checkBytes(t, "Read through the first binding", got, w1)
	invalidate(t, s, mw)
	d2 := bind(t, s, mr2, mw, w2, nd.FlagAllowRead)
	if d2.Token == d1.Token {
		t.Fatalf("rebinding kept the token %#x; every Bind must issue a new one", d1.Token)
	}
	r, got = rdmaRead(t, pr.Active, d2, 0, 256, 0)
	Expect(t, pr.Active.OutCQ, r, nd.Success, 256)
	checkBytes(t, "Read through the second binding", got, w2)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	r, _ = rdmaRead(t, pr.Active, d1, 0, 64, 0)
	expectAccessViolation(t, pr.Active.OutCQ, r, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
}

func memoryCloseInvalidatesWindow(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	mr, mw, desc := bindWindow(t, s, pattern(256, 10), nd.FlagAllowRead, nil)
	if err := mw.Close(); err != nil {
		t.Fatalf("MemoryWindow.Close: %v", err)
	}
	expectStatus(t, "DeregisterMemory after the bound window closed", s.Adapter.DeregisterMemory(ctx(t), mr), nd.Success)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	r, _ := rdmaRead(t, pr.Active, desc, 0, 64, 0)
	expectAccessViolation(t, pr.Active.OutCQ, r, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
}

func memorySendAndInvalidateUnknownToken(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	_, _, desc := bindWindow(t, pr.Passive, pattern(64, 14), nd.FlagAllowRead, nil)
	ar, _ := postRecv(t, pr.Active, 8)
	rr, _ := postRecv(t, pr.Passive, 64)
	other, _ := postRecv(t, pr.Passive, 64)
	desc.Token ^= 0x5a5a0001
	sr := new(nd.Result)
	mustPost(t, "SendAndInvalidate(unknown token)", pr.Active.Endpoint.SendAndInvalidate(sr, nil, desc, 0))
	Expect(t, pr.Passive.InCQ, rr, nd.ErrInvalidationError, -1)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{other})
}

func memorySendAndInvalidateAlreadyInvalidated(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	_, mw, desc := bindWindow(t, pr.Passive, pattern(64, 15), nd.FlagAllowRead, nil)
	invalidate(t, pr.Passive, mw)
	ar, _ := postRecv(t, pr.Active, 8)
	rr, _ := postRecv(t, pr.Passive, 64)
	sr := new(nd.Result)
	mustPost(t, "SendAndInvalidate(invalidated window)", pr.Active.Endpoint.SendAndInvalidate(sr, nil, desc, 0))
	Expect(t, pr.Passive.InCQ, rr, nd.ErrInvalidationError, -1)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
}

func memoryDescriptorWireForm(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 300, 18, nd.FlagAllowRead)
	b, err := desc.MarshalBinary()
	if err != nil || len(b) != nd.MWDescriptorSize {
		t.Fatalf("MarshalBinary = %d bytes, %v; want %d bytes", len(b), err, nd.MWDescriptorSize)
	}
	if binary.BigEndian.Uint64(b[0:8]) != desc.Base || binary.BigEndian.Uint64(b[8:16]) != desc.Length || binary.BigEndian.Uint32(b[16:20]) != desc.Token {
		t.Fatalf("MarshalBinary = %x, not Base, Length, Token big-endian of %+v", b, desc)
	}
	put := make([]byte, nd.MWDescriptorSize)
	desc.Put(put)
	checkBytes(t, "Put", put, b)
	app, _ := desc.AppendBinary([]byte{0xAB})
	checkBytes(t, "AppendBinary", app, append([]byte{0xAB}, b...))
	var back nd.MWDescriptor
	if err := back.UnmarshalBinary(b); err != nil || back != desc {
		t.Fatalf("UnmarshalBinary = %+v, %v; want %+v", back, err, desc)
	}
	for _, n := range []int{0, 19, 21} {
		if err := new(nd.MWDescriptor).UnmarshalBinary(make([]byte, n)); err == nil {
			t.Fatalf("UnmarshalBinary of %d bytes succeeded", n)
		}
	}
	// The descriptor shipped in a Send works at the peer.
	rr, rbuf := postRecv(t, pr.Active, nd.MWDescriptorSize)
	transfer(t, pr.Active, pr.Passive, []byte{1}) // the active side sends first
	sr := postSend(t, pr.Passive, b, 0)
	Expect(t, pr.Passive.OutCQ, sr, nd.Success, nd.MWDescriptorSize)
	Expect(t, pr.Active.InCQ, rr, nd.Success, nd.MWDescriptorSize)
	var shipped nd.MWDescriptor
	if err := shipped.UnmarshalBinary(rbuf); err != nil {
		t.Fatal(err)
	}
	r, got := rdmaRead(t, pr.Active, shipped, 0, 300, 0)
	Expect(t, pr.Active.OutCQ, r, nd.Success, 300)
	checkBytes(t, "Read through the shipped descriptor", got, win)
}

// testTransform is ndmw on a 1 MiB window: the active side (client) binds a
// window and ships its descriptor with 1 KiB of payload; the passive side
// Reads the window in large chunks at many offsets, inverts every byte and
// Writes it back, then Reads 4-byte words over a region, reverses their
// byte order and Writes them back, and says "done"; the active side checks
// every byte.
func testTransform(t *testing.T, p nd.Provider) {
	const (
		size       = 1 << 20
		wordsStart = 4096 + 2 // unaligned
		wordsLen   = 8 << 10
	)
	pr := NewPair(t, p, PairConfig{})
	client, server := pr.Active, pr.Passive
	orig := pattern(size, 19)
	win := append([]byte(nil), orig...)
	_, _, desc := bindWindow(t, client, win, allowRW, nil)

	hello, hbuf := postRecv(t, server, nd.MWDescriptorSize+1024)
	doneRecv, _ := postRecv(t, client, 4)
	payload := pattern(1024, 20)
	msg, _ := desc.AppendBinary(nil)
	msg = append(msg, payload...)
	sr := postSend(t, client, msg, 0)
	Expect(t, client.OutCQ, sr, nd.Success, len(msg))
	Expect(t, server.InCQ, hello, nd.Success, len(msg))
	checkBytes(t, "payload", hbuf[nd.MWDescriptorSize:], payload)
	var remote nd.MWDescriptor
	if err := remote.UnmarshalBinary(hbuf[:nd.MWDescriptorSize]); err != nil {
		t.Fatal(err)
	}

	info := query(t, server.Adapter)
	chunk := min(64<<10+3, info.MaxOutboundLength)
	stage := make([]byte, chunk)
	smr := server.Register(t, stage)
	rw := func(off, n int, transform func([]byte)) {
		t.Helper()
		sgl := one(stage[:n], smr)
		r := new(nd.Result)
		mustPost(t, "Read", server.Endpoint.Read(r, sgl, remote, uint64(off), 0))
		Expect(t, server.OutCQ, r, nd.Success, n)
		transform(stage[:n])
		mustPost(t, "Write", server.Endpoint.Write(r, sgl, remote, uint64(off), 0))
		Expect(t, server.OutCQ, r, nd.Success, n)
	}
	not := func(b []byte) {
		for i := range b {
			b[i] = ^b[i]
		}
	}
	reverse := func(b []byte) { b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0] }
	for off := 0; off < size; off += chunk {
		rw(off, min(chunk, size-off), not)
	}
	for off := wordsStart; off < wordsStart+wordsLen; off += 4 {
		rw(off, 4, reverse)
	}
	done := postSend(t, server, []byte("done"), 0)
	Expect(t, server.OutCQ, done, nd.Success, 4)
	Expect(t, client.InCQ, doneRecv, nd.Success, 4)

	want := append([]byte(nil), orig...)
	not(want)
	for off := wordsStart; off < wordsStart+wordsLen; off += 4 {
		reverse(want[off : off+4])
	}
	if !bytes.Equal(win, want) {
		checkBytes(t, "window after the transform", win, want)
	}
}

// The window's owner receives a SendAndInvalidate: its Receive
// completes, its invalidate Result reports Success, the window can
// be bound again, and the old descriptor fails at the initiator.
func memorySendAndInvalidateThen(op string) func(t *testing.T, p nd.Provider) {
	return func(t *testing.T, p nd.Provider) {
		pr := NewPair(t, p, PairConfig{})
		s := pr.Passive
		inv := &nd.Result{Status: nd.Pending}
		win := pattern(1024, 11)
		mr, mw, desc := bindWindow(t, s, win, allowRW, inv)
		rr, rbuf := postRecv(t, s, 64)
		r, got := rdmaRead(t, pr.Active, desc, 0, 1024, 0)
		Expect(t, pr.Active.OutCQ, r, nd.Success, 1024)
		checkBytes(t, "Read before the invalidation", got, win)

		msg, mmr := regBuf(t, pr.Active, 40, 12)
		sr := new(nd.Result)
		mustPost(t, "SendAndInvalidate", pr.Active.Endpoint.SendAndInvalidate(sr, one(msg, mmr), desc, 0))
		Expect(t, pr.Active.OutCQ, sr, nd.Success, 40)
		Expect(t, s.InCQ, rr, nd.Success, 40)
		checkBytes(t, "SendAndInvalidate's message", rbuf[:40], msg)
		if inv.Status != nd.Success {
			t.Fatalf("the window's invalidate Result has status %v after the SendAndInvalidate's Receive completed, want ND_SUCCESS", inv.Status)
		}
		ExpectEmpty(t, s.OutCQ) // the invalidate Result is never queued
		ExpectEmpty(t, s.InCQ)

		d2 := bind(t, s, mr, mw, win[:512], nd.FlagAllowRead|nd.FlagAllowWrite)
		if d2.Token == desc.Token {
			t.Fatalf("rebinding after SendAndInvalidate kept the token %#x", desc.Token)
		}
		r, got = rdmaRead(t, pr.Active, d2, 0, 512, 0)
		Expect(t, pr.Active.OutCQ, r, nd.Success, 512)
		checkBytes(t, "Read through the new binding", got, win[:512])

		ar, _ := postRecv(t, pr.Active, 8)
		pRecv, _ := postRecv(t, s, 8)
		want := append([]byte(nil), win...)
		if op == "Read" {
			r, _ = rdmaRead(t, pr.Active, desc, 0, 64, 0)
		} else {
			r = rdmaWrite(t, pr.Active, desc, 0, pattern(64, 13), 0)
		}
		expectAccessViolation(t, pr.Active.OutCQ, r, nd.CauseRemoteAccess)
		expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
		checkBytes(t, "window after access through the invalidated descriptor", win, want)
	}
}

func memoryWindowBoundToEndpoint(op string) func(t *testing.T, p nd.Provider) {
	return func(t *testing.T, p nd.Provider) {
		a, b := OpenAdapters(t, p)
		pr1 := NewPairOn(t, a, b, PairConfig{})
		pr2 := NewPairOn(t, a, b, PairConfig{})
		win := pattern(256, 16)
		_, _, desc := bindWindow(t, pr1.Passive, win, allowRW, nil)
		want := append([]byte(nil), win...)
		ar, _ := postRecv(t, pr2.Active, 8)
		pRecv, _ := postRecv(t, pr2.Passive, 8)
		var r *nd.Result
		if op == "Read" {
			r, _ = rdmaRead(t, pr2.Active, desc, 0, 64, 0)
		} else {
			r = rdmaWrite(t, pr2.Active, desc, 0, pattern(64, 17), 0)
		}
		expectAccessViolation(t, pr2.Active.OutCQ, r, nd.CauseRemoteAccess)
		expectTerminated(t, pr2, []*nd.Result{ar}, []*nd.Result{pRecv})
		expectReason(t, pr2.Passive.Connector, "the target of an access through another connection's window", &nd.DisconnectError{Peer: true, Op: op, Status: nd.ErrAccessViolation, Cause: nd.CausePeerAccess})
		checkBytes(t, "window after access from another connection", win, want)
		r, got := rdmaRead(t, pr1.Active, desc, 0, 256, 0)
		Expect(t, pr1.Active.OutCQ, r, nd.Success, 256)
		checkBytes(t, "Read from the window's own peer", got, want)
	}
}
