package ndnet_test

import (
	"hash/crc32"
	"io"
	"runtime"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
	"github.com/godirect/nd/provider/shm"
)

// TestLargeWritesFromCallerBuffer: over provider/shm, whose peer maps the
// ring, Write sends chunks of 64 KiB and more by RDMA Write from the
// caller's buffer, never through the staging ring; it returns only once
// those Writes are done (the buffer is scribbled over right after each
// Write, and the peer reads what was written); one registration serves
// every Write of the same buffer, and a Write of another buffer replaces
// it.
func TestLargeWritesFromCallerBuffer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("provider/shm's tests run on Linux")
	}
	c1, c2, stop := pipe(t, shm.New(shm.DefaultConfig()), "127.0.0.1:0", ndnet.Config{})
	defer stop()
	// A byte from c2 comes after its hello: c1 may write to c2's ring.
	if _, err := c2.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c1, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		data []byte
		err  error
	}
	read := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(c2)
		read <- result{b, err}
	}()
	sent := crc32.NewIEEE()
	total := 0
	write := func(b []byte, seed byte) {
		t.Helper()
		for i := range b {
			b[i] = seed + byte(i*7) + byte(i>>9)
		}
		sent.Write(b)
		total += len(b)
		if n, err := c1.Write(b); n != len(b) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(b), n, err)
		}
		if !ndnet.SourceWritesDone(c1) {
			t.Fatalf("Write(%d bytes) returned before its RDMA Writes completed", len(b))
		}
		for i := range b {
			b[i] = 0xEE // the buffer is the caller's again
		}
	}
	buf := make([]byte, 768<<10)
	var first nd.MemoryRegion
	for i, n := range []int{64 << 10, 768 << 10, 300000, 200 << 10, 768 << 10} {
		write(buf[:n], byte(i+1))
		mr := ndnet.SourceRegion(c1)
		if mr == nil {
			t.Fatalf("Write %d (%d bytes): no registration of the caller's buffer", i, n)
		}
		if first == nil {
			first = mr
		} else if mr != first {
			t.Fatalf("Write %d of the same buffer registered it again", i)
		}
	}
	other := make([]byte, 128<<10)
	write(other, 9)
	if mr := ndnet.SourceRegion(c1); mr == nil || mr == first {
		t.Fatalf("a Write of another buffer kept the first one's registration")
	}
	if n := ndnet.StagedBytes(c1); n != 0 {
		t.Fatalf("%d bytes went through the staging ring, want 0", n)
	}
	if err := c1.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-read
	if r.err != nil || len(r.data) != total || crc32.ChecksumIEEE(r.data) != sent.Sum32() {
		t.Fatalf("read %d bytes (want %d), err %v, checksum match %v", len(r.data), total, r.err, crc32.ChecksumIEEE(r.data) == sent.Sum32())
	}
}
