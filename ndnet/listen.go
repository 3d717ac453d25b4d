package ndnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/godirect/nd"
)

// ListenConfig configures a Listener. Its Listen methods only read it:
// one value may serve concurrent calls.
type ListenConfig struct {
	Config
	// Backlog bounds the connection requests waiting to be set up (0:
	// the provider's default).
	Backlog int
}

// Listener accepts ndnet connections on one ND address and port. Its
// connections share one adapter, closed with the last of them and the
// Listener. Its methods are safe for concurrent use.
type Listener struct {
	cfg     Config
	adapter *sharedAdapter
	nl      nd.Listener
	addr    Addr

	ctx      context.Context
	cancel   context.CancelFunc
	accepted chan *Conn
	wg       sync.WaitGroup
	errOnce  sync.Once
	err      error
	errCh    chan struct{} // closed when the accept loop fails
	once     sync.Once
}

// Listen listens on address ("host:port", port 0 picks one) of provider p
// with the default ListenConfig. Errors as ListenConfig.Listen's.
func Listen(p nd.Provider, address string) (*Listener, error) {
	var lc ListenConfig
	return lc.Listen(p, address)
}

// Listen listens on address ("host:port", port 0 picks one) of provider p.
// It fails with a *net.OpError (Op "listen") wrapping the cause: an invalid
// Config or address, or the nd error of opening the adapter or listening
// (nd.ErrAddressAlreadyExists for a port in use).
func (lc *ListenConfig) Listen(p nd.Provider, address string) (*Listener, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "listen", Net: "nd/" + p.Name(), Err: err}
	}
	cfg, err := lc.Config.withDefaults()
	if err != nil {
		return nil, opErr(err)
	}
	ap, err := parseAddrPort(address)
	if err != nil {
		return nil, opErr(err)
	}
	a, err := p.OpenAdapter(ap.Addr())
	if err != nil {
		return nil, opErr(fmt.Errorf("ndnet: OpenAdapter %s: %w", ap.Addr(), err))
	}
	nl, err := a.Listen(lc.Backlog, Protocol, ap.Port())
	if err != nil {
		a.Close()
		return nil, opErr(fmt.Errorf("ndnet: Listen on %s: %w", ap, err))
	}
	l := &Listener{
		cfg:      cfg,
		adapter:  newSharedAdapter(p, a),
		nl:       nl,
		addr:     Addr{Provider: p.Name(), AddrPort: netip.AddrPortFrom(ap.Addr(), nl.Port())},
		accepted: make(chan *Conn),
		errCh:    make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Addr returns the listener's address, an Addr with the port listened on.
func (l *Listener) Addr() net.Addr { return l.addr }

// AcceptND waits for the next connection, set up and ready, and returns it
// as a *Conn, whose CloseWrite and other methods need no type assertion (as
// net.TCPListener's AcceptTCP returns a *net.TCPConn). After Close it
// returns a *net.OpError wrapping net.ErrClosed. Safe for concurrent use:
// each connection goes to one caller.
func (l *Listener) AcceptND() (*Conn, error) {
	select {
	case c := <-l.accepted:
		return c, nil
	case <-l.ctx.Done():
		return nil, &net.OpError{Op: "accept", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed}
	case <-l.errCh:
		return nil, &net.OpError{Op: "accept", Net: l.addr.Network(), Addr: l.addr, Err: l.err}
	}
}

// Accept is AcceptND for net.Listener: the net.Conn it returns is a
// *Conn, and its errors are AcceptND's.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptND()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops listening. Connections already accepted stay open; ones
// being set up are refused.
func (l *Listener) Close() error {
	first := false
	l.once.Do(func() {
		first = true
		l.cancel()
		l.nl.Close()
		l.wg.Wait()
		l.adapter.release()
	})
	if !first {
		return &net.OpError{Op: "close", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed}
	}
	return nil
}

// acceptLoop takes connection requests and sets each up in a goroutine of
// its own, so that a stalled peer delays nobody else.
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		connector, err := l.adapter.CreateConnector()
		if err == nil {
			err = l.nl.GetConnectionRequest(l.ctx, connector)
			if err != nil {
				connector.Close()
			}
		}
		if err != nil {
			if l.ctx.Err() == nil {
				l.errOnce.Do(func() {
					l.err = fmt.Errorf("ndnet: GetConnectionRequest: %w", err)
					close(l.errCh)
				})
			}
			return
		}
		l.wg.Add(1)
		go l.handshake(connector)
	}
}

// handshake accepts one request and hands the connection to Accept.
func (l *Listener) handshake(connector nd.Connector) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.HandshakeTimeout)
	defer cancel()
	peer, err := peerSetup(connector)
	if err != nil {
		connector.Reject(nil)
		connector.Close()
		return
	}
	c, err := newConn(l.adapter, connector, l.cfg)
	if err != nil {
		connector.Reject(nil) // newConn closed the connector: Reject is moot
		return
	}
	c.passive = true
	if err := c.negotiate(peer); err != nil {
		connector.Reject(nil)
		c.release()
		return
	}
	if err := connector.Accept(ctx, c.ep, c.ownSetup()); err != nil {
		c.release()
		return
	}
	if err := c.start(); err != nil {
		c.release()
		return
	}
	if err := c.awaitPeerHello(ctx); err != nil {
		c.destroy()
		return
	}
	select {
	case l.accepted <- c:
	case <-l.ctx.Done():
		c.Close()
	}
}
