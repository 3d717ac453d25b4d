package shm

import "time"

// The provider's tuning constants, each with the reason for its value.
// Measurements behind them are in docs/shm-transport.md. The defaults of
// Config (ring size, Spin, SendThreshold, timeouts) are in provider.go.

// The readiness set (progress.go).
const (
	// directPollLinks: while a provider has at most this many links, every
	// poll reads each link's ring and none is ever armed while the
	// application polls: a look at an idle ring is one load from a cache
	// line the peer has not touched, cheaper than anything that would
	// find the ready ones, and a link that is never armed never makes its
	// peer ring a doorbell. Four covers one connection in one process (two
	// links) with room to spare.
	directPollLinks = 4
	// readyBatch is how many rung doorbells one look at the epoll
	// instance takes at most: enough to drain a burst over many
	// connections in few passes (each pass also visits every hot link),
	// small enough to keep per provider.
	readyBatch = 256
	// epollLooks: an application poll asks the kernel which armed links
	// rang only once the polls since it last asked looked at about this
	// many rings (a pass counts one look, and one per hot link it
	// visits): the looks between two asks then cost about what an ask
	// (a system call, a few hundred ns on a virtual machine) does. An
	// empty poll with no link hot costs a counter, not a system call, and
	// an armed link that rang waits at most this many looks, well under a
	// microsecond of a polling application, however many links are hot.
	// Looks are counted, not passes: a pass over many hot links is long,
	// and counting passes left a rung link waiting that many long passes.
	epollLooks = 32
	// armIdlePasses: a hot link is armed once this many passes in a row
	// found its ring empty. Staying hot costs a look per pass; being armed
	// costs a doorbell (a system call of the peer's, and a look at the
	// epoll instance here) when the next record comes. So a link stays hot
	// while its idle looks have cost less than a doorbell would, about
	// this many looks: never more than twice the cheaper of the two, as
	// in renting skis until their price would have bought them. A lone
	// busy link stays hot through the gaps of a ping-pong, links that keep
	// traffic across rounds stay hot through a round, and each link left
	// idle after a burst costs this many looks before it is armed. (A
	// budget shared by the hot links, 4096 looks over len(hot), kept the
	// links of a ping-pong over 1000 connections hot for half a
	// millisecond each, so that about 55 were hot at any time and every
	// pass visited all of them.)
	armIdlePasses = 32
	// pollerGone is how long the application may go without polling
	// before the progress goroutine takes over its links: long enough
	// that an application polling in a loop never sees it (it only looks
	// at the poll flag that often), short enough that a peer's request of an
	// application that stopped polling is served promptly.
	pollerGone = 100 * time.Microsecond
	// recordsPerPass bounds the records one pass of the set takes from
	// one link: a peer that publishes without pause must not keep the
	// set's poller from the other links; a ring's worth of small records
	// takes a few passes.
	recordsPerPass = 256
)

// A link's bookkeeping (link.go).
const (
	// linkRequestsReserved is the room a link's queue of unacknowledged
	// requests (and the list of those an Ack completes) gets when the
	// link is made, so that the first requests over a connection
	// allocate nothing: a few hundred bytes a link, and a connection's
	// usual outstanding requests fit.
	linkRequestsReserved = 16
)

// Acknowledgments (rx.go).
const (
	// ackEvery bounds the inbound messages handled before an Ack goes out
	// even while records keep arriving: the sender's queue entries free
	// up in steps of a few, not all at the end of a burst.
	ackEvery = 16
	// ackIdlePolls is how many passes in a row must find the inbound ring
	// empty before the Ack held for quiet Sends goes out (consumeLocked):
	// their sender does not wait for it, and the Ack may ride with the
	// application's answer instead.
	ackIdlePolls = 32
	// ackBytes bounds the bytes pulled by rendezvous before an Ack goes
	// out even while records keep arriving, so that the Sends of huge
	// messages do not wait for ackEvery of them. It is large: every Ack
	// may wake the peer, and on two busy cores such wake-ups cost more
	// than the copies between.
	ackBytes = 16 << 20
)

// receiveNowMax bounds the Sends that the engine places under its lock
// (Endpoint.ReceiveNow): one engine call instead of three, for a copy
// short enough not to hold the endpoint's lock long.
const receiveNowMax = 4 << 10

// maxSnapKept bounds the bytes of snapshot buffers (protectReadResponses)
// kept for reuse, per ring byte: reuse avoids allocating on every
// overlapping Read, the bound keeps a burst from pinning memory for good.
const maxSnapKept = 4

// Split pulls (rx.go): a large Send by rendezvous is copied by the poller
// and the provider's pull helper at once, on two cores.
const (
	// splitMin is the smallest pull split: below it, waking the helper
	// costs about what its share of the copy saves.
	splitMin = 512 << 10
	// The helper's share, in 1/256 of the bytes: it starts at half the
	// copy, and moves by shareStep per pull between 1/16 and 1/2, after
	// whether the helper finished before the poller.
	shareMin   = 16
	shareMax   = 128
	shareStep  = 4
	shareStart = 64
)

// maxPeerSegments bounds the AllocateMemory segments a peer may pass: each
// is a mapping of this process's, and a hostile peer must not exhaust them.
const maxPeerSegments = 1024

// acceptBackoff is how long a listener out of descriptors, without its
// spare one, waits before it accepts again: the waiting connections stay
// queued, and a loop without a pause would hold a processor.
const acceptBackoff = time.Millisecond
