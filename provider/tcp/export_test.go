package tcp

import "time"

// PartialInlineWrites returns how many inline sends so far the socket took
// only in part, leaving the rest to the writer.
func PartialInlineWrites() uint64 { return partialInlineWrites.Load() }

// SetDeferLimit sets how long a held-back response waits at most, until
// the test ends.
func SetDeferLimit(t interface{ Cleanup(func()) }, d time.Duration) {
	old := deferLimit
	deferLimit = d
	t.Cleanup(func() { deferLimit = old })
}

// ParkedReaders returns how many readers of p's links wait in the network
// poller.
func ParkedReaders(p *Provider) int {
	parked.mu.Lock()
	defer parked.mu.Unlock()
	n := 0
	for _, l := range parked.byID {
		if l.t == p.t {
			n++
		}
	}
	return n
}
