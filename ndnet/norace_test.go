//go:build !race

package ndnet_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/godirect/nd/ndnet"
)

// TestZeroAllocs: after warm-up, Read and Write allocate nothing, for
// frames (64 B) and for the ring (256 KiB), on either side of the
// connection and in its progress goroutines.
func TestZeroAllocs(t *testing.T) {
	for _, pr := range providers {
		for _, size := range []int{64, 256 << 10} {
			t.Run(fmt.Sprintf("%s/%d", pr.name, size), func(t *testing.T) {
				c1, c2, stop := pipe(t, pr.p(), pr.addr, ndnet.Config{})
				defer stop()
				echoed := make(chan error, 1)
				go func() {
					buf := make([]byte, size)
					for {
						if _, err := io.ReadFull(c2, buf); err != nil {
							echoed <- err
							return
						}
						if _, err := c2.Write(buf); err != nil {
							echoed <- err
							return
						}
					}
				}()
				out, in := make([]byte, size), make([]byte, size)
				round := func() {
					if _, err := c1.Write(out); err != nil {
						t.Fatal(err)
					}
					if _, err := io.ReadFull(c1, in); err != nil {
						t.Fatal(err)
					}
				}
				for range 50 {
					round()
				}
				if a := testing.AllocsPerRun(200, round); a != 0 {
					t.Errorf("%d-byte round trip: %v allocations, want 0", size, a)
				}
			})
		}
	}
}
