package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/mesh"
)

// ndProtocol is the ND protocol number the ranks listen and connect with.
const ndProtocol = nd.ProtocolTCP

// ndDepth is each endpoint's queue depth: at most two control messages and
// two exchanges' messages are outstanding per direction.
const ndDepth = 4

// The ranks post no Read: the outbound read limit is 0, so that the peer's
// inbound read limit is left whole to provider/tcp's confirmation Reads
// (two of them: a control message's and the exchange's, one for each
// rather than one after the other).
var ndLimits = nd.EndpointLimits{
	InboundEntries: ndDepth, OutboundEntries: ndDepth,
	InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 1, OutboundReadLimit: 0,
}

// The kinds of request a rank posts; ndRank.count counts their completions.
type opKind int

const (
	dataSend opKind = iota
	dataRecv
	ctrlSend
	ctrlRecv
	numKinds
)

func (k opKind) String() string {
	return [...]string{"Send", "Receive", "control Send", "control Receive"}[k]
}

// ndRank is a rank over godirect: a mesh (package mesh) of endpoints to
// every other rank, shm to the ranks of its host and tcp to the others,
// every endpoint of a provider on that provider's one completion queue.
type ndRank struct {
	prm params
	cfg mesh.Config
	m   *mesh.Mesh

	peers       []*ndPeer // by rank; nil at this rank
	mu          sync.Mutex
	ops         map[*nd.Result]ndOp
	count       [numKinds]int
	silentSends int // the exchanges' Sends posted silent
	out         []*nd.Result

	// released is when this rank left the first barrier: the mesh is
	// connected and every rank reached it.
	released time.Time

	closeOnce sync.Once
}

// ndPeer is this rank's connection to one other rank, with one registered
// buffer holding the exchanges' send and receive buffers and the control
// messages' ones.
//
// Exchange k sends from send buffer k&1, as MPI's eager protocol sends
// from a buffer of its own: the exchange is over once its data arrived,
// and its Send completes meanwhile; exchange k+2 waits for that completion
// before it writes the buffer again.
type ndPeer struct {
	rank int
	ep   nd.Endpoint
	mr   nd.MemoryRegion

	sendBuf [2][]byte
	sendSGL [2][]nd.SGE
	send    [2]nd.Result
	sending [2]bool // the Send from sendBuf[i] has not completed
	// ctrlSendRound is the round of the last control Send to this peer;
	// its completion also frees the buffer of a silent Send of the
	// exchange before it (silentSend), posted before it on the endpoint.
	ctrlSendRound       int
	recvBuf, ctrlOut    []byte
	recvSGL, ctrlOutSGL []nd.SGE

	// Two control Receives, for rounds k and k+1 (by the round's parity):
	// the next round's is posted while this round's waits.
	ctrlIn    [2][]byte
	ctrlInSGL [2][]nd.SGE
	ctrlRecv  [2]nd.Result
	ctrlRound [2]int // the round the control Receive expects

	recv, ctrlSend nd.Result

	// ctrlGot is one past the round of the last control message received
	// from this peer (they come in round order): its message of barrier
	// round k has arrived once ctrlGot > k.
	ctrlGot int
}

type ndOp struct {
	kind opKind
	peer *ndPeer
	slot int // a control Receive's, a Send's buffer
}

// newNDRank returns a rank that builds its mesh with cfg (its Limits and
// Prepare are the rank's own).
func newNDRank(prm params, cfg mesh.Config) (*ndRank, error) {
	if err := prm.validate(); err != nil {
		return nil, err
	}
	cfg.Limits = ndLimits
	cfg.Protocol = ndProtocol
	return &ndRank{prm: prm, cfg: cfg, out: make([]*nd.Result, 64)}, nil
}

// Close closes the mesh, which tears down every connection.
func (r *ndRank) Close() error {
	r.closeOnce.Do(func() {
		if r.m != nil {
			r.m.Close()
		}
	})
	return nil
}

func (r *ndRank) Run(ctx context.Context, job mesh.Job) (result, error) {
	if job.Size() != r.prm.P || job.Rank() != r.prm.Rank {
		return result{}, fmt.Errorf("the job says rank %d of %d, the parameters %d of %d", job.Rank(), job.Size(), r.prm.Rank, r.prm.P)
	}
	r.peers = make([]*ndPeer, r.prm.P)
	r.ops = make(map[*nd.Result]ndOp, 4*r.prm.P)
	cfg := r.cfg
	cfg.Prepare = r.prepare
	var err error
	if r.m, err = mesh.Build(ctx, job, &cfg); err != nil {
		return result{}, err
	}
	times := make([]time.Duration, 0, r.prm.Reps)
	for k := 0; k <= r.prm.Reps; k++ {
		d, err := r.round(ctx, k)
		if err != nil {
			return result{times: times}, fmt.Errorf("round %d: %w", k, err)
		}
		if k < r.prm.Reps {
			times = append(times, d)
		}
	}
	if r.count != [numKinds]int{} {
		return result{times: times}, fmt.Errorf("completions beyond the protocol's: %v", r.count)
	}
	return result{times: times, released: r.released, silentSends: r.silentSends}, r.goodbye(ctx)
}

// prepare registers the buffers for the connection to p before it exists
// and, at rank 0, posts the Receive of the peer's first ready, which may
// come as soon as the connection does.
func (r *ndRank) prepare(mp *mesh.Peer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := r.prm.M
	buf := make([]byte, 3*m+3*ctrlSize)
	mr, err := mp.Transport.Adapter.RegisterMemory(ctx, buf)
	if err != nil {
		return fmt.Errorf("RegisterMemory: %w", err)
	}
	c := buf[3*m:]
	p := &ndPeer{rank: mp.Rank, ep: mp.Endpoint, mr: mr,
		sendBuf: [2][]byte{buf[:m], buf[m : 2*m]}, recvBuf: buf[2*m : 3*m],
		ctrlOut: c[:ctrlSize], ctrlIn: [2][]byte{c[ctrlSize : 2*ctrlSize], c[2*ctrlSize : 3*ctrlSize]}}
	p.recvSGL = []nd.SGE{{Buffer: p.recvBuf, Region: mr}}
	p.ctrlOutSGL = []nd.SGE{{Buffer: p.ctrlOut, Region: mr}}
	r.mu.Lock()
	r.peers[p.rank] = p
	for i := range p.send {
		p.sendSGL[i] = []nd.SGE{{Buffer: p.sendBuf[i], Region: mr}}
		r.ops[&p.send[i]] = ndOp{kind: dataSend, peer: p, slot: i}
	}
	r.ops[&p.recv] = ndOp{kind: dataRecv, peer: p}
	r.ops[&p.ctrlSend] = ndOp{kind: ctrlSend, peer: p}
	for i := range p.ctrlRecv {
		p.ctrlInSGL[i] = []nd.SGE{{Buffer: p.ctrlIn[i], Region: mr}}
		r.ops[&p.ctrlRecv[i]] = ndOp{kind: ctrlRecv, peer: p, slot: i}
	}
	r.mu.Unlock()
	if !r.barrierSource(p.rank, 0) {
		return nil
	}
	// The peer's first barrier message may come as soon as the connection
	// does.
	return r.postCtrlRecv(p, 0)
}

// The barrier of a round before an exchange is a dissemination barrier:
// in stage j, rank me sends to rank me+2^j and waits for rank me-2^j (mod
// P), for stages 2^j < P. Every rank leaves it as soon as the last message
// it needs arrives, about at once: none is released a one-way latency
// before the others, as a central barrier's root is. The last round's
// (no exchange follows) goes through rank 0, which then disconnects
// (goodbye): every other rank sends it ready and waits for its go, so that
// rank 0 saw every message of the run arrive, and its go carried the
// confirmation of every ready, before it disconnects.

// barrierSource reports whether rank src sends to this rank in barrier
// round k.
func (r *ndRank) barrierSource(src, k int) bool {
	me, P := r.prm.Rank, r.prm.P
	if k == r.prm.Reps {
		return (me == 0) != (src == 0)
	}
	for d := 1; d < P; d <<= 1 {
		if (me-d+P)%P == src {
			return true
		}
	}
	return false
}

// barrier runs barrier round k; it returns the control Sends it posted.
func (r *ndRank) barrier(ctx context.Context, k int) (sends int, err error) {
	me, P := r.prm.Rank, r.prm.P
	if k == r.prm.Reps {
		return r.finalBarrier(ctx, k)
	}
	for d := 1; d < P; d <<= 1 {
		to, from := r.peers[(me+d)%P], r.peers[(me-d+P)%P]
		if err := r.sendCtrl(to, k); err != nil {
			return sends, err
		}
		sends++
		if err := r.wait(ctx, func() bool { return from.ctrlGot > k }); err != nil {
			return sends, fmt.Errorf("barrier %d, waiting for rank %d: %w", k, from.rank, err)
		}
	}
	return sends, nil
}

// finalBarrier is the last round's barrier, through rank 0.
func (r *ndRank) finalBarrier(ctx context.Context, k int) (sends int, err error) {
	if r.prm.Rank != 0 {
		p0 := r.peers[0]
		if err := r.sendCtrl(p0, k); err != nil {
			return 0, err
		}
		if err := r.wait(ctx, func() bool { return p0.ctrlGot > k }); err != nil {
			return 1, fmt.Errorf("waiting for go: %w", err)
		}
		return 1, nil
	}
	others := r.peers[1:]
	if err := r.wait(ctx, func() bool {
		for _, p := range others {
			if p.ctrlGot <= k {
				return false
			}
		}
		return true
	}); err != nil {
		return 0, fmt.Errorf("waiting for ready: %w", err)
	}
	for _, p := range others {
		if err := r.sendCtrl(p, k); err != nil {
			return sends, err
		}
		sends++
	}
	return sends, nil
}

func (r *ndRank) postCtrlRecv(p *ndPeer, round int) error {
	i := round & 1
	p.ctrlRound[i] = round
	if err := p.ep.Receive(&p.ctrlRecv[i], p.ctrlInSGL[i]); err != nil {
		return fmt.Errorf("control Receive from rank %d: %w", p.rank, err)
	}
	return nil
}

func (r *ndRank) sendCtrl(p *ndPeer, round int) error {
	putCtrl(p.ctrlOut, round, r.prm.Rank)
	p.ctrlSendRound = round
	if err := p.ep.Send(&p.ctrlSend, p.ctrlOutSGL, 0); err != nil {
		return fmt.Errorf("control Send to rank %d: %w", p.rank, err)
	}
	return nil
}

// round runs barrier round k and, for k < Reps, exchange k; it returns the
// exchange's duration.
func (r *ndRank) round(ctx context.Context, k int) (time.Duration, error) {
	me, P, exchange := r.prm.Rank, r.prm.P, k < r.prm.Reps
	slot := k & 1
	if !exchange {
		// The last round's barrier ends the run: rank 0 disconnects
		// once its go is confirmed. Every Send before it completes
		// first, so that each control Send here goes out with a
		// confirmation Read of its own, which rank 0's go answers: a
		// ready whose confirmation waited for a free read slot could
		// meet rank 0's disconnect instead, and be canceled.
		if err := r.wait(ctx, func() bool { return r.sendsFree(0) && r.sendsFree(1) }); err != nil {
			return 0, fmt.Errorf("the last exchanges' Sends: %w", err)
		}
	}
	if exchange {
		// Exchange k-2's Sends from these buffers have mostly completed
		// already (those to the peers that a control Send of round k-1,
		// which that round waited for, followed); the rest are waited
		// for here.
		if err := r.wait(ctx, func() bool { return r.sendsFree(slot) }); err != nil {
			return 0, fmt.Errorf("the Sends of exchange %d: %w", k-2, err)
		}
		for _, p := range r.peers {
			if p != nil {
				fillPattern(p.sendBuf[slot], me, p.rank, k, false)
				if r.prm.tamper != nil {
					r.prm.tamper(p.rank, k, p.sendBuf[slot])
				}
				fillPattern(p.recvBuf, p.rank, me, k, true)
			}
		}
	}
	// A peer's messages on a connection come in the order: its barrier
	// message of round k (if it sends this rank one), its data of exchange
	// k, its barrier message of round k+1; the Receives are posted in that
	// order, before this rank's first barrier message of round k: no peer
	// sends exchange k's data, nor round k+1's message, before it left
	// barrier k, which needs that message.
	for _, p := range r.peers {
		if p == nil {
			continue
		}
		if exchange {
			if err := r.postRecv(p); err != nil {
				return 0, err
			}
		}
		if k+1 <= r.prm.Reps && r.barrierSource(p.rank, k+1) {
			if err := r.postCtrlRecv(p, k+1); err != nil {
				return 0, err
			}
		}
	}
	stages, err := r.barrier(ctx, k)
	if err != nil {
		return 0, err
	}
	if k == 0 {
		r.released = time.Now()
	}
	var took time.Duration
	if exchange {
		start := time.Now()
		for i := 1; i < P; i++ {
			p := r.peers[(me+i)%P]
			var flags nd.Flags
			silent := r.silentSend(p, k)
			if silent {
				flags = nd.FlagSilentSuccess
			}
			if err := p.ep.Send(&p.send[slot], p.sendSGL[slot], flags); err != nil {
				return 0, fmt.Errorf("posting a Send to rank %d: %w", p.rank, err)
			}
			p.sending[slot] = true
			if silent {
				r.silentSends++
			}
		}
		if err := r.wait(ctx, func() bool {
			return r.count[dataRecv] >= P-1 && (!r.prm.SendsTimed || r.sendsFree(slot))
		}); err != nil {
			return 0, fmt.Errorf("exchange: %w", err)
		}
		took = time.Since(start)
		r.count[dataRecv] -= P - 1
	}
	if err := r.wait(ctx, func() bool { return r.count[ctrlSend] >= stages }); err != nil {
		return 0, fmt.Errorf("control Sends: %w", err)
	}
	r.count[ctrlSend] -= stages
	if exchange {
		for _, p := range r.peers {
			if p != nil {
				if err := checkPattern(p.recvBuf, p.rank, me, k); err != nil {
					return 0, err
				}
			}
		}
	}
	return took, nil
}

// silentSend reports whether exchange k's Send to p is posted silent, as
// MPI's eager sends report nothing: when the next round, not the last,
// sends p a control message, whose completion then frees the buffer. The
// last exchange's Sends complete on their own, since the last round waits
// for them before its control Sends (round); so do those of the mode that
// times them.
func (r *ndRank) silentSend(p *ndPeer, k int) bool {
	next := k + 1
	if r.prm.SendsTimed || next >= r.prm.Reps {
		return false
	}
	me, P := r.prm.Rank, r.prm.P
	for d := 1; d < P; d <<= 1 {
		if (me+d)%P == p.rank {
			return true
		}
	}
	return false
}

// sendsFree reports whether no Send from send buffer slot is outstanding.
func (r *ndRank) sendsFree(slot int) bool {
	for _, p := range r.peers {
		if p != nil && p.sending[slot] {
			return false
		}
	}
	return true
}

func (r *ndRank) postRecv(p *ndPeer) error {
	if err := p.ep.Receive(&p.recv, p.recvSGL); err != nil {
		return fmt.Errorf("posting a Receive from rank %d: %w", p.rank, err)
	}
	return nil
}

// goodbye ends the run after the last round, whose go every rank has
// received and whose Sends rank 0 saw confirmed: rank 0 disconnects; the
// others wait until it did, so that nothing rank 0 sent is left
// unconfirmed when they close.
func (r *ndRank) goodbye(ctx context.Context) error {
	if r.prm.Rank == 0 {
		for _, p := range r.m.Peers[1:] {
			if err := p.Connector.Disconnect(ctx); err != nil {
				return fmt.Errorf("disconnecting from rank %d: %w", p.Rank, err)
			}
		}
		return nil
	}
	if err := r.m.Peers[0].Connector.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("waiting for rank 0 to disconnect: %w", err)
	}
	return nil
}

// wait reaps completions from the mesh's queues until done reports true,
// polling for Spin after the last completion and then waiting in Notify.
func (r *ndRank) wait(ctx context.Context, done func() bool) error {
	qs := r.m.Queues()
	var idleSince time.Time
	for polls := 0; !done(); polls++ {
		n := 0
		for _, q := range qs {
			got := q.GetResults(r.out)
			for _, res := range r.out[:got] {
				if err := r.complete(res); err != nil {
					return err
				}
			}
			n += got
		}
		if n > 0 {
			idleSince = time.Time{}
			continue
		}
		if polls%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("%v completed, %w", r.count, context.Cause(ctx))
		}
		if r.prm.Spin < 0 {
			continue
		}
		now := time.Now()
		if idleSince.IsZero() {
			idleSince = now
		} else if now.Sub(idleSince) >= r.prm.Spin {
			if err := notifyAny(ctx, qs); err != nil {
				return fmt.Errorf("waiting in Notify (%v completed): %w", r.count, err)
			}
			idleSince = time.Time{}
		}
	}
	return nil
}

// notifyAny waits until one of qs fires (or fails, or ctx ends): a
// Notify on each, the first to return ending the others.
func notifyAny(ctx context.Context, qs []nd.CompletionQueue) error {
	if len(qs) == 1 {
		return qs[0].Notify(ctx, nd.NotifyAny)
	}
	nctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, len(qs))
	for _, q := range qs {
		go func() { errs <- q.Notify(nctx, nd.NotifyAny) }()
	}
	first := <-errs // nctx is canceled only below: this is a firing, a failure or ctx's end
	cancel()
	for range len(qs) - 1 {
		<-errs
	}
	return first
}

// complete checks one completion and counts it.
func (r *ndRank) complete(res *nd.Result) error {
	op, ok := r.ops[res]
	if !ok {
		return fmt.Errorf("a completion for a request never posted: %p", res)
	}
	want := r.prm.M
	if op.kind == ctrlSend || op.kind == ctrlRecv {
		want = ctrlSize
	}
	if res.Status != nd.Success || res.BytesTransferred != want {
		return fmt.Errorf("%v with rank %d: %v, %d bytes; want success, %d bytes", op.kind, op.peer.rank, res.Status, res.BytesTransferred, want)
	}
	if op.kind == ctrlRecv {
		p := op.peer
		if err := checkCtrl(p.ctrlIn[op.slot], p.ctrlRound[op.slot], p.rank); err != nil {
			return fmt.Errorf("from rank %d: %w", p.rank, err)
		}
		p.ctrlGot = p.ctrlRound[op.slot] + 1
		return nil
	}
	if op.kind == dataSend {
		op.peer.sending[op.slot] = false
		return nil
	}
	if op.kind == ctrlSend {
		// A silent Send of the exchange before this control Send's round
		// went out before it: it completed too.
		p := op.peer
		if k := p.ctrlSendRound - 1; k >= 0 && r.silentSend(p, k) {
			p.sending[k&1] = false
		}
	}
	r.count[op.kind]++
	return nil
}
