package verify

import (
	"fmt"
	"time"

	"github.com/godirect/nd/internal/leakcount"
)

// usage is what a connection may leave behind: the goroutines running the
// providers' or the engine's code, and the process's sockets (-1 where
// the platform does not tell).
type usage struct {
	goroutines int
	sockets    int
}

func (u usage) String() string {
	if u.sockets < 0 {
		return fmt.Sprintf("%d provider goroutines", u.goroutines)
	}
	return fmt.Sprintf("%d provider goroutines, %d sockets", u.goroutines, u.sockets)
}

// measure returns the process's usage now.
func measure() usage {
	return usage{goroutines: len(leakcount.ProviderGoroutines()), sockets: countSockets()}
}

// settle waits, at most d, until the usage is back to base or below, and
// returns the last measure and whether it got there.
func settle(base usage, d time.Duration) (usage, bool) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		u := measure()
		if u.goroutines <= base.goroutines && u.sockets <= base.sockets {
			return u, true
		}
		if time.Now().After(deadline) {
			return u, false
		}
		<-tick.C
	}
}
