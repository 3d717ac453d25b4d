package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/tcp"
)

// ndProtocol is the ND protocol number the ranks listen and connect with.
const ndProtocol = 6

// ndDepth is each endpoint's queue depth: at most a control message and an
// exchange's message are outstanding per direction.
const ndDepth = 4

var ndLimits = nd.EndpointLimits{
	InboundEntries: ndDepth, OutboundEntries: ndDepth,
	InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 1, OutboundReadLimit: 1,
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

// ndRank is a rank over the tcp provider: one adapter on the rank's
// address, one completion queue for every endpoint, one listener.
type ndRank struct {
	prm params
	a   nd.Adapter
	cq  nd.CompletionQueue
	l   nd.Listener

	peers []*ndPeer // by rank; nil at this rank
	ops   map[*nd.Result]ndOp
	count [numKinds]int
	out   []*nd.Result

	closeOnce sync.Once
}

// ndPeer is this rank's connection to one other rank, with one registered
// buffer holding the exchange's send and receive buffers and the control
// messages' ones.
type ndPeer struct {
	rank int
	conn nd.Connector
	ep   nd.Endpoint
	mr   nd.MemoryRegion

	sendBuf, recvBuf, ctrlOut, ctrlIn []byte
	sendSGL, recvSGL, ctrlOutSGL      []nd.SGE
	ctrlInSGL                         []nd.SGE

	send, recv, ctrlSend, ctrlRecv nd.Result

	// ctrlRound is the round of the control message the posted control
	// Receive expects.
	ctrlRound int
}

type ndOp struct {
	kind opKind
	peer *ndPeer
}

// newNDRank opens a tcp provider that serves only local's address, its
// adapter, the rank's completion queue, and listens on local's port (0
// picks one).
func newNDRank(prm params, local netip.AddrPort) (*ndRank, error) {
	if err := prm.validate(); err != nil {
		return nil, err
	}
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{local.Addr()}
	a, err := tcp.New(cfg).OpenAdapter(local.Addr())
	if err != nil {
		return nil, fmt.Errorf("OpenAdapter %v: %w", local.Addr(), err)
	}
	r := &ndRank{prm: prm, a: a, out: make([]*nd.Result, 64)}
	if r.cq, err = a.CreateCompletionQueue(2*(prm.P-1)*ndDepth + 16); err != nil {
		a.Close()
		return nil, fmt.Errorf("CreateCompletionQueue: %w", err)
	}
	if r.l, err = a.Listen(prm.P, ndProtocol, local.Port()); err != nil {
		a.Close()
		return nil, fmt.Errorf("listening on %v: %w", local, err)
	}
	return r, nil
}

func (r *ndRank) Addr() netip.AddrPort { return netip.AddrPortFrom(r.a.Address(), r.l.Port()) }

// Close closes the adapter, which tears down every connection and object
// made from it.
func (r *ndRank) Close() error {
	r.closeOnce.Do(func() {
		r.l.Close()
		r.a.Close()
	})
	return nil
}

func (r *ndRank) Run(ctx context.Context, peers []netip.AddrPort) ([]time.Duration, error) {
	if len(peers) != r.prm.P {
		return nil, fmt.Errorf("%d addresses for %d ranks", len(peers), r.prm.P)
	}
	if err := r.connect(ctx, peers); err != nil {
		return nil, err
	}
	times := make([]time.Duration, 0, r.prm.Reps)
	for k := 0; k <= r.prm.Reps; k++ {
		d, err := r.round(ctx, k)
		if err != nil {
			return times, fmt.Errorf("round %d: %w", k, err)
		}
		if k < r.prm.Reps {
			times = append(times, d)
		}
	}
	if r.count != [numKinds]int{} {
		return times, fmt.Errorf("completions beyond the protocol's: %v", r.count)
	}
	return times, r.goodbye(ctx)
}

// newPeer registers the buffers for the connection to rank j.
func (r *ndRank) newPeer(ctx context.Context, j int) (*ndPeer, error) {
	m := r.prm.M
	buf := make([]byte, 2*m+2*ctrlSize)
	mr, err := r.a.RegisterMemory(ctx, buf)
	if err != nil {
		return nil, fmt.Errorf("RegisterMemory: %w", err)
	}
	p := &ndPeer{rank: j, mr: mr,
		sendBuf: buf[:m], recvBuf: buf[m : 2*m],
		ctrlOut: buf[2*m : 2*m+ctrlSize], ctrlIn: buf[2*m+ctrlSize:]}
	p.sendSGL = []nd.SGE{{Buffer: p.sendBuf, Region: mr}}
	p.recvSGL = []nd.SGE{{Buffer: p.recvBuf, Region: mr}}
	p.ctrlOutSGL = []nd.SGE{{Buffer: p.ctrlOut, Region: mr}}
	p.ctrlInSGL = []nd.SGE{{Buffer: p.ctrlIn, Region: mr}}
	return p, nil
}

// connect makes every connection: one goroutine accepts the ranks below,
// one per rank above connects to it (retrying while it does not listen
// yet). Then the hellos go from every connecting side.
func (r *ndRank) connect(ctx context.Context, addrs []netip.AddrPort) error {
	r.peers = make([]*ndPeer, r.prm.P)
	for j := range r.prm.P {
		if j == r.prm.Rank {
			continue
		}
		p, err := r.newPeer(ctx, j)
		if err != nil {
			return err
		}
		r.peers[j] = p
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first failure ends the others; it is the one reported.
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.acceptLower(ctx); err != nil {
			fail(fmt.Errorf("accepting: %w", err))
		}
	})
	for j := r.prm.Rank + 1; j < r.prm.P; j++ {
		wg.Go(func() {
			if err := r.connectTo(ctx, r.peers[j], addrs[j]); err != nil {
				fail(fmt.Errorf("connecting to rank %d at %v: %w", j, addrs[j], err))
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	r.ops = make(map[*nd.Result]ndOp, 4*r.prm.P)
	for _, p := range r.peers {
		if p != nil {
			r.ops[&p.send] = ndOp{dataSend, p}
			r.ops[&p.recv] = ndOp{dataRecv, p}
			r.ops[&p.ctrlSend] = ndOp{ctrlSend, p}
			r.ops[&p.ctrlRecv] = ndOp{ctrlRecv, p}
		}
	}
	if r.prm.Rank == 0 {
		// ready(0) may follow the hello at once.
		for _, p := range r.peers[1:] {
			if err := r.postCtrlRecv(p, 0); err != nil {
				return err
			}
		}
	}
	higher := r.prm.P - 1 - r.prm.Rank
	for _, p := range r.peers[r.prm.Rank+1:] {
		if err := r.sendCtrl(p, helloRound); err != nil {
			return err
		}
	}
	// Rank 0 may count a ready(0) among these; take only the hellos.
	if err := r.wait(ctx, func() bool { return r.count[ctrlRecv] >= r.prm.Rank && r.count[ctrlSend] >= higher }); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	r.count[ctrlRecv] -= r.prm.Rank
	r.count[ctrlSend] -= higher
	return nil
}

// acceptLower accepts one connection from every rank below this one; the
// connecting rank names itself in the private data.
func (r *ndRank) acceptLower(ctx context.Context) error {
	var priv [4]byte
	for range r.prm.Rank {
		conn, err := r.a.CreateConnector()
		if err != nil {
			return fmt.Errorf("CreateConnector: %w", err)
		}
		if err := r.l.GetConnectionRequest(ctx, conn); err != nil {
			conn.Close()
			return fmt.Errorf("GetConnectionRequest: %w", err)
		}
		cd, err := conn.GetConnectionData(priv[:])
		if err != nil || cd.PrivateDataLength != len(priv) {
			conn.Close()
			return fmt.Errorf("a connection request without a rank (%d bytes of private data): %v", cd.PrivateDataLength, err)
		}
		j := int(priv[0])<<24 | int(priv[1])<<16 | int(priv[2])<<8 | int(priv[3])
		if j >= r.prm.Rank || r.peers[j].conn != nil {
			conn.Close()
			return fmt.Errorf("a connection request from rank %d, which should not connect here", j)
		}
		p := r.peers[j]
		p.conn = conn
		if p.ep, err = conn.CreateEndpoint(r.cq, r.cq, ndLimits); err != nil {
			return fmt.Errorf("CreateEndpoint for rank %d: %w", j, err)
		}
		// The hello's Receive is posted before the connection exists.
		if err := r.postCtrlRecv(p, helloRound); err != nil {
			return err
		}
		if err := conn.Accept(ctx, p.ep, nil); err != nil {
			return fmt.Errorf("accepting rank %d: %w", j, err)
		}
	}
	return nil
}

// connectTo connects to rank p.rank at addr. A refusal (the rank does not
// listen yet) is retried with a fresh connector and endpoint until ctx
// ends.
func (r *ndRank) connectTo(ctx context.Context, p *ndPeer, addr netip.AddrPort) error {
	priv := []byte{byte(r.prm.Rank >> 24), byte(r.prm.Rank >> 16), byte(r.prm.Rank >> 8), byte(r.prm.Rank)}
	backoff := time.Millisecond
	for {
		conn, err := r.a.CreateConnector()
		if err != nil {
			return fmt.Errorf("CreateConnector: %w", err)
		}
		ep, err := conn.CreateEndpoint(r.cq, r.cq, ndLimits)
		if err != nil {
			conn.Close()
			return fmt.Errorf("CreateEndpoint: %w", err)
		}
		err = conn.Connect(ctx, ep, addr, ndProtocol, 0, priv)
		if err == nil {
			if err = conn.CompleteConnect(ctx); err != nil {
				return fmt.Errorf("CompleteConnect: %w", err)
			}
			p.conn, p.ep = conn, ep
			return nil
		}
		ep.Close()
		conn.Close()
		if !errors.Is(err, nd.ErrConnectionRefused) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("refused until the deadline: %w", err)
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func (r *ndRank) postCtrlRecv(p *ndPeer, round int) error {
	p.ctrlRound = round
	if err := p.ep.Receive(&p.ctrlRecv, p.ctrlInSGL); err != nil {
		return fmt.Errorf("control Receive from rank %d: %w", p.rank, err)
	}
	return nil
}

func (r *ndRank) sendCtrl(p *ndPeer, round int) error {
	putCtrl(p.ctrlOut, round, r.prm.Rank)
	if err := p.ep.Send(&p.ctrlSend, p.ctrlOutSGL, 0); err != nil {
		return fmt.Errorf("control Send to rank %d: %w", p.rank, err)
	}
	return nil
}

// round runs barrier round k and, for k < Reps, exchange k; it returns the
// exchange's duration.
func (r *ndRank) round(ctx context.Context, k int) (time.Duration, error) {
	me, P, exchange := r.prm.Rank, r.prm.P, k < r.prm.Reps
	if exchange {
		for _, p := range r.peers {
			if p != nil {
				fillPattern(p.sendBuf, me, p.rank, k, false)
				if r.prm.tamper != nil {
					r.prm.tamper(p.rank, k, p.sendBuf)
				}
				fillPattern(p.recvBuf, p.rank, me, k, true)
			}
		}
	}
	if me == 0 {
		if err := r.wait(ctx, func() bool { return r.count[ctrlRecv] >= P-1 }); err != nil {
			return 0, fmt.Errorf("waiting for ready: %w", err)
		}
		r.count[ctrlRecv] -= P - 1
		for _, p := range r.peers[1:] {
			if exchange {
				if err := r.postRecv(p); err != nil {
					return 0, err
				}
			}
			// ready(k+1) follows this round's data on each connection.
			if k+1 <= r.prm.Reps {
				if err := r.postCtrlRecv(p, k+1); err != nil {
					return 0, err
				}
			}
			if err := r.sendCtrl(p, k); err != nil {
				return 0, err
			}
		}
	} else {
		p0 := r.peers[0]
		if err := r.postCtrlRecv(p0, k); err != nil {
			return 0, err
		}
		if exchange {
			for _, p := range r.peers {
				if p != nil {
					if err := r.postRecv(p); err != nil {
						return 0, err
					}
				}
			}
		}
		if err := r.sendCtrl(p0, k); err != nil {
			return 0, err
		}
		if err := r.wait(ctx, func() bool { return r.count[ctrlRecv] >= 1 }); err != nil {
			return 0, fmt.Errorf("waiting for go: %w", err)
		}
		r.count[ctrlRecv]--
	}
	var took time.Duration
	if exchange {
		start := time.Now()
		for i := 1; i < P; i++ {
			p := r.peers[(me+i)%P]
			if err := p.ep.Send(&p.send, p.sendSGL, 0); err != nil {
				return 0, fmt.Errorf("posting a Send to rank %d: %w", p.rank, err)
			}
		}
		if err := r.wait(ctx, func() bool { return r.count[dataSend] >= P-1 && r.count[dataRecv] >= P-1 }); err != nil {
			return 0, fmt.Errorf("exchange: %w", err)
		}
		took = time.Since(start)
		r.count[dataSend] -= P - 1
		r.count[dataRecv] -= P - 1
	}
	sends := 1
	if me == 0 {
		sends = P - 1
	}
	if err := r.wait(ctx, func() bool { return r.count[ctrlSend] >= sends }); err != nil {
		return 0, fmt.Errorf("control Sends: %w", err)
	}
	r.count[ctrlSend] -= sends
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
		for _, p := range r.peers[1:] {
			if err := p.conn.Disconnect(ctx); err != nil {
				return fmt.Errorf("disconnecting from rank %d: %w", p.rank, err)
			}
		}
		return nil
	}
	if err := r.peers[0].conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("waiting for rank 0 to disconnect: %w", err)
	}
	return nil
}

// wait reaps completions from the queue until done reports true, polling
// for Spin after the last completion and then waiting in Notify.
func (r *ndRank) wait(ctx context.Context, done func() bool) error {
	var idleSince time.Time
	for polls := 0; !done(); polls++ {
		n := r.cq.GetResults(r.out)
		for _, res := range r.out[:n] {
			if err := r.complete(res); err != nil {
				return err
			}
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
			if err := r.cq.Notify(ctx, nd.NotifyAny); err != nil {
				return fmt.Errorf("waiting in Notify (%v completed): %w", r.count, err)
			}
			idleSince = time.Time{}
		}
	}
	return nil
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
		if err := checkCtrl(op.peer.ctrlIn, op.peer.ctrlRound, op.peer.rank); err != nil {
			return fmt.Errorf("from rank %d: %w", op.peer.rank, err)
		}
	}
	r.count[op.kind]++
	return nil
}
