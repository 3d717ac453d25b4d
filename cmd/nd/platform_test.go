package main

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
)

var (
	shmOnce sync.Once
	shmErr  error
)

// shmSupported reports whether the shm provider works on this platform
// (it says ND_NOT_SUPPORTED where it is not implemented).
func shmSupported() bool {
	shmOnce.Do(func() {
		p := shm.New(shm.Config{Namespace: "godirect-nd-cmd-test-probe"})
		a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
		if err == nil {
			a.Close()
		}
		shmErr = err
	})
	return !errors.Is(shmErr, nd.ErrNotSupported)
}

// skipUnsupported skips t if provider (its first word) is not implemented
// on this platform.
func skipUnsupported(t *testing.T, provider string) {
	t.Helper()
	if strings.Fields(provider)[0] == shm.Name && !shmSupported() {
		t.Skipf("provider shm: %v", shmErr)
	}
}

// tempDir is t.TempDir whose files are removed one by one before the
// directory, and it before its parent: under Wine 8, os.RemoveAll fails on a directory that is not
// empty (its unlinkat asks for a file-information class Wine lacks),
// which t.TempDir's own cleanup reports as a failure.
func tempDir(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			os.Remove(filepath.Join(dir, e.Name()))
		}
		os.Remove(dir)
	})
	return dir
}
