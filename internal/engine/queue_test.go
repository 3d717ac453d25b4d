package engine

import (
	"reflect"
	"testing"

	"github.com/godirect/nd"
)

// reset leaves nothing of a slot's last request but its backing arrays:
// every field is the new request's or zero, the SGE array is emptied and
// kept, the inline array kept. The field count makes a new field fail
// here until reset (and this test) set it.
func TestWorkRequestReset(t *testing.T) {
	if n := reflect.TypeFor[WorkRequest]().NumField(); n != 18 {
		t.Fatalf("WorkRequest has %d fields, reset sets 18: set the new ones there and here", n)
	}
	sges := make([]nd.SGE, 2)
	inline := make([]byte, 4)
	old, res := &nd.Result{}, &nd.Result{}
	other := &WorkRequest{}
	wr := &WorkRequest{
		Op: OpWrite, Flags: nd.FlagReadFence, SGL: sges[:1], Length: 7,
		Remote: nd.MWDescriptor{Base: 1, Length: 2, Token: 3}, Offset: 4, Seq: 5,
		result: old, status: nd.ErrAccessViolation, cause: nd.CauseRemoteAccess, preset: true, done: true, counted: true, solicited: true,
		window: &Window{}, nextTaken: other, sge: sges[:2], inline: inline,
	}
	wr.reset(OpSend, nd.FlagSilentSuccess, 9, res)
	want := WorkRequest{Op: OpSend, Flags: nd.FlagSilentSuccess, Seq: 9, result: res}
	got := *wr
	if &got.sge[:1][0] != &sges[0] || len(got.sge) != 0 || cap(got.sge) != 2 {
		t.Fatalf("sge after reset: len %d cap %d, want the same array emptied", len(got.sge), cap(got.sge))
	}
	if &got.inline[0] != &inline[0] || len(got.inline) != 4 {
		t.Fatal("inline after reset is not the same array")
	}
	got.sge, got.inline = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after reset: %+v\nwant %+v", got, want)
	}
}
