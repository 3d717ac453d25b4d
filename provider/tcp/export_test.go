package tcp

import (
	"sync"
	"time"

	"github.com/godirect/nd"
)

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

// LinksInSet returns how many of p's links are in its readiness set.
func LinksInSet(p *Provider) int {
	pr := p.t.progress
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.links.Live()
}

// LinkInfo is what a test sees of a link: its socket's congestion control
// and bound on unacknowledged data (or the error reading it), whether its
// reader's buffer may grow, and the buffer's size now.
type LinkInfo struct {
	Active         bool
	Congestion     string
	UserTimeout    time.Duration
	UserTimeoutErr error
	Grows          bool
	BufferSize     func() int
}

// WatchLinks records every link made until the test ends; the returned
// function lists them.
func WatchLinks(t interface{ Cleanup(func()) }) func() []LinkInfo {
	var mu sync.Mutex
	var links []*link
	made := func(l *link) {
		mu.Lock()
		links = append(links, l)
		mu.Unlock()
	}
	installSeams(t, func(s *testSeams) { s.onLinkMade = made })
	return func() []LinkInfo {
		mu.Lock()
		defer mu.Unlock()
		var out []LinkInfo
		for _, l := range links {
			li := LinkInfo{Active: l.active, Grows: l.rxGrows}
			li.Congestion, _ = connCongestion(l.conn)
			li.UserTimeout, li.UserTimeoutErr = connUserTimeout(l.conn)
			li.BufferSize = func() int {
				l.rxMu.Lock()
				defer l.rxMu.Unlock()
				return l.br.Size()
			}
			out = append(out, li)
		}
		return out
	}
}

// KeepFirstBuffer has the links made until the test ends keep their
// reader's first buffer, as under BBR: long payloads are read straight
// into place.
func KeepFirstBuffer(t interface{ Cleanup(func()) }) {
	installSeams(t, func(s *testSeams) { s.keepFirst = true })
}

// PollsMoveBytes reports whether the application's polls move the links'
// inbound bytes (a readiness set of the kernel's: Linux); elsewhere each
// link's reader goroutine does.
const PollsMoveBytes = !perLink

// RawIO reports whether sockets are written with raw non-blocking calls
// (Unix): only then do small Sends go out on the posting goroutine.
const RawIO = rawIO

// CloseAsWriterStarts makes every link whose writer starts until the test
// ends close with status before the writer takes its first batch, as a
// Disconnect (nd.Success) or a local failure (any other status, which
// sends a Terminate) right after CompleteConnect would.
func CloseAsWriterStarts(t interface{ Cleanup(func()) }, status nd.Status) {
	installSeams(t, func(s *testSeams) { s.onWriterStarts = func(l *link) { l.Close(status) } })
}

// SetRTRNudge sets the wait before the first ready-to-receive nudge and how
// many are sent, until the test ends.
func SetRTRNudge(t interface{ Cleanup(func()) }, first time.Duration, n int) {
	oldFirst, oldN := rtrNudgeFirst, rtrNudges
	rtrNudgeFirst, rtrNudges = first, n
	t.Cleanup(func() { rtrNudgeFirst, rtrNudges = oldFirst, oldN })
}

// HoldClosing has the writer of every link made until the test ends call
// hold (with the link's side) before it sends the link's last frames and
// closes its side of the stream.
func HoldClosing(t interface{ Cleanup(func()) }, hold func(active bool)) {
	installSeams(t, func(s *testSeams) { s.onClosing = hold })
}

// SetRequestOrderGrace sets how long a connection request waits for the one
// accepted before it, until the test ends.
func SetRequestOrderGrace(t interface{ Cleanup(func()) }, d time.Duration) {
	old := requestOrderGrace
	requestOrderGrace = d
	t.Cleanup(func() { requestOrderGrace = old })
}

// OnFirstInlineBatch runs f once, on the first send of the test's links
// that goes out on the posting goroutine (inline), right after that send
// took its batch of queued jobs. f learns through held whether a response
// is held back for the application's answer.
func OnFirstInlineBatch(t interface{ Cleanup(func()) }, f func(held func() bool)) {
	var once sync.Once
	hook := func(l *link, inline bool) {
		if inline {
			once.Do(func() { f(l.txDeferred.Load) })
		}
	}
	installSeams(t, func(s *testSeams) { s.onBatchTaken = hook })
}

// SetMonotime replaces the clock of the receive pause (monotime) with now
// until the test ends.
func SetMonotime(t interface{ Cleanup(func()) }, now func() int64) {
	old := monotime
	monotime = now
	t.Cleanup(func() { monotime = old })
}

// ReadAfter returns p's receive pause: 0 while no direct link is inside an
// inbound message, else the time (monotime) before which application polls
// do not read.
func ReadAfter(p *Provider) int64 { return p.t.progress.readAfter.Load() }

// HoldReadySet takes p's readiness set's lock, which application polls of
// a direct link do not take, so that the progress goroutine cannot move
// the links' bytes until the returned function releases it.
func HoldReadySet(p *Provider) (release func()) {
	p.t.progress.mu.Lock()
	return p.t.progress.mu.Unlock
}

// ReceivePauseMax is the longest receive pause.
const ReceivePauseMax = receivePauseMax

// ReceivePause is the receive pause in multiples of the empty poll.
const ReceivePause = receivePause

// SetReplyDelivery sets, until the test ends, how a passive link without a
// ready-to-receive frame learns that its MPA reply was delivered: unacked
// stands in for the socket's count of unacknowledged bytes (nil: the
// socket's own), and settle and blind replace replySettle and replyBlind.
func SetReplyDelivery(t interface{ Cleanup(func()) }, unacked func() (int, error), settle, blind time.Duration) {
	oldSettle, oldBlind := replySettle, replyBlind
	installSeams(t, func(s *testSeams) { s.onUnacked = unacked })
	replySettle, replyBlind = settle, blind
	t.Cleanup(func() { replySettle, replyBlind = oldSettle, oldBlind })
}

// ErrUnackedUnknown is what a socket that does not report unacknowledged
// bytes answers.
var ErrUnackedUnknown = errUnackedUnknown
