//go:build !unix

package tcp

import "syscall"

// rawIO: without Unix descriptors every read and write blocks in the
// runtime's network poller.
const rawIO = false

func readNonblocking(uintptr, []byte) (int, error)  { return 0, syscall.EINVAL }
func writeNonblocking(uintptr, []byte) (int, error) { return 0, syscall.EINVAL }

type readvBuffers struct{}

func (*readvBuffers) set(_, _ []byte) {}
func (*readvBuffers) clear()          {}

func readvNonblocking(uintptr, *readvBuffers) (int, error) { return 0, syscall.EINVAL }
