//go:build linux || windows || darwin || freebsd

package shm

import "sync/atomic"

// The points where tests stop or observe a link, all in one place. Only
// test files set them (export_test.go for the external tests); in a
// program they stay nil (false), and each costs one atomic load where it
// is checked.
var (
	// testHookWatch, if set, is called by every watcher before it reads a
	// setup message.
	testHookWatch atomic.Pointer[func(*link)]
	// testHookWatchdog, if set, is called when a watchdog looks, before
	// it looks.
	testHookWatchdog atomic.Pointer[func()]
	// testHookUnread, if set, is called when cleanup starts waiting for
	// the peer to be done with Sends by rendezvous (waitUnread).
	testHookUnread atomic.Pointer[func(*link)]
	// testHookReader, if set, is called by every poller before it
	// consumes a link's ring; true leaves the ring alone this time (tests
	// stop a target's consumer with it).
	testHookReader atomic.Pointer[func(*link) bool]
	// testProbeOff makes every connection's probe of its peer fail, as if
	// the kernel refused process_vm_readv (tests of the ring fallback).
	testProbeOff atomic.Bool
)
