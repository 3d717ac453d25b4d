package nd

// RemoteAccessAdapter is what an Adapter implements when a registered
// buffer can be opened to one-sided access by the peer of any of its
// endpoints, as ND v2's memory regions registered with
// ND_MR_FLAG_ALLOW_REMOTE_READ or _WRITE are (their remote token) and as a
// verbs rkey is. A memory window (Endpoint.Bind) serves only its
// endpoint's peer; such an opening serves every connection of the adapter,
// present and future, until it is closed. Use AllowRemoteAccess, which
// reports ErrNotSupported for an adapter without it. Its method is safe for
// concurrent use, as the Adapter's are.
type RemoteAccessAdapter interface {
	// AllowRemoteAccess lets the peers of the adapter's endpoints RDMA
	// Read (FlagAllowRead) and Write (FlagAllowWrite) buf, which must lie
	// inside mr, through the returned RemoteAccess's descriptor. A region
	// that is nil, of another adapter or deregistered is
	// ErrInvalidParameter1, a buf not inside it ErrInvalidParameter2,
	// rights granting neither read nor write ErrInvalidParameter3; after
	// the adapter closed, ErrDeviceRemoved. While the access is open,
	// DeregisterMemory of mr returns ErrDeviceBusy. A SendAndInvalidate
	// naming its token completes the Receive with ErrInvalidationError: a
	// peer cannot close it.
	AllowRemoteAccess(mr MemoryRegion, buf []byte, rights Flags) (RemoteAccess, error)
}

// RemoteAccess is an opening of registered memory to every connection of
// an adapter (RemoteAccessAdapter). It is safe for concurrent use.
type RemoteAccess interface {
	// Descriptor is what a peer passes to Read and Write: the buffer's
	// base address, length and the access's token. The token is random and
	// never names another window or access while this one is open.
	Descriptor() MWDescriptor
	// Close revokes the access: once it returns, no peer access through
	// the token is in progress and later ones fail with
	// ErrAccessViolation, ending the connection they arrive on, as a
	// closed window's do. Close is idempotent; the adapter's Close closes
	// it too.
	Close() error
}

// AllowRemoteAccess opens buf inside mr to the peers of every endpoint of a
// (see RemoteAccessAdapter). It returns ErrNotSupported when the adapter
// has no such access.
func AllowRemoteAccess(a Adapter, mr MemoryRegion, buf []byte, rights Flags) (RemoteAccess, error) {
	ra, ok := a.(RemoteAccessAdapter)
	if !ok {
		return nil, ErrNotSupported
	}
	return ra.AllowRemoteAccess(mr, buf, rights)
}
