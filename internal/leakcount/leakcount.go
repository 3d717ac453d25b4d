// Package leakcount finds what a connection may leave behind in a
// process: the goroutines running the code of godirect's providers and
// internal packages. ndtest's leak checks and `nd verify` count them
// before a connection and after its end.
package leakcount

import (
	"bytes"
	"runtime"
)

// godirectPackages are the packages whose goroutines count: a provider's
// or the engine's goroutine left behind is a leak, the caller's own are not.
var godirectPackages = [][]byte{
	[]byte("github.com/godirect/nd/provider/"),
	[]byte("github.com/godirect/nd/internal/"),
}

// ProviderGoroutines returns the stacks of the goroutines, other than the
// caller's, that run provider or internal code. Safe for concurrent use.
func ProviderGoroutines() [][]byte { return Goroutines(godirectPackages...) }

// Goroutines returns the stacks of the goroutines, other than the caller's,
// in which any of the markers appears (a package path and a dot names
// that package's functions). Safe for concurrent use.
func Goroutines(markers ...[]byte) [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out [][]byte
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // the caller's
		}
		for _, m := range markers {
			if bytes.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
