//go:build !windows

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestVtablesGenerated checks that vtables.c is what gen_vtables.go makes
// of internal/ndabi's Interfaces (run go generate after changing them).
func TestVtablesGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "vtables.c")
	if b, err := exec.Command("go", "run", "gen_vtables.go", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("gen_vtables: %v\n%s", err, b)
	}
	want, _ := os.ReadFile(out)
	have, err := os.ReadFile("vtables.c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("vtables.c is out of date: run go generate ./cmd/ndprovider")
	}
}
