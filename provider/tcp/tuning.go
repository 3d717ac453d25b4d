package tcp

import "time"

// The provider's tuning constants, each with the reason for its value.
// Measurements behind them are in docs/tcp-transport.md.

// The reader's buffer. Headers and the FPDUs that fit in it come through
// it; the payloads of longer ones are read straight into place.
const (
	// placeMin and placeSpill: an application's direct poll (pollDirect)
	// reads a payload of at least placeMin bytes straight into place,
	// and what follows it into the first placeSpill bytes of the buffer
	// in the same call (readv on Linux; rxBuffer.Read), so that the next
	// FPDU's header comes with it; its fills take at most placeSpill
	// bytes, so that a payload stays in the socket until it can be
	// placed. Such a poll reads the bytes as they arrive, and each one
	// copied through the buffer is time the application waits. The
	// progress goroutine keeps reading through the buffer, which grows:
	// placing there too slowed an application that wakes in Notify for
	// each message. Under BBR, where the buffer does not grow, payloads
	// are read into place already (two reads an FPDU), and those links
	// read as before. Figures: docs/tcp-transport.md, "Data path".
	placeMin   = 16 << 10
	placeSpill = 16 << 10
	// rxBufferSize is a link's first buffer: it holds a 4 KiB Send whole,
	// read at once.
	rxBufferSize = 16 << 10
	// rxBulkBufferSize is the buffer once an FPDU longer than
	// rxBufferSize arrives, outside a direct poll, on a link whose
	// congestion control is not BBR (bulkBufferSuits): every FPDU fits
	// and one read takes several, for one more copy of each payload;
	// under BBR the larger reads were slower.
	rxBulkBufferSize = 256 << 10
)

// rawMax: non-blocking reads and writes shorter than this go through
// syscall.RawSyscall, longer ones through syscall.Syscall. A goroutine
// that makes Syscall calls back to back (a poll loop) has its processor
// taken by the runtime's monitor and handed back, a context switch each
// way on a process confined to one core; a call on a non-blocking
// descriptor that copies less than this is over in microseconds, so
// holding the processor through it costs nobody anything. A longer copy
// still lets the runtime run other goroutines meanwhile.
const rawMax = 64 << 10

// The readiness set (progress.go).
const (
	// directPollLinks: while a provider has at most this many links, an
	// application poll reads each of them rather than asking the kernel
	// which are ready: a read that finds nothing costs about what
	// epoll_wait does, and the one that finds bytes is already made, so a
	// process with one connection keeps the latency of a read per poll.
	directPollLinks = 1
	// receivePause: while a direct link is inside an inbound Send (its
	// Receive partly filled, the rest on its way), a poll whose read
	// found nothing stops the application's polls from reading for
	// receivePause times as long as that poll took. A read holds the
	// socket's lock, which the kernel takes to queue an arriving segment
	// and to acknowledge it: polls that read back to back hold it most of
	// the time, and the segments wait for it; under BBR, which paces the
	// sender by the rate the acknowledgments show, that slows the whole
	// transfer. Four times the poll read fastest (docs/tcp-transport.md).
	// Outside a message nothing pauses: a round trip's answer is read at
	// the first poll after it arrives.
	receivePause = 4
	// receivePauseMax bounds the pause: a poll that took long was
	// descheduled, not slow to read.
	receivePauseMax = 20 * time.Microsecond
	// readyBatch is how many ready links one poll of the set takes at
	// most: enough to drain a burst over many connections in few system
	// calls, small enough to sit on the stack.
	readyBatch = 64
	// pollerGone is how long the application may go without polling
	// before the progress goroutine takes over its links: long enough
	// that an application polling in a loop never sees it (it only looks
	// at the poll flag that often), short enough that a peer's RDMA Read of an
	// application that stopped polling is served promptly.
	pollerGone = 100 * time.Microsecond
)

// deferLimit bounds how long a response deferTx held back waits: the
// peer's request waits for it. An application that answers does so within
// microseconds; one that polls another endpoint meanwhile must not hold
// the peer for long. A variable for tests.
var deferLimit = 20 * time.Microsecond

// silentDelay is how long silent Sends and Writes wait for a confirmation
// that nothing else asks for: they need it only to free their queue
// entries and to catch a failure.
const silentDelay = time.Millisecond

// The writer (tx.go).
const (
	maxIovecs     = 512      // iovecs per writev: the kernel's UIO_MAXIOV is 1024
	scratchSize   = 32 << 10 // header and trailer bytes per writev: 512 FPDUs' worth
	maxBatchBytes = 4 << 20  // payload bytes per writev: a few socket buffers' worth
	fpduScratch   = 64       // scratch bytes that one FPDU header and trailer need at most

	// A batch of at most inlineJobs jobs and inlineBytes payload bytes is
	// sent on the posting goroutine, copied into one buffer and written
	// with one non-blocking write: a copy that small costs less than
	// waking the writer goroutine.
	inlineJobs  = 32
	inlineBytes = 8 << 10
)

// An accept loop out of descriptors or memory waits between attempts,
// from acceptBackoffMin doubling up to acceptBackoffMax: the failure lasts
// until some connection closes, and retrying at once would spin.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// requestOrderGrace bounds how long a connection's request waits for the
// request of the connection accepted before it (portListener.serve): a
// client that opens several connections in a row sends each request right
// after its connect, within a millisecond even on a loaded host, so the
// order holds; a connection whose request never comes holds the later
// ones back no longer than this.
var requestOrderGrace = 100 * time.Millisecond
