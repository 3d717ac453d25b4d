package ndnet_test

import (
	"hash/crc32"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
	"github.com/godirect/nd/provider/shm"
)

// countingAllocator is provider/shm with its memory allocator counted.
type countingAllocator struct {
	*shm.Provider
	allocated, freed atomic.Int32
}

func (c *countingAllocator) AllocateMemory(size int) ([]byte, error) {
	b, err := c.Provider.AllocateMemory(size)
	if err == nil {
		c.allocated.Add(1)
	}
	return b, err
}

func (c *countingAllocator) FreeMemory(b []byte) error {
	err := c.Provider.FreeMemory(b)
	if err == nil {
		c.freed.Add(1)
	}
	return err
}

// TestRingInProviderMemory: over a provider with its own memory allocator
// (shm), each side's ring comes from it, large writes arrive intact through
// it, and Close gives it back.
func TestRingInProviderMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("provider/shm's tests run on Linux")
	}
	p := &countingAllocator{Provider: shm.New(shm.DefaultConfig())}
	var _ nd.Provider = p
	c1, c2, stop := pipe(t, p, "127.0.0.1:0", ndnet.Config{BufferSize: 64 << 10})
	if n := p.allocated.Load(); n != 2 {
		t.Fatalf("%d rings allocated by the provider, want 2", n)
	}
	const total = 1 << 20
	var wg sync.WaitGroup
	var sum uint32
	wg.Add(1)
	go func() {
		defer wg.Done()
		sum = writeRandom(t, c1, 7, total, 256<<10)
		c1.CloseWrite()
	}()
	got, err := io.ReadAll(c2)
	wg.Wait()
	if err != nil || len(got) != total || crc32.ChecksumIEEE(got) != sum {
		t.Fatalf("read %d bytes (want %d), err %v, checksum match %v", len(got), total, err, crc32.ChecksumIEEE(got) == sum)
	}
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for p.freed.Load() != 2 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := p.freed.Load(); n != 2 {
		t.Fatalf("%d rings given back after Close, want 2", n)
	}
}
