package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/godirect/nd"
)

func TestFrameRoundTrip(t *testing.T) {
	f := &frame{
		kind: kindRequest, id: 1<<40 + 3, op: opWrite, obj: refForeign, deadline: -5,
		ints:  []int64{-1, 0, 1 << 62, -1 << 63},
		blobs: [][]byte{nil, {}, []byte("private data")},
		sges:  []wireSGE{{kind: sgeInline, n: 3, data: []byte{1, 2, 3}}, {kind: sgeRegion, region: 7, off: 4096, n: 10}},
		err:   wireErr{kind: errOp, status: uint32(nd.ErrCanceled), ctx: ctxCanceled, op: "Notify", msg: "context canceled"},
		sync: &syncSection{
			activate: []uint64{7},
			chunks:   []chunk{{region: 7, off: 8192, data: []byte("chunk")}},
			windows:  []winState{{id: 9, status: uint32(nd.Success), bytes: 0}},
		},
	}
	b := f.encode()
	got, err := readFrame(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, f)
	}
	if got.blobs[0] != nil || got.blobs[1] == nil {
		t.Fatal("nil and empty byte strings are not kept apart")
	}
	for n := range len(b) - 4 {
		if _, err := decodeFrame(b[4 : 4+n]); err == nil && n < len(b)-4 {
			// A prefix may happen to decode only if nothing was cut that
			// the decoder reads; the sync section comes last, so no
			// proper prefix is complete.
			t.Fatalf("a %d-byte prefix of a %d-byte frame decoded", n, len(b)-4)
		}
	}
}

func TestErrorRoundTrip(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{
		nd.ErrAccessViolation,
		&nd.OpError{Op: "Connect", Status: nd.ErrCanceled, Err: context.Canceled},
		&nd.OpError{Op: "Accept", Status: nd.ErrConnectionAborted},
		errors.New("something else"),
	} {
		got := decodeErr(ctx, encodeErr(err))
		if nd.StatusOf(got) != nd.StatusOf(err) {
			t.Errorf("%v came back as %v: status %v, want %v", err, got, nd.StatusOf(got), nd.StatusOf(err))
		}
		for _, target := range []error{nd.ErrCanceled, context.Canceled, nd.ErrAccessViolation} {
			if errors.Is(got, target) != errors.Is(err, target) {
				t.Errorf("errors.Is(%v, %v) = %v after the trip, %v before", got, target, errors.Is(got, target), errors.Is(err, target))
			}
		}
	}
	if decodeErr(context.Background(), encodeErr(nil)) != nil {
		t.Error("nil did not stay nil")
	}
}

func TestMerge(t *testing.T) {
	base := []byte("aaaaaaaaaaaa")
	live := []byte("aaaaaaaXaaaa") // the receiver changed byte 7
	data := []byte("bbaaaaaaaaaa") // the sender changed bytes 0 and 1
	mergeNoRace(live, base, data)
	if string(live) != "bbaaaaaXaaaa" || string(base) != string(data) {
		t.Fatalf("merge: live %q base %q", live, base)
	}
	a := bytes.Repeat([]byte{1}, 10000)
	b := bytes.Clone(a)
	if !equalNoRace(a, b) {
		t.Fatal("equal buffers differ")
	}
	b[9999] = 2
	if equalNoRace(a, b) {
		t.Fatal("different buffers are equal")
	}
	var out []chunk
	out = diffNoRace(out, 1, b, a)
	if len(out) != 1 || out[0].off != 8192 || !equalNoRace(a, b) {
		t.Fatalf("diff: %d chunks, first at %d", len(out), out[0].off)
	}
}
