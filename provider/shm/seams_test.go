//go:build linux || windows || darwin || freebsd

package shm

// testSeams is the tests' linkSeams: each field, when set, is what its
// seam does; a nil one does nothing.
type testSeams struct {
	noProbe    bool
	onReader   func(*link) bool
	onWatch    func(*link)
	onWatchdog func()
	onUnread   func(*link)
}

func (s *testSeams) probeOff() bool { return s.noProbe }

func (s *testSeams) holdReader(l *link) bool { return s.onReader != nil && s.onReader(l) }

func (s *testSeams) watcherReads(l *link) {
	if s.onWatch != nil {
		s.onWatch(l)
	}
}

func (s *testSeams) watchdogLooks() {
	if s.onWatchdog != nil {
		s.onWatchdog()
	}
}

func (s *testSeams) unreadWait(l *link) {
	if s.onUnread != nil {
		s.onUnread(l)
	}
}

// updateSeams installs a copy of the seams installed now (or none) with
// set applied, and returns the function that puts back what was installed
// before (tests undo them in reverse, as t.Cleanup runs).
func updateSeams(set func(*testSeams)) (restore func()) {
	old := installedSeams.Load()
	s := &testSeams{}
	if old != nil {
		*s = *(*old).(*testSeams)
	}
	set(s)
	var ls linkSeams = s
	installedSeams.Store(&ls)
	return func() { installedSeams.Store(old) }
}
