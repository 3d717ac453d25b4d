//go:build !windows

package ndexport

func newPlatformFile() (File, error) { return NewMemoryFile(), nil }

// consumeEvent has nothing to consume where events are not kernel objects.
func consumeEvent(uintptr) {}
