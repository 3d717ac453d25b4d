//go:build linux || windows || darwin || freebsd

package shm

// Hooks for the external tests (package shm_test), which also run in the
// child process of the two-process tests.

// RendezvousCounts returns the Sends p's connections sent by rendezvous
// and those they pulled from their peers.
func RendezvousCounts(p *Provider) (sent, pulled uint64) {
	return p.t.rvSent.Load(), p.t.rvPulled.Load()
}

// MappedCount returns the Sends by rendezvous p's connections copied
// through their mappings of the sender's segments (counted in pulled too).
func MappedCount(p *Provider) uint64 { return p.t.rvMapped.Load() }

// SetProbeOff makes every connection's probe of its peer fail (true) or
// work again, as if the kernel refused process_vm_readv.
func SetProbeOff(off bool) { updateSeams(func(s *testSeams) { s.noProbe = off }) }

// SetWatchdogHook makes every watchdog of the process call f when it looks,
// before it looks; nil removes it.
func SetWatchdogHook(f func()) {
	updateSeams(func(s *testSeams) { s.onWatchdog = f })
}

// ProcessMemoryError says why this process cannot copy against another's
// memory (no one-sided copy by address, no Send by rendezvous: ring mode),
// or nil where it can.
func ProcessMemoryError() error { return selfProbe() }

// SpinUntil polls until f reports true or 10 s pass, and reports which.
var SpinUntil = spinUntil
