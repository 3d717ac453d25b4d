//go:build race

package tcp

import "sync"

// Under the race detector, the ordering that the peer's TCP stack provides
// (data placed, then a response sent, then a completion delivered) is
// invisible: the two ends may be goroutines of one process synchronizing
// only through the kernel. raceRelease after touching application memory
// and raceAcquire before reporting to the engine make that order visible.
var raceFence sync.Mutex

func raceRelease() { raceFence.Lock(); raceFence.Unlock() }
func raceAcquire() { raceFence.Lock(); raceFence.Unlock() }
