package ndtest

import (
	"errors"
	"testing"

	"github.com/godirect/nd"
)

// disconnectReasonCases check nd.DisconnectReason: both sides of a
// connection learn why it ended, the side that ended it by its call or
// its failed request, the other side by the peer's end or by what it
// refused. A provider without it (nd.ErrNotSupported) skips them.
var disconnectReasonCases = []testCase{
	{"DisconnectReason/Disconnect", `docs/semantics.md "Disconnect, Close, Flush": nd.DisconnectReason is nil before and while the connection is up; after a Disconnect, this side's "Disconnect" and the peer's end on the other side`, reasonDisconnect},
	{"DisconnectReason/Flush", `docs/semantics.md "Disconnect, Close, Flush": after a Flush, this side's "Flush" and the peer's end on the other side`, reasonFlush},
	{"DisconnectReason/Close", `docs/semantics.md "Disconnect, Close, Flush": after a connector's Close, its "Close" (still readable after it) and the peer's end on the other side`, reasonClose},
	{"DisconnectReason/WriteToUnknownToken", `docs/semantics.md "this side refused the peer's Read or Write": a Write through a token never advertised fails CauseRemoteAccess at the initiator, and its target learns the peer's Write was refused (CausePeerAccess)`, reasonWriteToUnknownToken},
}

// expectReason checks nd.DisconnectReason(c) against want: Peer, Op,
// Status and Cause exactly, and a Detail when the cause is
// CausePeerAccess. A connector that does not record reasons is let go.
func expectReason(t testing.TB, c nd.Connector, what string, want *nd.DisconnectError) {
	t.Helper()
	got := nd.DisconnectReason(c)
	if errors.Is(got, nd.ErrNotSupported) {
		var de *nd.DisconnectError
		if !errors.As(got, &de) {
			t.Logf("%s: the provider records no reason (%v)", what, got)
			return
		}
	}
	var de *nd.DisconnectError
	if !errors.As(got, &de) {
		t.Fatalf("%s: DisconnectReason = %#v (%v); want %v", what, got, got, want)
	}
	if de.Peer != want.Peer || de.Op != want.Op || de.Status != want.Status || de.Cause != want.Cause ||
		(want.Cause == nd.CausePeerAccess && de.Detail == "") {
		t.Fatalf("%s: DisconnectReason = %+v (%v); want %+v", what, *de, got, *want)
	}
	if want.Status != nd.Success && (!errors.Is(got, want.Status) || nd.StatusOf(got) != want.Status) {
		t.Fatalf("%s: DisconnectReason = %v: errors.Is and StatusOf do not give %v", what, got, want.Status)
	}
	if want.Cause != nd.CauseNone && !errors.Is(got, want.Cause) {
		t.Fatalf("%s: DisconnectReason = %v: errors.Is does not give %v", what, got, want.Cause)
	}
}

// expectNoReason checks that c reports no reason (its connection has not
// ended), or that it records none.
func expectNoReason(t testing.TB, c nd.Connector, what string) {
	t.Helper()
	if got := nd.DisconnectReason(c); got != nil && !errors.Is(got, nd.ErrNotSupported) {
		t.Fatalf("%s: DisconnectReason = %v; want nil", what, got)
	}
}

// peerEnded is the reason the other side of a deliberate end reports.
var peerEnded = &nd.DisconnectError{Peer: true, Status: nd.Success}

func reasonDisconnect(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	expectNoReason(t, side(t, a).Connector, "a connector never connected")
	pr := NewPair(t, p, PairConfig{})
	expectNoReason(t, pr.Active.Connector, "the active side of a connection that is up")
	expectNoReason(t, pr.Passive.Connector, "the passive side of a connection that is up")
	expectStatus(t, "Disconnect", pr.Active.Connector.Disconnect(ctx(t)), nd.Success)
	AwaitDisconnect(t, pr.Passive.Connector, "the peer's Disconnect")
	expectReason(t, pr.Active.Connector, "the side that disconnected", &nd.DisconnectError{Op: "Disconnect"})
	expectReason(t, pr.Passive.Connector, "the peer of the side that disconnected", peerEnded)
}

func reasonFlush(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	if err := pr.Passive.Endpoint.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	AwaitDisconnect(t, pr.Passive.Connector, "Flush")
	AwaitDisconnect(t, pr.Active.Connector, "the peer's Flush")
	expectReason(t, pr.Passive.Connector, "the side that flushed", &nd.DisconnectError{Op: "Flush"})
	expectReason(t, pr.Active.Connector, "the peer of the side that flushed", peerEnded)
}

func reasonClose(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	if err := pr.Active.Connector.Close(); err != nil {
		t.Fatalf("Connector.Close: %v", err)
	}
	AwaitDisconnect(t, pr.Passive.Connector, "the peer's Close")
	expectReason(t, pr.Active.Connector, "the side that closed its connector", &nd.DisconnectError{Op: "Close"})
	expectReason(t, pr.Passive.Connector, "the peer of the side that closed", peerEnded)
}

// The Write of a program that took a window's descriptor from somewhere
// other than its peer: the token names nothing there.
func reasonWriteToUnknownToken(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 1024, 40, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	desc.Token ^= 0x5a5a5a5a
	res := rdmaWrite(t, pr.Active, desc, 0, pattern(64, 41), 0)
	expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
	checkBytes(t, "window after a Write through an unknown token", win, want)
	expectReason(t, pr.Active.Connector, "the initiator", &nd.DisconnectError{Op: "Write", Status: nd.ErrAccessViolation, Cause: nd.CauseRemoteAccess})
	expectReason(t, pr.Passive.Connector, "the target", &nd.DisconnectError{Peer: true, Op: "Write", Status: nd.ErrAccessViolation, Cause: nd.CausePeerAccess})
}
