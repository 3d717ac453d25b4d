package pmi

import (
	"context"
	"errors"
	"testing"
)

// TestSingleton: with no launcher in the environment a process is rank 0
// of a job of one, whose key-value space holds its own puts.
func TestSingleton(t *testing.T) {
	ctx := context.Background()
	cl, err := Init(ctx, &Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Version() != 0 || cl.Rank() != 0 || cl.Size() != 1 || cl.Universe() != 1 || cl.AppNum() != 0 || cl.JobID() != "singleton" {
		t.Fatalf("version %d rank %d size %d universe %d appnum %d job %q", cl.Version(), cl.Rank(), cl.Size(), cl.Universe(), cl.AppNum(), cl.JobID())
	}
	if err := cl.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(ctx, "k"); err != nil || v != "v1" {
		t.Fatalf("Get: %q, %v", v, err)
	}
	if _, err := cl.Get(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get other: %v", err)
	}
	if err := cl.Put(ctx, "bad key", "v"); err == nil {
		t.Fatal("a key with a space accepted")
	}
	if err := cl.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	<-cl.Done()
	if !errors.Is(cl.Err(), ErrClosed) {
		t.Fatalf("Err: %v", cl.Err())
	}
	if err := cl.Put(ctx, "k", "v"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Finalize: %v", err)
	}
}
