package loop_test

import (
	"testing"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/loop"
)

// FuzzLifecycle runs fuzzed lifecycle programs: (operation, goroutine) byte
// pairs of posts, polls, Notify waits and closes on a connected pair. Every
// request a posting call accepted must complete exactly once and every call
// must return what the closes before it decide.
func FuzzLifecycle(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 9, 2, 34, 0})                             // a Send and a Receive, a poll, the active endpoint's close
	f.Add([]byte{0, 0, 2, 1, 3, 2, 18, 0, 19, 1, 10, 2, 11, 0})        // a Read and a Write, the adapter and a queue closed at once
	f.Add([]byte{5, 0, 6, 1, 13, 2, 14, 0, 21, 1, 26, 2, 28, 0, 1, 1}) // passive traffic, Notify waits, closes on both sides
	p := loop.New()
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 512 {
			prog = prog[:512]
		}
		ndtest.RunLifecycleProgram(t, p, prog)
	})
}
