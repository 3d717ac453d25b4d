package perftest

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
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
	if err := q.dispatch([]*nd.Result{&stray}); err != session.ErrUnexpected {
		t.Errorf("a completion owned by no connection: %v, want errUnexpected", err)
	}
}
