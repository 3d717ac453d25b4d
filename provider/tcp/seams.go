package tcp

import "sync/atomic"

// linkSeams is what a test may install to watch and steer links at fixed
// points; its implementation lives with the tests (export_test.go).
// Production installs none. A link takes the seams installed when it is
// made (so a test's seams never reach a later test's links); batchTaken is
// looked up at each batch, since a test installs it while its links run.
type linkSeams interface {
	// linkMade sees every link newLink made.
	linkMade(l *link)
	// keepFirstBuffer keeps the link's reader on its first buffer, for
	// the direct reads of long payloads.
	keepFirstBuffer() bool
	// writerStarts runs on the link's writer goroutine before its first
	// batch.
	writerStarts(l *link)
	// batchTaken runs when a send took its batch of jobs (inline: on the
	// posting goroutine).
	batchTaken(l *link, inline bool)
	// closing runs on the writer before it sends the link's last frames
	// and closes its side of the stream.
	closing(active bool)
	// unacked stands in for the socket's count of unacknowledged bytes
	// when ok.
	unacked() (n int, err error, ok bool)
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
