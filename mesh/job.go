package mesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/godirect/nd/pmi"
)

// Job is what Build needs of the job: this process's rank among Size, the
// job's id, and its key-value space with a fence (Fence returns once every
// rank called it, after which each sees every Put before it). *pmi.Client
// is one; its contract is the one required here.
type Job interface {
	Rank() int
	Size() int
	JobID() string
	Put(ctx context.Context, key, value string) error
	Fence(ctx context.Context) error
	Get(ctx context.Context, key string) (string, error)
}

var _ Job = (*pmi.Client)(nil)

// InProcess returns the size ranks of a job whose ranks are goroutines of
// this process, sharing one key-value space: ranks[i].Rank() is i. Fence
// waits for every rank's Fence (or the caller's context). It is safe for
// concurrent use, each rank by its own goroutine.
func InProcess(size int) []Job {
	var id [8]byte
	rand.Read(id[:])
	s := &space{size: size, kv: make(map[string]string), id: "inprocess-" + hex.EncodeToString(id[:]), release: make(chan struct{})}
	ranks := make([]Job, size)
	for i := range ranks {
		ranks[i] = &inProcess{s: s, rank: i}
	}
	return ranks
}

type space struct {
	size    int
	id      string
	mu      sync.Mutex
	kv      map[string]string
	waiting int
	release chan struct{} // closed when the current fence's last rank arrives
}

type inProcess struct {
	s    *space
	rank int
}

func (j *inProcess) Rank() int     { return j.rank }
func (j *inProcess) Size() int     { return j.s.size }
func (j *inProcess) JobID() string { return j.s.id }

func (j *inProcess) Put(ctx context.Context, key, value string) error {
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	j.s.kv[key] = value
	return nil
}

func (j *inProcess) Get(ctx context.Context, key string) (string, error) {
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	v, ok := j.s.kv[key]
	if !ok {
		return "", fmt.Errorf("%w: %q", pmi.ErrNotFound, key)
	}
	return v, nil
}

func (j *inProcess) Fence(ctx context.Context) error {
	s := j.s
	s.mu.Lock()
	release := s.release
	s.waiting++
	if s.waiting == s.size {
		s.waiting = 0
		s.release = make(chan struct{})
		close(release)
	}
	s.mu.Unlock()
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
