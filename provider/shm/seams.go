//go:build linux || windows || darwin || freebsd

package shm

import "sync/atomic"

// linkSeams is what a test may install to watch and steer links at fixed
// points; its implementation lives with the tests (seams_test.go).
// Production installs none: each point then costs one atomic load. The
// seams are looked up at each point, since tests install them while links
// run.
type linkSeams interface {
	// probeOff makes a connection's probe of its peer fail, as if the
	// kernel refused process_vm_readv (tests of the ring fallback).
	probeOff() bool
	// holdReader runs before a poller consumes l's ring; true leaves the
	// ring alone this time (tests stop a target's consumer with it).
	holdReader(l *link) bool
	// watcherReads runs on l's watcher before it reads a setup message.
	watcherReads(l *link)
	// watchdogLooks runs when a watchdog looks, before it looks.
	watchdogLooks()
	// unreadWait runs when l's cleanup starts waiting for the peer to be
	// done with Sends by rendezvous.
	unreadWait(l *link)
}

// installedSeams holds the seams a test installed; nil in production.
var installedSeams atomic.Pointer[linkSeams]

// currentSeams returns the installed seams, or nil.
func currentSeams() linkSeams {
	if p := installedSeams.Load(); p != nil {
		return *p
	}
	return nil
}

// probeOffForTest reports whether a test turned the peer probe off.
func probeOffForTest() bool {
	s := currentSeams()
	return s != nil && s.probeOff()
}
