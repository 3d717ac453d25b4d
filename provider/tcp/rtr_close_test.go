package tcp_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// An active side that Rejects after Connect, facing a foreign responder in
// MPA v2 peer-to-peer mode (as Linux's siw answers), sends the
// ready-to-receive frame it owes first and the Terminate after it. siw
// reports the connection to iw_cm only once the RTR went through, and a
// Terminate in its place made the kernel stop (docs/iwcm-close-bug.md).
func TestRejectAfterConnectSendsRTRFirst(t *testing.T) {
	for _, peer := range siwPeers {
		for _, crc := range []bool{false, true} {
			for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
				t.Run(peer.name+"/"+rtrCaseName(crc, rtr), func(t *testing.T) {
					testSendsRTRFirst(t, crc, rtr, peer.pd, rejectAfterConnect, iwarp.OpTerminate)
				})
			}
		}
	}
}

// siwPeers are the passive sides whose MPA is Linux siw's: siw's own
// application (a reply without godirect's prefix), and godirect's verbs
// provider over siw (with its prefix). provider/tcp must treat both alike.
var siwPeers = []struct {
	name string
	pd   []byte
}{{"siw", nil}, {"verbs-over-siw", iwarp.AppendPrefix(nil, iwarp.PrefixVerbs, 0)}}

// The same when the connection ends right after CompleteConnect, before
// the writer took the RTR that CompleteConnect queued: a Disconnect (the
// RTR, then the close) and a local failure (the RTR, then a Terminate).
// Without the RTR a siw responder sees the FIN or the Terminate first.
func TestCloseAsWriterStartsSendsRTRFirst(t *testing.T) {
	for _, peer := range siwPeers {
		for _, status := range []nd.Status{nd.Success, nd.ErrInternalError} {
			for _, crc := range []bool{false, true} {
				for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
					name := peer.name + "/disconnect/"
					then := []iwarp.Opcode{}
					if status != nd.Success {
						name, then = peer.name+"/failure/", []iwarp.Opcode{iwarp.OpTerminate}
					}
					t.Run(name+rtrCaseName(crc, rtr), func(t *testing.T) {
						tcp.CloseAsWriterStarts(t, status)
						testSendsRTRFirst(t, crc, rtr, peer.pd, completeConnect, then...)
					})
				}
			}
		}
	}
}

func rtrCaseName(crc bool, rtr iwarp.RTRFlags) string {
	return map[bool]string{false: "crc-off", true: "crc-on"}[crc] + "/" + map[iwarp.RTRFlags]string{iwarp.RTRWrite: "write", iwarp.RTRRead: "read"}[rtr]
}

// rejectAfterConnect and completeConnect end an active side's Connect.
func rejectAfterConnect(t *testing.T, s *ndtest.Side, ctx context.Context) {
	if err := s.Connector.Reject(nil); err != nil && !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("Reject after Connect: %v", err)
	}
}

func completeConnect(t *testing.T, s *ndtest.Side, ctx context.Context) {
	if err := s.Connector.CompleteConnect(ctx); err != nil && !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("CompleteConnect: %v", err)
	}
}

// testSendsRTRFirst connects to a raw siw-like responder that chose rtr
// and replies with private data pd, ends the connection with end, and
// checks that the FPDUs the responder got until the close are the RTR and
// then the opcodes then.
func testSendsRTRFirst(t *testing.T, crc bool, rtr iwarp.RTRFlags, pd []byte, end func(*testing.T, *ndtest.Side, context.Context), then ...iwarp.Opcode) {
	r := startSIWResponderAs(t, rtr, 0, pd)
	s, ctx := connectToResponder(t, r, crc)
	end(t, s, ctx)
	segs := r.frames(t)
	want := append([]iwarp.Opcode{rtrOpcode(rtr)}, then...)
	got := make([]iwarp.Opcode, len(segs))
	for i := range segs {
		got[i] = segs[i].Opcode
	}
	if !slices.Equal(got, want) {
		t.Fatalf("FPDUs after the MPA reply %v, want %v (the RTR first)", got, want)
	}
}
