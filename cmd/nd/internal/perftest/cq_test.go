package perftest

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
)

// countingOwner is a perfOwner that counts its completions.
type countingOwner struct {
	qp, n int
}

func (o *countingOwner) complete(*nd.Result) error { o.n++; return nil }

func (o *countingOwner) index() int { return o.qp }

// TestPerfDispatch checks that completions go to the connection that owns
// their Result, that one owned by none is an error, and that handing them
// out allocates nothing.
func TestPerfDispatch(t *testing.T) {
	q := &perfCQ{owners: make(map[*nd.Result]perfOwner), many: true}
	owners := make([]*countingOwner, 3)
	results := make([][]nd.Result, 3)
	var done []*nd.Result
	for i := range owners {
		owners[i] = &countingOwner{qp: i}
		results[i] = make([]nd.Result, i+1)
		q.ownAll(owners[i], results[i])
		for j := range results[i] {
			done = append(done, &results[i][j])
		}
	}
	if err := q.dispatch(done); err != nil {
		t.Fatal(err)
	}
	for i, o := range owners {
		if o.n != i+1 {
			t.Errorf("connection %d took %d completions, want %d", i, o.n, i+1)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { q.dispatch(done) }); allocs != 0 {
		t.Errorf("dispatch allocates %v times per batch", allocs)
	}
	var stray nd.Result
	if err := q.dispatch([]*nd.Result{&stray}); err != datapath.ErrUnexpected {
		t.Errorf("a completion owned by no connection: %v, want errUnexpected", err)
	}
}

// strictOwner is a perfOwner that, as the real ones, refuses a Result it
// does not own.
type strictOwner struct {
	rs []nd.Result
	n  int
}

func (o *strictOwner) complete(r *nd.Result) error {
	for i := range o.rs {
		if r == &o.rs[i] {
			o.n++
			return nil
		}
	}
	return datapath.ErrUnexpected
}

func (o *strictOwner) index() int { return 0 }

// TestPerfDispatchOneConnection: with one owner nothing is looked up, and a
// completion it does not own is still an error, and from a second owner
// on, the map decides again.
func TestPerfDispatchOneConnection(t *testing.T) {
	q := &perfCQ{owners: make(map[*nd.Result]perfOwner)}
	o := &strictOwner{rs: make([]nd.Result, 4)}
	q.ownAll(o, o.rs[:3])
	q.own(o, &o.rs[3])
	if q.sole != o {
		t.Fatal("one owner, but dispatch looks Results up")
	}
	if err := q.dispatch([]*nd.Result{&o.rs[0], &o.rs[3]}); err != nil || o.n != 2 {
		t.Fatalf("dispatch: %v, %d completions taken, want 2", err, o.n)
	}
	var stray nd.Result
	if err := q.dispatch([]*nd.Result{&stray}); err != datapath.ErrUnexpected {
		t.Errorf("a completion owned by no connection: %v, want errUnexpected", err)
	}
	other := &strictOwner{rs: make([]nd.Result, 1)}
	q.ownAll(other, other.rs)
	if q.sole != nil || !q.mixed {
		t.Fatal("two owners, but dispatch does not look Results up")
	}
	if err := q.dispatch([]*nd.Result{&other.rs[0], &o.rs[1]}); err != nil || other.n != 1 || o.n != 3 {
		t.Fatalf("dispatch: %v; completions taken %d and %d, want 1 and 3", err, other.n, o.n)
	}
}
