package tcp

// testSeams is the tests' linkSeams: each field, when set, is what its
// seam does; a nil one does nothing.
type testSeams struct {
	onLinkMade     func(*link)
	keepFirst      bool
	onWriterStarts func(*link)
	onBatchTaken   func(l *link, inline bool)
	onClosing      func(active bool)
	onUnacked      func() (int, error)
}

func (s *testSeams) linkMade(l *link) {
	if s.onLinkMade != nil {
		s.onLinkMade(l)
	}
}

func (s *testSeams) keepFirstBuffer() bool { return s.keepFirst }

func (s *testSeams) writerStarts(l *link) {
	if s.onWriterStarts != nil {
		s.onWriterStarts(l)
	}
}

func (s *testSeams) batchTaken(l *link, inline bool) {
	if s.onBatchTaken != nil {
		s.onBatchTaken(l, inline)
	}
}

func (s *testSeams) closing(active bool) {
	if s.onClosing != nil {
		s.onClosing(active)
	}
}

func (s *testSeams) unacked() (int, error, bool) {
	if s.onUnacked == nil {
		return 0, nil, false
	}
	n, err := s.onUnacked()
	return n, err, true
}

// installSeams installs, until the test ends, a copy of the seams
// installed now (or none) with set applied: a test's seams add to those of
// the helpers it called before, and the cleanup puts back what was there.
func installSeams(t interface{ Cleanup(func()) }, set func(*testSeams)) {
	old := installedSeams.Load()
	s := &testSeams{}
	if old != nil {
		*s = *(*old).(*testSeams)
	}
	set(s)
	var ls linkSeams = s
	installedSeams.Store(&ls)
	t.Cleanup(func() { installedSeams.Store(old) })
}
