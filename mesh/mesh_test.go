package mesh

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
)

var loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// runInProcess builds a mesh of p goroutine ranks, rank i on host
// hosts(i) (all one host when nil), exchanges m bytes between every pair
// and returns each rank's count of same-host and other-host peers.
func runInProcess(t *testing.T, p, m int, hosts func(int) string) [][2]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs := InProcess(p)
	counts := make([][2]int, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Go(func() {
			x := newExchanger(i, m)
			cfg := &Config{Prepare: x.prepare, RemoteAddr: loopback}
			if hosts != nil {
				cfg.Host = hosts(i)
			}
			msh, err := Build(ctx, job, cfg)
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", i, err)
				cancel()
				return
			}
			defer msh.Close()
			if msh.Rank != i || msh.Size != p || msh.Peers[i] != nil {
				errs[i] = fmt.Errorf("rank %d: mesh says rank %d of %d", i, msh.Rank, msh.Size)
			}
			l, r, err := x.run(ctx, msh)
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", i, err)
				cancel()
				return
			}
			counts[i] = [2]int{l, r}
			// Nobody closes before every rank reaped its completions.
			if err := job.Fence(ctx); err != nil {
				errs[i] = fmt.Errorf("rank %d: goodbye: %w", i, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestMeshOneHost: every pair of 5 ranks of one host exchanges 4 KiB over
// shared memory, every byte checked.
func TestMeshOneHost(t *testing.T) {
	counts := runInProcess(t, 5, 4096, nil)
	for i, c := range counts {
		if c != [2]int{4, 0} {
			t.Fatalf("rank %d: %d peers over shm, %d over tcp; want 4, 0", i, c[0], c[1])
		}
	}
}

// TestMeshTwoHosts: 6 ranks on two named hosts, 3 each: shm within a host,
// tcp between, every byte checked.
func TestMeshTwoHosts(t *testing.T) {
	counts := runInProcess(t, 6, 70000, func(i int) string { return fmt.Sprint("host", i%2) })
	for i, c := range counts {
		if c != [2]int{2, 3} {
			t.Fatalf("rank %d: %d peers over shm, %d over tcp; want 2, 3", i, c[0], c[1])
		}
	}
}

// TestMeshJobOfOne: a job of one has no peers and opens nothing.
func TestMeshJobOfOne(t *testing.T) {
	m, err := Build(context.Background(), InProcess(1)[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Peers) != 1 || m.Peers[0] != nil || len(m.Queues()) != 0 {
		t.Fatalf("peers %v, queues %v", m.Peers, m.Queues())
	}
	m.Close()
}

// badCardJob answers every Get with a card of its own making.
type badCardJob struct {
	Job
	card string
}

func (j badCardJob) Get(ctx context.Context, key string) (string, error) { return j.card, nil }

// TestMeshBadCard: a malformed card, or one naming another local
// provider, fails Build with a clear error and leaves nothing open.
func TestMeshBadCard(t *testing.T) {
	host, err := hostKey()
	if err != nil {
		t.Fatal(err)
	}
	for card, want := range map[string]string{
		"x":                                        "want HOST|NAME:ADDR:PORT|NAME:ADDR:PORT",
		"h|shm:127.0.0.1:1|tcp:nowhere":            "not an ip:port",
		"h|shm127.0.0.1:1|tcp:1.2.3.4:5":           "not an ip:port",
		"h|shm:127.0.0.1:1|1.2.3.4":                "is not NAME:ADDR:PORT",
		host + "|loop:127.0.0.1:1|tcp:127.0.0.1:5": "reaches this host's ranks over loop",
	} {
		jobs := InProcess(2)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go jobs[1].Fence(ctx)
		_, err := Build(ctx, badCardJob{jobs[0], card}, &Config{RemoteAddr: loopback})
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("card %q: %v, want an error with %q", card, err, want)
		}
	}
}

// TestMeshStrayRequest: a connection request that is not of the job (no
// private data, or another job's tag) is refused, and the mesh is built.
func TestMeshStrayRequest(t *testing.T) {
	jobs := InProcess(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A stray process connects to rank 0's shm listener once its card is
	// out, before rank 1.
	stray := &strayJob{Job: jobs[1], ctx: ctx}
	var wg sync.WaitGroup
	var m0 *Mesh
	var err0 error
	wg.Go(func() { m0, err0 = Build(ctx, jobs[0], &Config{RemoteAddr: loopback}) })
	m1, err1 := Build(ctx, stray, &Config{RemoteAddr: loopback})
	wg.Wait()
	if err0 != nil || err1 != nil {
		t.Fatal(err0, err1)
	}
	defer m0.Close()
	defer m1.Close()
	if stray.refused != 2 {
		t.Fatalf("%d stray requests refused, want 2 (%v)", stray.refused, stray.errs)
	}
}

// strayJob is rank 1, which, after the fence and before connecting,
// sends rank 0 two requests of no rank of this job.
type strayJob struct {
	Job
	ctx     context.Context
	refused int
	errs    []error
}

func (j *strayJob) Get(ctx context.Context, key string) (string, error) {
	v, err := j.Job.Get(ctx, key)
	if err != nil {
		return v, err
	}
	c, err := parseCard(v)
	if err != nil {
		return v, err
	}
	p, err := nd.OpenProvider(shm.Name)
	if err != nil {
		return "", err
	}
	a, err := p.OpenAdapter(c.local.Addr())
	if err != nil {
		return "", err
	}
	defer a.Close()
	cq, err := a.CreateCompletionQueue(8)
	if err != nil {
		return "", err
	}
	for _, priv := range [][]byte{nil, {0, 0, 0, 1, 1, 2, 3, 4}} {
		conn, _ := a.CreateConnector()
		ep, err := conn.CreateEndpoint(cq, cq, DefaultLimits)
		if err != nil {
			return "", err
		}
		err = conn.Connect(ctx, ep, c.local, DefaultProtocol, 0, priv)
		if errors.Is(err, nd.ErrConnectionRefused) {
			j.refused++
		} else {
			j.errs = append(j.errs, err)
		}
		conn.Close()
	}
	return v, nil
}
