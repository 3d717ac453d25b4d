//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"testing"

	"github.com/godirect/nd/ndtest"
)

// TestDataPath checks, through each ND version and transport of the DLL,
// that posting and reaping a Send/Receive pair, a Read and a Write (and
// Send/Receive over shared receive queues, ND v2) allocate nothing in Go
// and move the bytes they claim.
func TestDataPath(t *testing.T) {
	for _, v := range []int{2, 1} {
		for _, tr := range transports {
			t.Run(versionName(v)+"/"+tr.name, func(t *testing.T) {
				p := dllProvider(t, tr.class, v)
				t.Run("AllocatesNothing", func(t *testing.T) {
					if raceEnabled {
						t.Skip("the race detector allocates on its own")
					}
					ndtest.CheckAllocs(t, p)
				})
				t.Run("Bytes", func(t *testing.T) { ndtest.CheckBytes(t, p, 20000) })
			})
		}
	}
}
