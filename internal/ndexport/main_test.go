package ndexport

import (
	"os"
	"testing"
)

// The tests keep completions in memory (MemoryFile), where they can read
// the packets, on every platform; file_windows_test.go tests the Windows
// file on its own.
func TestMain(m *testing.M) {
	NewFile = func() (File, error) { return NewMemoryFile(), nil }
	os.Exit(m.Run())
}
