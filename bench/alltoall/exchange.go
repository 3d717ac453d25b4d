package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/godirect/nd/mesh"
)

// params are what every rank of one run agrees on.
type params struct {
	Rank int           // this rank, 0..P-1
	P    int           // ranks in the run
	M    int           // bytes each rank sends to each other rank per exchange
	Reps int           // exchanges
	Spin time.Duration // nd: how long an idle rank polls its queue before it waits in Notify; < 0 polls only
	// SendsTimed (nd): an exchange also waits for its Sends' completions,
	// which provider/tcp reports once the peer confirmed the data placed,
	// instead of leaving them to the exchange after next.
	SendsTimed bool

	// tamper, when not nil, may change what this rank sends to rank to in
	// exchange k, after the pattern was written (tests).
	tamper func(to, k int, send []byte)
}

func (p params) validate() error {
	switch {
	case p.P < 2:
		return fmt.Errorf("need at least 2 ranks, not %d", p.P)
	case p.Rank < 0 || p.Rank >= p.P:
		return fmt.Errorf("rank %d outside 0..%d", p.Rank, p.P-1)
	case p.M < 1:
		return fmt.Errorf("need at least 1 byte per message, not %d", p.M)
	case p.Reps < 1:
		return fmt.Errorf("%d repetitions: need at least 1", p.Reps)
	}
	return nil
}

// rank is one process of the exchange in one of the two modes.
//
// The protocol, the same in both modes: every rank is connected to every
// other (mode nd: a mesh built through the job's key-value space; mode go:
// rank i dials every rank above it, at the address it published there, and
// the dialing side's first message is a hello). Then come Reps+1 barrier
// rounds. Mode nd's is a dissemination barrier (nd.go): every rank posts
// what it will receive, then in stage j sends to rank me+2^j and waits for
// rank me-2^j, so that the ranks leave it about at once. Mode go's goes
// through rank 0: every other rank sends ready(k) to rank 0 and waits for
// go(k); rank 0 waits for every ready(k) and answers go(k). After round
// k < Reps every rank sends M
// bytes to every other rank, in rank-rotated order, and waits until all its
// sends and receives completed; that is the timed exchange. The last round
// (k = Reps) carries no exchange: after it no rank has anything in flight
// toward another.
type rank interface {
	// Run connects to the job's other ranks, runs the exchanges, checks
	// every byte received, and returns each exchange's duration as this
	// rank saw it: from its release from the barrier until its last send
	// and receive completed.
	Run(ctx context.Context, job mesh.Job) (result, error)
	// Close releases everything the rank holds; it is idempotent.
	Close() error
}

// result is what a rank's Run measured.
type result struct {
	times []time.Duration
	// released is when the rank left the first barrier (the zero Time
	// where the mode does not say).
	released time.Time
	// silentSends counts the exchanges' Sends posted silent (mode nd).
	silentSends int
}

// Control messages are ctrlSize bytes: the round (helloRound for the
// hello) and the sender's rank, big-endian.
const (
	ctrlSize   = 8
	helloRound = 0xFFFFFFFF
)

func putCtrl(b []byte, round, sender int) {
	binary.BigEndian.PutUint32(b, uint32(round))
	binary.BigEndian.PutUint32(b[4:], uint32(sender))
}

func checkCtrl(b []byte, round, sender int) error {
	gotRound, gotSender := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if gotRound != uint32(round) || gotSender != uint32(sender) {
		return fmt.Errorf("control message (round %#x, rank %d), want (round %#x, rank %d)", gotRound, gotSender, uint32(round), sender)
	}
	return nil
}

// The bytes rank s sends to rank d in exchange k: 64-bit words, word j
// being seed(s, d, k) xor (j+1) times an odd constant, little-endian, so
// that every (sender, receiver, exchange, offset) gives its own word.
func patternSeed(s, d, k int) uint64 {
	x := uint64(s)<<42 ^ uint64(d)<<21 ^ uint64(k)
	// splitmix64's finaliser spreads the three small numbers over all bits.
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

func patternWord(seed uint64, j int) uint64 { return seed ^ uint64(j+1)*0x9E3779B97F4A7C15 }

// fillPattern writes the pattern of (s, d, k) into buf, or its bitwise
// complement when invert, so that a receive buffer prepared that way
// cannot pass the check in any byte the transfer did not write.
func fillPattern(buf []byte, s, d, k int, invert bool) {
	seed := patternSeed(s, d, k)
	var mask uint64
	if invert {
		mask = ^uint64(0)
	}
	j := 0
	for ; 8*j+8 <= len(buf); j++ {
		binary.LittleEndian.PutUint64(buf[8*j:], patternWord(seed, j)^mask)
	}
	if 8*j < len(buf) {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], patternWord(seed, j)^mask)
		copy(buf[8*j:], tail[:])
	}
}

// errCorrupt is wrapped by every pattern mismatch.
var errCorrupt = errors.New("received bytes differ from what was sent")

// checkPattern reports the first byte of buf that differs from the pattern
// of (s, d, k).
func checkPattern(buf []byte, s, d, k int) error {
	seed := patternSeed(s, d, k)
	var want [8]byte
	for j := 0; 8*j < len(buf); j++ {
		w := patternWord(seed, j)
		got := buf[8*j : min(8*j+8, len(buf))]
		if len(got) == 8 && binary.LittleEndian.Uint64(got) == w {
			continue
		}
		binary.LittleEndian.PutUint64(want[:], w)
		for i := range got {
			if got[i] != want[i] {
				return fmt.Errorf("%w: from rank %d to rank %d, exchange %d, offset %d: %#02x, want %#02x",
					errCorrupt, s, d, k, 8*j+i, got[i], want[i])
			}
		}
	}
	return nil
}
