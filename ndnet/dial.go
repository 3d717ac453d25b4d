package ndnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/godirect/nd"
)

// Dialer connects to ndnet listeners. The zero value dials with
// DefaultConfig from an address the provider picks. Its Dial methods only
// read it: one value may serve concurrent calls.
type Dialer struct {
	Config
	// LocalAddr is the ND address to connect from; the zero value picks
	// the address of the provider that suits the remote one (the remote
	// one itself when this host serves it).
	LocalAddr netip.Addr
	// Timeout bounds the connection's set-up (0: only the context's).
	Timeout time.Duration
}

// Dial connects to the ndnet listener at address ("host:port") over
// provider p with the default Dialer; ctx bounds the set-up, and the
// errors are Dialer.Dial's.
func Dial(ctx context.Context, p nd.Provider, address string) (*Conn, error) {
	var d Dialer
	return d.Dial(ctx, p, address)
}

// Dial connects to the ndnet listener at address ("host:port") over
// provider p. It opens an adapter of its own for the connection, closed
// with it. ctx bounds the set-up only. It fails with a *net.OpError (Op
// "dial") wrapping the cause: an invalid Config or address, or the nd
// error of the set-up (errors.Is(err, nd.ErrConnectionRefused) when
// nobody listens there, nd.ErrCanceled when ctx ended).
func (d *Dialer) Dial(ctx context.Context, p nd.Provider, address string) (*Conn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "nd/" + p.Name(), Err: err}
	}
	cfg, err := d.Config.withDefaults()
	if err != nil {
		return nil, opErr(err)
	}
	remote, err := parseAddrPort(address)
	if err != nil {
		return nil, opErr(err)
	}
	local := d.LocalAddr
	if !local.IsValid() {
		addrs, err := p.Addresses()
		if err != nil {
			return nil, opErr(fmt.Errorf("ndnet: Addresses: %w", err))
		}
		if len(addrs) == 0 {
			return nil, opErr(fmt.Errorf("ndnet: provider %s serves no address", p.Name()))
		}
		local = pickLocal(addrs, remote.Addr())
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	a, err := p.OpenAdapter(local)
	if err != nil {
		return nil, opErr(fmt.Errorf("ndnet: OpenAdapter %s: %w", local, err))
	}
	sa := newSharedAdapter(p, a)
	defer sa.release() // the Conn holds its own reference
	connector, err := a.CreateConnector()
	if err != nil {
		return nil, opErr(fmt.Errorf("ndnet: CreateConnector: %w", err))
	}
	c, err := newConn(sa, connector, cfg)
	if err != nil {
		return nil, opErr(err)
	}
	if err := c.dial(ctx, remote); err != nil {
		c.release()
		return nil, opErr(err)
	}
	return c, nil
}

// dial is the active side's set-up.
func (c *Conn) dial(ctx context.Context, remote netip.AddrPort) error {
	if err := c.connector.Connect(ctx, c.ep, remote, Protocol, 0, c.ownSetup()); err != nil {
		return fmt.Errorf("ndnet: Connect to %s: %w", remote, err)
	}
	peer, err := peerSetup(c.connector)
	if err == nil {
		err = c.negotiate(peer)
	}
	if err != nil {
		c.connector.Reject(nil)
		return err
	}
	if err := c.connector.CompleteConnect(ctx); err != nil {
		return fmt.Errorf("ndnet: CompleteConnect: %w", err)
	}
	return c.start()
}
