package nd

import (
	"context"
	"net/netip"
)

// Connector is ND's INDConnector: it makes (Connect, CompleteConnect) or
// accepts (GetConnectionRequest, Accept) one connection, owns the one
// endpoint created through it, and tears the connection down. Its methods are
// safe for concurrent use; blocking calls end with ErrCanceled when their
// context ends or the connector closes while they wait. Every call made after
// Close returns ErrInvalidHandle (ErrDeviceRemoved after the adapter closed).
type Connector interface {
	// CreateEndpoint creates the connector's endpoint. inbound receives
	// Receive completions, outbound all others; they may be the same queue.
	// A queue that is nil, closed or from another adapter, and limits
	// beyond the adapter's (see EndpointLimits), are refused with an
	// *ArgError naming the argument ("inbound", "limits.OutboundSGE"), its
	// Status ErrInvalidParameter1 to 8 by ND's position. A connector has
	// one endpoint at a time: a second while the first is open is
	// ErrNotSupported; once it is closed a new one may be made. Receives
	// may be posted at once, before connecting.
	CreateEndpoint(inbound, outbound CompletionQueue, limits EndpointLimits) (Endpoint, error)

	// Connect asks the listener at remote for a connection with the given
	// protocol (the listener's: see ProtocolTCP), offering the endpoint's
	// read limits and privateData, at most the adapter's
	// AdapterInfo.MaxCallerData bytes (247 over tcp, 504 over shm and
	// loop: tcp.MaxPrivateData, shm.MaxPrivateData). localPort 0 picks a
	// local port; a port already used by another connection is
	// ErrAddressAlreadyAssociated. It returns nil when the peer accepted
	// (then call GetConnectionData and CompleteConnect, or Reject),
	// ErrConnectionRefused when nobody listens or the peer rejected,
	// ErrBadNetworkName when no adapter serves the address,
	// ErrConnectionActive when the connector is already connecting or
	// connected. Refused arguments are *ArgErrors: ep of another
	// connector (ErrInvalidParameter1), remote without an address or port
	// (ErrInvalidAddress), protocol outside 0..MaxProtocol
	// (ErrInvalidParameter4: ND counts the address's length as a
	// parameter), privateData too long (ErrInvalidBufferSize). ctx bounds
	// the wait for the peer's answer: its end abandons the attempt
	// (ErrCanceled).
	Connect(ctx context.Context, ep Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData []byte) error

	// CompleteConnect finishes a connection whose Connect succeeded: the
	// endpoint adopts the negotiated read limits and the passive side's
	// Accept returns. ErrConnectionInvalid if Connect has not succeeded;
	// ErrCanceled if ctx ends first.
	CompleteConnect(ctx context.Context) error

	// Accept accepts the request bound to this connector by
	// Listener.GetConnectionRequest, with the endpoint created on it and
	// privateData (at most the adapter's MaxCalleeData bytes, else an
	// *ArgError with ErrInvalidBufferSize; ep of another connector: an
	// *ArgError with ErrInvalidParameter1). It returns when the active
	// side called CompleteConnect; ErrConnectionRefused if the active side
	// rejected instead, ErrConnectionAborted if it went away, ErrCanceled
	// if ctx ends first (the attempt is abandoned).
	Accept(ctx context.Context, ep Endpoint, privateData []byte) error

	// Reject refuses the connection: on the passive side a request from
	// GetConnectionRequest (the peer's Connect returns ErrConnectionRefused),
	// on the active side a Connect that succeeded (the peer's Accept returns
	// ErrConnectionRefused). privateData is at most MaxCalleeData bytes.
	Reject(privateData []byte) error

	// GetConnectionData reports the peer's offer: on the passive side after
	// GetConnectionRequest, the active side's read limits and private data;
	// on the active side after Connect (accepted or rejected), the passive
	// side's. Limits are given from the local point of view and clamped to
	// this adapter's. The private data is copied into privateData; if it
	// does not fit, what fits is copied and ErrBufferOverflow is returned
	// with PrivateDataLength set to the full length (probe with nil).
	// ErrConnectionInvalid if there is no peer yet.
	GetConnectionData(privateData []byte) (ConnectionData, error)

	// GetLocalAddress is the local address and port of the connection;
	// ErrConnectionInvalid before a request is bound or accepted and after
	// the connection ended.
	GetLocalAddress() (netip.AddrPort, error)

	// GetPeerAddress is the peer's address and port; on the passive side it
	// is known from GetConnectionRequest on, before Accept. Errors as
	// GetLocalAddress's.
	GetPeerAddress() (netip.AddrPort, error)

	// NotifyDisconnect blocks until the connection ends, by either side or
	// by an error; it returns nil then, and DisconnectReason says why.
	// ErrConnectionInvalid if the connector never connected, ErrCanceled
	// if ctx ends first.
	NotifyDisconnect(ctx context.Context) error

	// Disconnect ends the connection gracefully: the endpoint's outstanding
	// requests, and the peer's, complete with ErrCanceled, and the peer's
	// NotifyDisconnect returns. It returns once the end is out of the
	// process's hands, so that the peer learns of it even if the process
	// exits at once; ErrCanceled if ctx ends first (the connection ends all
	// the same). ErrConnectionInvalid if not connected.
	Disconnect(ctx context.Context) error

	// Close releases the connector and closes its endpoint: a connection
	// still up is torn down as by Disconnect, the endpoint's outstanding
	// requests complete with ErrCanceled, a pending request is rejected,
	// blocked calls return ErrCanceled. Close is idempotent.
	Close() error
}

// Listener is ND's INDListen. Its methods are safe for concurrent use.
type Listener interface {
	// GetConnectionRequest binds the next incoming connection request to c,
	// a fresh connector of the same adapter, blocking until one arrives.
	// Several calls may wait at once; requests are handed out first come,
	// first served. ErrCanceled when ctx ends or the listener (or c)
	// closes while it waits; ErrInvalidHandle when called after the
	// listener closed, an *ArgError with ErrInvalidParameter1 for a c that
	// is closed or of another adapter.
	GetConnectionRequest(ctx context.Context, c Connector) error

	// Port is the port the listener listens on.
	Port() uint16

	// Close stops listening: waiting GetConnectionRequest calls return
	// ErrCanceled and requests waiting in the backlog, and later ones, are
	// refused. Close is idempotent.
	Close() error
}
