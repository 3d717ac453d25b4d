package perftest

// What the two sides of nd perf say to each other. The client's hello
// names the test, the connection's index among -q, the tx depth and the
// largest message; the server's welcome grants Send credits (one per
// Receive it keeps posted). Then both exchange perfMsgs, big-endian, in
// lock step: the server sends its window (write_lat: and the client its
// own, which the server answers with ready); for each size the client
// announces the step and the server answers ready; the client ends the
// step with a zero-byte Send (the end marker) and the server answers with
// what it received; the client's done ends the test.

import (
	"encoding/binary"
	"fmt"

	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// perfGreeting names nd perf on the wire.
var perfGreeting = session.NewGreeting("NDPF", "perf")

// perfHello is what the client's hello carries.
type perfHello struct {
	test     *perfTest
	qp, qps  int // this connection's index, and the number of connections
	txDepth  int
	maxSize  int
	useSRQ   bool   // --use_srq: the server posts its Receives to a shared receive queue
	testCode uint64 // the test's index in Tests plus 1
}

// perfHelloSRQ is the bit of the hello's argument that carries useSRQ,
// above the tx depth's 17 bits.
const perfHelloSRQ = 1 << 62

// wire returns the hello's private data.
func (h perfHello) wire() []byte {
	code := uint64(0)
	for i := range Tests {
		if &Tests[i] == h.test {
			code = uint64(i + 1)
		}
	}
	arg := code | uint64(h.qp)<<8 | uint64(h.qps)<<24 | uint64(h.txDepth)<<40
	if h.useSRQ {
		arg |= perfHelloSRQ
	}
	return perfGreeting.Hello(session.Hello{MaxSize: h.maxSize, Arg: arg})
}

// parsePerfHello parses and checks a client's private data.
func parsePerfHello(b []byte) (perfHello, error) {
	h, err := perfGreeting.ParseHello(b)
	if err != nil {
		return perfHello{}, err
	}
	ph := perfHello{
		testCode: h.Arg & 0xff,
		qp:       int(h.Arg >> 8 & 0xffff),
		qps:      int(h.Arg >> 24 & 0xffff),
		txDepth:  int(h.Arg >> 40 & (perfHelloSRQ>>40 - 1)),
		maxSize:  h.MaxSize,
		useSRQ:   h.Arg&perfHelloSRQ != 0,
	}
	switch {
	case ph.testCode < 1 || ph.testCode > uint64(len(Tests)):
		return perfHello{}, fmt.Errorf("the client asks for test %d, which nd perf does not know", ph.testCode)
	case ph.qps < 1 || ph.qps > perfMaxQPs || ph.qp >= ph.qps:
		return perfHello{}, fmt.Errorf("the client's connection %d of %d is not one of 1 to %d", ph.qp, ph.qps, perfMaxQPs)
	case ph.txDepth < 1 || ph.txDepth > perfMaxTxDepth:
		return perfHello{}, fmt.Errorf("the client asks for a tx depth of %d, not 1 to %d", ph.txDepth, perfMaxTxDepth)
	}
	ph.test = &Tests[ph.testCode-1]
	return ph, nil
}

// The kinds of perfMsg.
const (
	msgWindow = iota + 1 // either side's window (the server's first message)
	msgStep              // client: the next size, its iterations (0: until the end marker) and -Q
	msgReady             // server: the step may start
	msgEnd               // server: the end marker arrived; value is the messages received
	msgCredit            // server: credits returned
	msgDone              // client: the test is over
)

// perfMsgSize is the size of a perfMsg on the wire.
const perfMsgSize = 24 + datapath.WindowMsgSize

// perfMsg is a control message of nd perf.
type perfMsg struct {
	kind    uint32
	credits uint32 // server: Send credits returned
	cqMod   uint32 // msgStep: send_lat's -Q, for the server's echoes (in credits' place)
	value   uint64 // msgStep: the size; msgEnd: the messages received
	iters   uint64 // msgStep: the iterations, 0 to run until the end marker
	window  datapath.WindowMsg
}

// put writes m into b, which holds at least perfMsgSize bytes, and returns
// the written part.
func (m perfMsg) put(b []byte) []byte {
	binary.BigEndian.PutUint32(b[0:4], m.kind)
	binary.BigEndian.PutUint32(b[4:8], m.credits|m.cqMod)
	binary.BigEndian.PutUint64(b[8:16], m.value)
	binary.BigEndian.PutUint64(b[16:24], m.iters)
	m.window.Put(b[24:])
	return b[:perfMsgSize]
}

// parsePerfMsg parses a received perfMsg of n bytes in b.
func parsePerfMsg(b []byte, n int) (perfMsg, error) {
	if n != perfMsgSize {
		return perfMsg{}, fmt.Errorf("a control message of %d bytes, want %d", n, perfMsgSize)
	}
	w, err := datapath.ParseWindowMsg(b[24:perfMsgSize])
	if err != nil {
		return perfMsg{}, err
	}
	m := perfMsg{
		kind:    binary.BigEndian.Uint32(b[0:4]),
		credits: binary.BigEndian.Uint32(b[4:8]),
		value:   binary.BigEndian.Uint64(b[8:16]),
		iters:   binary.BigEndian.Uint64(b[16:24]),
		window:  w,
	}
	if m.kind < msgWindow || m.kind > msgDone {
		return perfMsg{}, fmt.Errorf("a control message of unknown kind %d", m.kind)
	}
	if m.kind == msgStep {
		m.credits, m.cqMod = 0, m.credits
	}
	return m, nil
}

// perfKindName names a message kind for errors.
func perfKindName(kind uint32) string {
	names := [...]string{"?", "window", "step", "ready", "end", "credit", "done"}
	if int(kind) < len(names) {
		return names[kind]
	}
	return "?"
}

// isDone reports whether the n bytes in b are the client's done message.
func isDone(b []byte, n int) bool {
	m, err := parsePerfMsg(b, n)
	return err == nil && m.kind == msgDone
}
