//go:build !windows

package ndexport

func newPlatformFile() (File, error) { return NewMemoryFile(), nil }
