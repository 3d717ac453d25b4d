package ndnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
)

// Conn is one ndnet stream: a net.Conn over an ND connection. Its methods
// are safe for concurrent use; concurrent Reads are served one at a time,
// as are concurrent Writes, and a Read and a Write proceed in parallel.
type Conn struct {
	connSetup

	rmu   sync.Mutex // held by Read for its whole call (and by teardown)
	wmu   sync.Mutex // held by Write for its whole call (and by teardown)
	rspin spinWindow // under rmu: how long a blocked Read polls (wait.go)
	wspin spinWindow // under wmu: how long a blocked Write polls
	mu    sync.Mutex // connReceive, connSend, connShutdown and connWaiters' counters

	connReceive
	connSend
	connShutdown
	connWaiters

	runCancel context.CancelFunc
	runDone   chan struct{}
	results   [64]*nd.Result
	teardown  sync.Once
}

// connSetup is set up before the connection is handed out, then
// read-only.
type connSetup struct {
	cfg        Config
	local      Addr
	remote     Addr
	adapter    *sharedAdapter
	cq         nd.CompletionQueue
	connector  nd.Connector
	ep         nd.Endpoint
	slotsMR    nd.MemoryRegion // receive and send slots
	ringMR     nd.MemoryRegion // receive ring and send staging (nil without ring)
	ringAlloc  []byte          // their memory when the provider's allocator gave it (freeRing)
	window     nd.MemoryWindow
	depth      int // own QueueDepth: data frames the peer may have outstanding
	frameSize  int // own receive slot size
	peerDepth  int
	eagerMax   int // largest frameData payload
	ringSize   int // negotiated ring size (0: none)
	chunkMax   int // largest ring chunk
	creditMark int // slots freed that make a credit frame due
}

// connReceive is the receive side, under Conn.mu.
type connReceive struct {
	rx          []rxSlot
	rxIndex     map[*nd.Result]int
	rxq         []rxEntry // frames with bytes for Read, in stream order
	rxqHead     int
	rxqLen      int
	ring        []byte
	ringIn      uint64 // ring bytes announced by frameRing
	ringOut     uint64 // ring bytes Read consumed
	ringOutSent uint64 // ringOut as last reported to the peer
	dataRecv    uint32 // data-class frames received
	slotsFreed  uint32 // data-class frames whose slots were posted again
	freedSent   uint32 // slotsFreed as last reported to the peer
	helloRecv   bool
	peerWindow  nd.MWDescriptor

	// The passive side sends its hello only once the active side's
	// arrived (iWARP: the active side sends first; siw as initiator drops
	// a connection whose responder's first frame is in the socket behind
	// the MPA reply). Accept waits for peerHello, closed (under mu) on
	// that hello or on the connection's failure.
	passive   bool
	hello     [nd.MWDescriptorSize]byte // the ring window's descriptor, the hello's payload with a ring
	peerHello chan struct{}
}

// connSend is the send side, under Conn.mu.
type connSend struct {
	tx          []txSlot
	txIndex     map[*nd.Result]int
	txHead      int
	txLen       int
	txSilent    int // silent requests posted since the last signaled one
	stage       []byte
	dataSent    uint32 // data-class frames sent
	peerSlotAck uint32
	ringSent    uint64 // bytes RDMA-written into the peer's ring
	peerRingAck uint64
	writesDone  uint64          // bytes of RDMA Writes retired (completed, or failed with the connection)
	sourceEnd   uint64          // ringSent after the last RDMA Write from a caller's buffer
	srcMR       nd.MemoryRegion // registration of srcBuf (sourceRegionLocked)
	srcBuf      []byte          // the caller's buffer last written from, to its capacity
	bindRes     nd.Result
}

// connShutdown is how the connection ends, under Conn.mu: the shutdown
// both ways (shutdown.go), and the failure that ended it early.
type connShutdown struct {
	shut shutdown
	err  error
	dead bool // the endpoint takes no more requests
}

// connWaiters is who waits for completions (wait.go): the counters under
// Conn.mu unless atomic, the doorbells and deadlines of Read, Write and
// Close.
type connWaiters struct {
	appPolls  uint64        // polls by Read, Write and Close
	readPolls uint64        // completion queue polls made by Read (tests)
	notifying atomic.Int32  // Read, Write and Close calls waiting in Notify
	runWaits  atomic.Bool   // the progress goroutine waits for them to leave Notify
	appLeft   chan struct{} // the last of them left Notify while runWaits
	runLooks  atomic.Uint64 // the progress goroutine's passes (tests)

	rwake    chan struct{} // a Read may proceed; ends its Notify (wait.go)
	wwake    chan struct{} // a Write may proceed; ends its Notify
	cwake    chan struct{} // Close may proceed; ends its Notify
	closedCh chan struct{} // closed by Close
	readDL   deadline
	writeDL  deadline
}

// rxSlot is one receive buffer and its posted Receive.
type rxSlot struct {
	res nd.Result
	sgl [1]nd.SGE
	buf []byte
}

// rxEntry is a frame whose bytes Read has not consumed: a frameData in a
// receive slot (slot >= 0), or bytes in the ring (slot < 0).
type rxEntry struct {
	slot     int
	off, end int // frameData: the unread part of the slot
	n        int // ring: bytes not consumed
}

// txSlot is one outbound request: a frame in buf, or an RDMA Write of n
// bytes of the staging ring.
type txSlot struct {
	res   nd.Result
	sgl   [1]nd.SGE
	buf   []byte
	write int // bytes of an RDMA Write; 0 for a frame
}

// sharedAdapter is an adapter shared by a Listener and its connections,
// closed with the last of them.
type sharedAdapter struct {
	nd.Adapter
	providerName string
	alloc        memoryAllocator // the provider's, or nil
	mu           sync.Mutex
	refs         int
}

// memoryAllocator is implemented by a provider whose own memory a peer
// reaches faster than Go heap memory (provider/shm: a shared segment the
// peer copies into through its mapping, where heap memory takes a
// process_vm_writev per Write). The receive ring is allocated from it.
type memoryAllocator interface {
	AllocateMemory(size int) ([]byte, error)
	FreeMemory(b []byte) error
}

// newSharedAdapter wraps a, opened from p, with one reference.
func newSharedAdapter(p nd.Provider, a nd.Adapter) *sharedAdapter {
	alloc, _ := p.(memoryAllocator)
	return &sharedAdapter{Adapter: a, providerName: p.Name(), alloc: alloc, refs: 1}
}

func (a *sharedAdapter) acquire() {
	a.mu.Lock()
	a.refs++
	a.mu.Unlock()
}

func (a *sharedAdapter) release() {
	a.mu.Lock()
	a.refs--
	last := a.refs == 0
	a.mu.Unlock()
	if last {
		a.Adapter.Close()
	}
}

// newConn creates a connection's completion queue, endpoint (on connector,
// which the Conn then owns) and slots, and posts its Receives, ready for
// Connect or Accept. The Conn holds a reference to a.
func newConn(a *sharedAdapter, connector nd.Connector, cfg Config) (*Conn, error) {
	info, err := a.Query()
	if err != nil {
		connector.Close()
		return nil, fmt.Errorf("ndnet: Query: %w", err)
	}
	a.acquire()
	c := &Conn{runDone: make(chan struct{})}
	c.cfg, c.adapter, c.connector = cfg, a, connector
	c.depth, c.frameSize = cfg.QueueDepth, HeaderSize+cfg.InlineThreshold
	c.rwake, c.wwake, c.cwake = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	c.closedCh, c.appLeft, c.peerHello = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	c.readDL, c.writeDL = newDeadline(c.rwake), newDeadline(c.wwake)
	c.rspin = spinWindow(cfg.Spin / spinFloor)
	c.wspin = c.rspin
	c.creditMark = (c.depth + 1) / 2
	nrx := c.depth + extraSlots
	ntx := sendSlots(c.depth)
	limits := nd.EndpointLimits{InboundEntries: nrx, OutboundEntries: ntx + 1, InboundSGE: 1, OutboundSGE: 1}
	if nrx > info.MaxInboundRequests || ntx+1 > info.MaxOutboundRequests || c.frameSize > info.MaxInboundLength || c.frameSize > info.MaxOutboundLength {
		c.release()
		return nil, fmt.Errorf("%w: QueueDepth %d or InlineThreshold %d beyond the adapter's limits", errConfig, cfg.QueueDepth, cfg.InlineThreshold)
	}
	if c.cq, err = a.CreateCompletionQueue(nrx + ntx + 1); err != nil {
		c.release()
		return nil, fmt.Errorf("ndnet: CreateCompletionQueue: %w", err)
	}
	if c.ep, err = connector.CreateEndpoint(c.cq, c.cq, limits); err != nil {
		c.release()
		return nil, fmt.Errorf("ndnet: CreateEndpoint: %w", err)
	}
	mem := make([]byte, (nrx+ntx)*c.frameSize)
	if c.slotsMR, err = a.RegisterMemory(context.Background(), mem); err != nil {
		c.release()
		return nil, fmt.Errorf("ndnet: RegisterMemory: %w", err)
	}
	c.rx = make([]rxSlot, nrx)
	c.rxIndex = make(map[*nd.Result]int, nrx)
	for i := range c.rx {
		s := &c.rx[i]
		s.buf = mem[i*c.frameSize : (i+1)*c.frameSize : (i+1)*c.frameSize]
		s.sgl[0] = nd.SGE{Buffer: s.buf, Region: c.slotsMR}
		c.rxIndex[&s.res] = i
	}
	c.tx = make([]txSlot, ntx)
	c.txIndex = make(map[*nd.Result]int, ntx)
	for i := range c.tx {
		s := &c.tx[i]
		off := (nrx + i) * c.frameSize
		s.buf = mem[off : off+c.frameSize : off+c.frameSize]
		c.txIndex[&s.res] = i
	}
	c.rxq = make([]rxEntry, 2*c.depth+extraSlots)
	for i := range c.rx {
		if err := c.ep.Receive(&c.rx[i].res, c.rx[i].sgl[:]); err != nil {
			c.release()
			return nil, fmt.Errorf("ndnet: Receive: %w", err)
		}
	}
	return c, nil
}

// ownSetup is the connection parameters this side offers.
func (c *Conn) ownSetup() []byte {
	b := make([]byte, SetupSize)
	putSetup(b, setup{Version: Version, Depth: uint16(c.depth), FrameSize: uint32(c.frameSize), RingSize: uint32(c.cfg.BufferSize)})
	return b
}

// peerSetup reads and checks the peer's connection parameters.
func peerSetup(conn nd.Connector) (setup, error) {
	var b [SetupSize]byte
	cd, err := conn.GetConnectionData(b[:])
	if err != nil && !errors.Is(err, nd.ErrBufferOverflow) {
		return setup{}, fmt.Errorf("ndnet: GetConnectionData: %w", err)
	}
	if cd.PrivateDataLength < SetupSize {
		return setup{}, errSetupSize
	}
	return parseSetup(b[:])
}

// negotiate adopts the peer's parameters and registers the ring.
func (c *Conn) negotiate(peer setup) error {
	c.peerDepth = int(peer.Depth)
	c.eagerMax = min(c.cfg.InlineThreshold, int(peer.FrameSize)-HeaderSize)
	if c.cfg.BufferSize > 0 && peer.RingSize > 0 {
		c.ringSize = min(c.cfg.BufferSize, int(peer.RingSize))
	}
	if c.ringSize == 0 {
		return nil
	}
	info, err := c.adapter.Query()
	if err != nil {
		return fmt.Errorf("ndnet: Query: %w", err)
	}
	if 2*c.ringSize > info.MaxRegistrationSize || c.ringSize > info.MaxWindowSize {
		c.ringSize = 0
		return nil
	}
	c.chunkMax = min(c.ringSize/2, info.MaxOutboundLength) // docs/ndnet-protocol.md, Ring bytes
	var mem []byte
	if a := c.adapter.alloc; a != nil {
		// The peer can reach the whole allocation, not only the ring's
		// window: it holds only the ring and the staging of what goes to
		// that peer.
		if mem, err = a.AllocateMemory(2 * c.ringSize); err == nil {
			c.ringAlloc = mem
		}
	}
	if c.ringAlloc == nil {
		mem = make([]byte, 2*c.ringSize)
	}
	if c.ringMR, err = c.adapter.RegisterMemory(context.Background(), mem); err != nil {
		c.freeRing()
		return fmt.Errorf("ndnet: RegisterMemory: %w", err)
	}
	c.ring = mem[:c.ringSize:c.ringSize]
	c.stage = mem[c.ringSize:]
	if c.window, err = c.adapter.CreateMemoryWindow(nil); err != nil {
		return fmt.Errorf("ndnet: CreateMemoryWindow: %w", err)
	}
	return nil
}

// start runs once the ND connection is up: it exposes the ring, sends the
// hello frame and starts the progress goroutine.
func (c *Conn) start() error {
	la, err := c.connector.GetLocalAddress()
	if err != nil {
		return fmt.Errorf("ndnet: GetLocalAddress: %w", err)
	}
	ra, err := c.connector.GetPeerAddress()
	if err != nil {
		return fmt.Errorf("ndnet: GetPeerAddress: %w", err)
	}
	name := c.adapter.providerName
	c.local = Addr{Provider: name, AddrPort: la}
	c.remote = Addr{Provider: name, AddrPort: ra}
	if c.ringSize > 0 {
		d, err := c.ep.Bind(&c.bindRes, c.ringMR, c.window, c.ring, nd.FlagAllowWrite|nd.FlagSilentSuccess)
		if err != nil {
			return fmt.Errorf("ndnet: Bind: %w", err)
		}
		d.Put(c.hello[:])
	}
	if !c.passive {
		c.mu.Lock()
		err := c.sendHelloLocked()
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.runCancel = cancel
	go c.run(ctx)
	return nil
}

// sendHelloLocked sends this side's hello: the active side's first frame
// at start, the passive side's answer to it. c.mu held.
func (c *Conn) sendHelloLocked() error {
	payload := c.hello[:0]
	if c.ringSize > 0 {
		payload = c.hello[:]
	}
	if c.sendFrameLocked(frameHello, 0, payload, 0) {
		return nil
	}
	if c.err != nil {
		return c.err
	}
	return errors.New("ndnet: no room for the hello frame")
}

// peerHelloLocked ends the passive side's wait for the active side's
// hello (it arrived, or the connection failed). c.mu held.
func (c *Conn) peerHelloLocked() {
	if !isClosed(c.peerHello) {
		close(c.peerHello)
	}
}

// awaitPeerHello is the passive side's wait, after start, for the active
// side's hello (to which the progress goroutine answers with this side's):
// it returns the connection's failure, or ctx's.
func (c *Conn) awaitPeerHello(ctx context.Context) error {
	select {
	case <-c.peerHello:
	case <-ctx.Done():
		return fmt.Errorf("ndnet: waiting for the peer's hello: %w", ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// release frees what newConn and negotiate made, for a Conn never started.
func (c *Conn) release() {
	if c.ep != nil {
		c.ep.Close()
	}
	c.connector.Close()
	if c.window != nil {
		c.window.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Linger)
	defer cancel()
	if c.ringMR != nil {
		if c.adapter.DeregisterMemory(ctx, c.ringMR) == nil {
			c.freeRing()
		} // else the peer may still write the ring: it stays allocated
	} else {
		c.freeRing()
	}
	if c.slotsMR != nil {
		c.adapter.DeregisterMemory(ctx, c.slotsMR)
	}
	if c.srcMR != nil {
		c.adapter.DeregisterMemory(ctx, c.srcMR)
	}
	if c.cq != nil {
		c.cq.Close()
	}
	c.adapter.release()
}

// freeRing gives memory the provider allocated for the ring back to it,
// once no registration covers it.
func (c *Conn) freeRing() {
	if c.ringAlloc != nil {
		c.adapter.alloc.FreeMemory(c.ringAlloc)
		c.ringAlloc = nil
	}
}

// LocalAddr returns the local address, an Addr.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address, an Addr.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines (SetReadDeadline,
// SetWriteDeadline); it returns nil.
func (c *Conn) SetDeadline(t time.Time) error {
	c.readDL.set(t)
	c.writeDL.set(t)
	return nil
}

// SetReadDeadline sets the deadline for Read calls, pending ones included;
// past it they fail with an error wrapping os.ErrDeadlineExceeded.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDL.set(t)
	return nil
}

// SetWriteDeadline sets the deadline for Write calls, pending ones
// included; past it they fail with an error wrapping os.ErrDeadlineExceeded
// (some bytes may have been written, as the count says).
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.writeDL.set(t)
	return nil
}
