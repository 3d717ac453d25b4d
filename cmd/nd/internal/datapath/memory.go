package datapath

// Registered memory and memory windows for the data tests, and the message
// that hands a window to the peer.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
)

// Registered allocates and registers a buffer of size bytes, filled with a
// pattern (which also faults its pages in before the timing starts).
func Registered(ctx context.Context, a nd.Adapter, size int) ([]byte, nd.MemoryRegion, error) {
	return register(ctx, a, make([]byte, size))
}

// register fills buf with the pattern of registered and registers it.
func register(ctx context.Context, a nd.Adapter, buf []byte) ([]byte, nd.MemoryRegion, error) {
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	mr, err := a.RegisterMemory(ctx, buf)
	if err != nil {
		return nil, nil, fmt.Errorf("RegisterMemory of %d bytes: %w", len(buf), err)
	}
	return buf, mr, nil
}

// Deregister ends the registrations, ignoring errors: it runs on the way out.
func Deregister(ctx context.Context, a nd.Adapter, mrs ...nd.MemoryRegion) {
	for _, mr := range mrs {
		if mr != nil {
			a.DeregisterMemory(ctx, mr)
		}
	}
}

// WordAligned returns a zeroed buffer of at least size bytes whose length is
// a multiple of 4 and whose first byte is 4-aligned, so that every byte lies
// in an aligned 4-byte word inside the buffer (see LoadByte).
func WordAligned(size int) []byte {
	words := make([]uint32, (size+3)/4)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 4*len(words))
}

// WindowAlloc allocates the memory of the windows a data test exposes to
// its peer, and of its large Sends' sources. Over the shm provider it takes
// shm.AllocateMemory (unless heap is set): the peer then Reads and Writes
// the window, and pulls Sends by rendezvous, with a plain copy through its
// own mapping, no system call, which is how an application gets that
// provider's speed. Otherwise, and with heap, the
// window is Go heap memory from WordAligned, which shm peers reach with
// process_vm_readv / process_vm_writev.
type WindowAlloc struct {
	shared bool
}

// NewWindowAlloc returns the allocator for the provider named provider.
func NewWindowAlloc(provider string, heap bool) WindowAlloc {
	return WindowAlloc{shared: provider == shm.Name && !heap}
}

// Get returns a zeroed buffer of at least size bytes that satisfies
// WordAligned's alignment (AllocateMemory's memory is page-aligned).
func (w WindowAlloc) Get(size int) ([]byte, error) {
	if !w.shared {
		return WordAligned(size), nil
	}
	b, err := shm.AllocateMemory((size + 3) &^ 3)
	if err != nil {
		return nil, fmt.Errorf("shm.AllocateMemory(%d): %w", size, err)
	}
	return b, nil
}

// Registered is the package's registered for a buffer from get: filled
// with a pattern and registered.
func (w WindowAlloc) Registered(ctx context.Context, a nd.Adapter, size int) ([]byte, nd.MemoryRegion, error) {
	buf, err := w.Get(size)
	if err != nil {
		return nil, nil, err
	}
	buf, mr, err := register(ctx, a, buf[:size])
	if err != nil {
		w.Free(buf)
	}
	return buf, mr, err
}

// Free releases what get returned, once its registration ended; nil is
// ignored.
func (w WindowAlloc) Free(b []byte) {
	if w.shared && b != nil {
		shm.FreeMemory(b)
	}
}

// LoadByte returns buf[i], read with an atomic load of the aligned word that
// holds it; buf comes from WordAligned.
//
// It exists for polling a byte that the peer's RDMA Write places while this
// goroutine watches: the provider writes the buffer from another goroutine
// (or a system call), so a plain read in a loop is a data race in Go's
// memory model, and the compiler may hoist it out of the loop and spin
// forever. sync/atomic has no byte load; an aligned 4-byte load is atomic on
// every platform Go supports and sees the placed byte once it is there. The
// bytes around it are not read, so nothing depends on when they land.
// (Under the race detector the load is an uninstrumented one instead: see
// spin_race.go.)
func LoadByte(buf []byte, i int) byte {
	v := LoadWord((*uint32)(unsafe.Pointer(&buf[i&^3])))
	return (*[4]byte)(unsafe.Pointer(&v))[i&3]
}

// WindowMsgSize is the size of a WindowMsg on the wire.
const WindowMsgSize = nd.MWDescriptorSize + 4

// WindowMsg is the message that hands a memory window to the peer: ND's
// 20-byte big-endian descriptor, then, big-endian, the RDMA Reads the sender
// lets the peer have in flight toward it (ndrping's "incoming read limit").
type WindowMsg struct {
	Desc      nd.MWDescriptor
	ReadLimit uint32
}

// Put writes m into b, which holds at least WindowMsgSize bytes, and
// returns the written part.
func (m WindowMsg) Put(b []byte) []byte {
	m.Desc.Put(b)
	binary.BigEndian.PutUint32(b[nd.MWDescriptorSize:], m.ReadLimit)
	return b[:WindowMsgSize]
}

// ParseWindowMsg parses a received WindowMsg.
func ParseWindowMsg(b []byte) (WindowMsg, error) {
	var m WindowMsg
	if len(b) != WindowMsgSize {
		return m, fmt.Errorf("the window message has %d bytes, want %d", len(b), WindowMsgSize)
	}
	if err := m.Desc.UnmarshalBinary(b[:nd.MWDescriptorSize]); err != nil {
		return m, err
	}
	m.ReadLimit = binary.BigEndian.Uint32(b[nd.MWDescriptorSize:])
	return m, nil
}

// ErrNoInOrderDMA is why the RDMA tests refuse an adapter: they poll the
// last byte of a buffer to see a Write complete, which needs Writes placed
// front to back.
var ErrNoInOrderDMA = errors.New("the adapter does not place RDMA Writes in order (no AdapterInOrderDMA flag); the RDMA tests poll the last byte and need it")

// needInOrderDMA checks that the adapter reports AdapterInOrderDMA.
func needInOrderDMA(ai nd.AdapterInfo) error {
	if ai.Flags&nd.AdapterInOrderDMA == 0 {
		return ErrNoInOrderDMA
	}
	return nil
}

// Stamps returns the last bytes of round k: the client's message ends in
// ping, the server's in pong. Consecutive rounds differ, and neither is 0,
// so a byte left from an earlier round or never written is never mistaken
// for this round's (the sizes only grow, so a new size's last byte was
// never written before).
func Stamps(k int) (ping, pong byte) {
	ping = byte(k%127)*2 + 1
	return ping, ping + 1
}

// CheckWindow checks that a window of size bytes fits the adapter's limits
// and that the adapter places Writes in order.
func CheckWindow(ai nd.AdapterInfo, size int) error {
	if err := needInOrderDMA(ai); err != nil {
		return err
	}
	if size > min(ai.MaxOutboundLength, ai.MaxRegistrationSize, ai.MaxWindowSize) {
		return fmt.Errorf("transfers of %d bytes: the adapter allows %d bytes per Read or Write, %d per registration and %d per window",
			size, ai.MaxOutboundLength, ai.MaxRegistrationSize, ai.MaxWindowSize)
	}
	return nil
}
