//go:build !unix

package tcp

import "syscall"

// spinSupported: without Unix descriptors the reader always blocks in the
// runtime's network poller (Config.Spin is ignored).
const spinSupported = false

func readNonblocking(uintptr, []byte) (int, error)  { return 0, syscall.EINVAL }
func peekNonblocking(uintptr, []byte) (int, error)  { return 0, syscall.EINVAL }
func writeNonblocking(uintptr, []byte) (int, error) { return 0, syscall.EINVAL }
