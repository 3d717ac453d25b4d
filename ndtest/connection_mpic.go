package ndtest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/godirect/nd"
)

// connectionScaleCases check many connections at once: ndmpic's
// simultaneous connects and ndconnlite's series of short connections.
var connectionScaleCases = []testCase{
	{"Simultaneous/FourRanks", `docs/semantics.md "simultaneous connects": ranks connecting to each other both ways at once resolve each pair by rejecting one attempt`, testSimultaneous},
	{"ConnLite/32Connections", `docs/semantics.md "connections in turn": a series of connections, each made, used and torn down, leaves the adapters working`, testConnLite},
}

// testSimultaneous reproduces ndmpic's pattern compactly: four ranks, the
// even ones on one adapter and the odd ones on the other, each listening;
// every pair of ranks connects both ways at once. Of the two attempts of a
// pair, the higher rank's stays: the higher rank rejects the lower rank's
// request, whose Connect is refused, and the lower rank then accepts the
// higher rank's request. On each connection the active (higher) rank sends
// "close", the passive one answers "close_ack", and the active rank
// disconnects.
func testSimultaneous(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	const ranks = 4
	adapter := func(r int) nd.Adapter { return [2]nd.Adapter{a, b}[r%2] }
	var (
		lis     [ranks]nd.Listener
		act     [ranks][ranks]*Side // act[i][j]: rank i's attempt to reach rank j
		conn    [ranks][ranks]*call
		actRecv [ranks][ranks]buffer
		actRes  [ranks][ranks]nd.Result
		pending [ranks][ranks]*Side // pending[l][h]: rank l holds rank h's request
	)
	for r := range ranks {
		lis[r] = listen(t, adapter(r), 0)
	}
	for i := range ranks {
		for j := range ranks {
			if i == j {
				continue
			}
			act[i][j] = side(t, adapter(i))
			actRecv[i][j] = newBuffer(t, act[i][j], 64)
			recvBuf(t, act[i][j], actRecv[i][j], &actRes[i][j])
		}
	}
	for i := range ranks {
		for j := range ranks {
			if i != j {
				conn[i][j] = startConnect(t, act[i][j], addrOf(adapter(j), lis[j]), []byte{byte(i)})
			}
		}
	}
	// Every rank takes the requests of the three others.
	for r := range ranks {
		for range ranks - 1 {
			ps := passiveSide(t, adapter(r))
			expectStatus(t, fmt.Sprintf("rank %d GetConnectionRequest", r), startGetRequest(t, lis[r], ps).wait(t), nd.Success)
			var pd [1]byte
			cd, err := ps.Connector.GetConnectionData(pd[:])
			expectStatus(t, "GetConnectionData", err, nd.Success)
			peer := int(pd[0])
			if cd.PrivateDataLength != 1 || peer >= ranks || peer == r || pending[r][peer] != nil {
				t.Fatalf("rank %d got a request with private data %v (length %d)", r, pd, cd.PrivateDataLength)
			}
			if r > peer {
				expectStatus(t, fmt.Sprintf("rank %d Reject of rank %d", r, peer), ps.Connector.Reject(nil), nd.Success)
				continue
			}
			pending[r][peer] = ps
		}
	}
	for l := range ranks {
		for h := l + 1; h < ranks; h++ {
			expectStatus(t, fmt.Sprintf("rank %d Connect to higher rank %d", l, h), conn[l][h].wait(t), nd.ErrConnectionRefused)
			conn[h][l].notReturned(t, "the lower rank has not accepted yet")
			ps := pending[l][h]
			if ps == nil {
				t.Fatalf("rank %d never got rank %d's request", l, h)
			}
			addEndpoint(t, ps, DefaultLimits)
			in := newBuffer(t, ps, 64)
			var inRes nd.Result
			recvBuf(t, ps, in, &inRes)
			acc := startAccept(t, ps, nil)
			hs := act[h][l]
			expectStatus(t, fmt.Sprintf("rank %d Connect to lower rank %d", h, l), conn[h][l].wait(t), nd.Success)
			expectStatus(t, "CompleteConnect", hs.Connector.CompleteConnect(ctx(t)), nd.Success)
			expectStatus(t, fmt.Sprintf("rank %d Accept of rank %d", l, h), acc.wait(t), nd.Success)

			// close / close_ack, then the active rank disconnects.
			msg := newBuffer(t, hs, 64)
			copy(msg.b, fmt.Sprintf("close %d->%d", h, l))
			var sr nd.Result
			sendBuf(t, hs, msg, &sr, 0)
			Expect(t, hs.OutCQ, &sr, nd.Success, 64)
			Expect(t, ps.InCQ, &inRes, nd.Success, 64)
			if !bytes.Equal(in.b, msg.b) {
				t.Fatalf("rank %d received %q; want %q", l, in.b, msg.b)
			}
			ack := newBuffer(t, ps, 64)
			copy(ack.b, fmt.Sprintf("close_ack %d->%d", l, h))
			var ar nd.Result
			sendBuf(t, ps, ack, &ar, 0)
			Expect(t, ps.OutCQ, &ar, nd.Success, 64)
			Expect(t, hs.InCQ, &actRes[h][l], nd.Success, 64)
			if !bytes.Equal(actRecv[h][l].b, ack.b) {
				t.Fatalf("rank %d received %q; want %q", h, actRecv[h][l].b, ack.b)
			}
			expectStatus(t, fmt.Sprintf("rank %d Disconnect", h), hs.Connector.Disconnect(ctx(t)), nd.Success)
			expectStatus(t, fmt.Sprintf("rank %d NotifyDisconnect", l), ps.Connector.NotifyDisconnect(ctx(t)), nd.Success)
		}
	}
}

// testConnLite is a small ndconn: 32 connections set up, used for a 4 KiB
// exchange each way, and torn down in turn between two adapters through one
// listener.
func testConnLite(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	const size = 4096
	ra, rb := &Side{Adapter: a}, &Side{Adapter: b}
	aOut, aIn := newBuffer(t, ra, size), newBuffer(t, ra, size)
	bOut, bIn := newBuffer(t, rb, size), newBuffer(t, rb, size)
	for i := range 32 {
		fillPattern(aOut.b, byte(2*i))
		fillPattern(bOut.b, byte(2*i+1))
		connLiteOnce(t, i, a, b, l, aOut, aIn, bOut, bIn)
	}
}

// rawSide makes a Side whose objects the caller closes with the returned
// function (the adapter's Close frees them if the test fails first).
func rawSide(t *testing.T, a nd.Adapter, c nd.Connector) (*Side, func()) {
	t.Helper()
	s := &Side{Adapter: a, Connector: c}
	var err error
	if s.Connector == nil {
		if s.Connector, err = a.CreateConnector(); err != nil {
			t.Fatalf("CreateConnector: %v", err)
		}
	}
	if s.InCQ, err = a.CreateCompletionQueue(16); err != nil {
		t.Fatalf("CreateCompletionQueue: %v", err)
	}
	if s.OutCQ, err = a.CreateCompletionQueue(16); err != nil {
		t.Fatalf("CreateCompletionQueue: %v", err)
	}
	if s.Endpoint, err = s.Connector.CreateEndpoint(s.InCQ, s.OutCQ, DefaultLimits); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	return s, func() {
		for _, err := range []error{s.Endpoint.Close(), s.Connector.Close(), s.InCQ.Close(), s.OutCQ.Close()} {
			if err != nil {
				t.Errorf("connection %p: closing: %v", s, err)
			}
		}
	}
}

func connLiteOnce(t *testing.T, i int, a, b nd.Adapter, l nd.Listener, aOut, aIn, bOut, bIn buffer) {
	t.Helper()
	act, closeAct := rawSide(t, a, nil)
	defer closeAct()
	var ar, br, as, bs nd.Result
	recvBuf(t, act, aIn, &ar)
	pc, err := b.CreateConnector()
	if err != nil {
		t.Fatalf("connection %d: CreateConnector: %v", i, err)
	}
	req := startGetRequest(t, l, &Side{Connector: pc})
	conn := startConnect(t, act, addrOf(b, l), nil)
	if err := req.wait(t); err != nil {
		pc.Close()
		t.Fatalf("connection %d: GetConnectionRequest: %v", i, err)
	}
	pas, closePas := rawSide(t, b, pc)
	defer closePas()
	recvBuf(t, pas, bIn, &br)
	acc := startAccept(t, pas, nil)
	expectStatus(t, fmt.Sprintf("connection %d: Connect", i), conn.wait(t), nd.Success)
	expectStatus(t, fmt.Sprintf("connection %d: CompleteConnect", i), act.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, fmt.Sprintf("connection %d: Accept", i), acc.wait(t), nd.Success)

	sendBuf(t, act, aOut, &as, 0)
	Expect(t, act.OutCQ, &as, nd.Success, len(aOut.b))
	Expect(t, pas.InCQ, &br, nd.Success, len(aOut.b))
	if !bytes.Equal(bIn.b, aOut.b) {
		t.Fatalf("connection %d: the passive side received other bytes than sent", i)
	}
	sendBuf(t, pas, bOut, &bs, 0)
	Expect(t, pas.OutCQ, &bs, nd.Success, len(bOut.b))
	Expect(t, act.InCQ, &ar, nd.Success, len(bOut.b))
	if !bytes.Equal(aIn.b, bOut.b) {
		t.Fatalf("connection %d: the active side received other bytes than sent", i)
	}
	expectStatus(t, fmt.Sprintf("connection %d: Disconnect", i), act.Connector.Disconnect(ctx(t)), nd.Success)
	expectStatus(t, fmt.Sprintf("connection %d: passive NotifyDisconnect", i), pas.Connector.NotifyDisconnect(ctx(t)), nd.Success)
}
