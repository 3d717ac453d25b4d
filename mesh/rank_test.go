package mesh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/pmi"
)

// The environment of a rank that a launch test starts (launch_test.go).
const (
	envRankMode = "GODIRECT_MESH_TEST_MODE" // exchange, abort or wait
	envRankDir  = "GODIRECT_MESH_TEST_DIR"  // where each rank writes rank-R.txt
)

// TestLaunchedRank is one rank of a job that a launch test started through
// mpiexec or srun; it skips otherwise. Modes: exchange builds the mesh,
// exchanges 64 KiB with every peer, checks every byte and writes "ok
// local=N remote=M"; abort does the same but rank 1 then aborts the job
// while the others wait on their queues; wait builds the mesh, writes
// "ready" and waits on its queues until the launcher goes away, then
// writes the error that ended the wait.
func TestLaunchedRank(t *testing.T) {
	mode, ok := os.LookupEnv(envRankMode)
	if !ok {
		t.Skip("a rank of the launch tests; they start it")
	}
	dir := os.Getenv(envRankDir)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := pmi.Init(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	report := func(format string, args ...any) {
		line := fmt.Sprintf("rank=%d size=%d version=%d %s\n", cl.Rank(), cl.Size(), cl.Version(), fmt.Sprintf(format, args...))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.txt", cl.Rank())), []byte(line), 0o644); err != nil {
			t.Error(err)
		}
		os.Stdout.WriteString(line)
	}
	wctx, wcancel := cl.Watch(ctx)
	defer wcancel()
	x := newExchanger(cl.Rank(), 64<<10)
	m, err := Build(wctx, cl, &Config{Prepare: x.prepare})
	if err != nil {
		report("error=%q", err.Error())
		t.Fatal(err)
	}
	defer m.Close()
	switch mode {
	case "wait":
		report("ready")
		err := waitForever(wctx, m)
		report("ended after=%s error=%q", time.Since(start).Round(time.Millisecond), err.Error())
		return
	case "abort":
		if cl.Rank() == 1 {
			report("aborting")
			os.Stderr.WriteString("rank 1: aborting the job on purpose\n")
			if err := cl.Abort(ctx, 7, "rank 1 aborts on purpose"); err != nil {
				t.Fatal(err)
			}
			// The launcher ends this process too.
			t.Fatal(waitForever(wctx, m))
		}
		report("waiting")
		err := waitForever(wctx, m)
		report("ended error=%q", err.Error())
		t.Fatal(err)
	}
	local, remote, err := x.run(wctx, m)
	if err != nil {
		report("error=%q", err.Error())
		t.Fatal(err)
	}
	// Nobody closes before every rank reaped its completions.
	if err := cl.Fence(wctx); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := cl.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	report("ok local=%d remote=%d", local, remote)
}

// waitForever blocks in a Notify on the mesh's first queue, where nothing
// will complete, until ctx ends; it returns ctx's cause.
func waitForever(ctx context.Context, m *Mesh) error {
	qs := m.Queues()
	if len(qs) == 0 {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	for {
		err := qs[0].Notify(ctx, nd.NotifyAny)
		if errors.Is(err, nd.ErrCanceled) && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			return err
		}
	}
}
