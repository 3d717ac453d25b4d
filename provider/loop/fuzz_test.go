package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/loop"
)

const (
	guardLen  = 64
	regionLen = 256
	guardByte = 0xA5
)

// fuzzSide is one endpoint of the pair with an arena laid out as
// [guard | registered region | guard] and the windows it bound.
type fuzzSide struct {
	s       *ndtest.Side
	arena   []byte
	mr      nd.MemoryRegion
	windows []nd.MemoryWindow
	descs   []nd.MWDescriptor
}

func (f *fuzzSide) region() []byte { return f.arena[guardLen : guardLen+regionLen] }

// program reads the fuzzer's bytes as a sequence of small numbers.
type program struct{ b []byte }

func (p *program) next() int {
	if len(p.b) == 0 {
		return 0
	}
	v := int(p.b[0])
	p.b = p.b[1:]
	return v
}

// sgl builds up to 3 entries with offsets and lengths anywhere in the arena
// (inside the registration or not), each naming the region or inline data.
func (p *program) sgl(f *fuzzSide) []nd.SGE {
	n := p.next() % 4
	sgl := make([]nd.SGE, n)
	for i := range sgl {
		off := p.next() * len(f.arena) / 256
		ln := p.next() % 80
		if off+ln > len(f.arena) {
			ln = len(f.arena) - off
		}
		sgl[i].Buffer = f.arena[off : off+ln]
		if p.next()%5 != 0 {
			sgl[i].Region = f.mr
		}
	}
	return sgl
}

func (p *program) descriptor(peer *fuzzSide) nd.MWDescriptor {
	if len(peer.descs) > 0 && p.next()%4 != 0 {
		return peer.descs[p.next()%len(peer.descs)]
	}
	return nd.MWDescriptor{Base: uint64(p.next()) << 8, Length: uint64(p.next()), Token: uint32(p.next())}
}

// checkStatus fails the test unless err is nil or an ND status ND names.
func checkStatus(t *testing.T, op string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var st nd.Status
	if !errors.As(err, &st) || strings.HasPrefix(st.Name(), "ND_STATUS_") {
		t.Fatalf("%s returned %v, which is not an ND status", op, err)
	}
}

// FuzzAPISequence drives random sequences of posting calls with random
// arguments against a connected pair. Every call must return an ND status,
// no byte outside a registration may change, and every request accepted
// must complete exactly once.
func FuzzAPISequence(f *testing.F) {
	f.Add([]byte{0, 1, 10, 20, 1, 1, 1, 10, 20, 1, 9, 9})
	f.Add([]byte{4, 0, 255, 255, 3, 1, 1, 0, 10, 1, 2, 1, 0, 40, 1, 5, 0})
	f.Add([]byte{6, 1, 0, 0, 7, 3, 0, 5, 0, 8, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		pair := ndtest.NewPair(t, loop.New(), ndtest.PairConfig{})
		sides := [2]*fuzzSide{{s: pair.Active}, {s: pair.Passive}}
		for _, fs := range sides {
			fs.arena = make([]byte, guardLen+regionLen+guardLen)
			for i := range fs.arena {
				fs.arena[i] = guardByte
			}
			fs.mr = fs.s.Register(t, fs.region())
		}
		posted := make(map[*nd.Result]bool) // accepted requests; true: may be silent
		p := &program{b: data}
		for steps := 0; len(p.b) > 0 && steps < 64; steps++ {
			side, peer := sides[p.next()%2], sides[0]
			if side == sides[0] {
				peer = sides[1]
			}
			ep := side.s.Endpoint
			res := new(nd.Result)
			var err error
			op := p.next() % 10
			var flags nd.Flags
			if op <= 5 {
				flags = nd.Flags(p.next() % 8)
			}
			switch op {
			case 0:
				err = ep.Send(res, p.sgl(side), flags)
			case 1:
				err = ep.Receive(res, p.sgl(side))
			case 2:
				err = ep.Read(res, p.sgl(side), p.descriptor(peer), uint64(p.next()), flags&3)
			case 3:
				err = ep.Write(res, p.sgl(side), p.descriptor(peer), uint64(p.next()), flags&3)
			case 4:
				err = ep.SendAndInvalidate(res, p.sgl(side), p.descriptor(peer), flags)
			case 5:
				mw, _ := side.s.Adapter.CreateMemoryWindow(nil)
				off := p.next() % regionLen
				ln := p.next() % (regionLen - off + 1)
				var d nd.MWDescriptor
				flags = nd.Flags(p.next() % 32)
				d, err = ep.Bind(res, side.mr, mw, side.region()[off:off+ln], flags)
				if err == nil {
					side.windows, side.descs = append(side.windows, mw), append(side.descs, d)
				}
			case 6:
				if len(side.windows) > 0 {
					flags = nd.Flags(p.next() % 4)
					err = ep.Invalidate(res, side.windows[p.next()%len(side.windows)], flags)
				} else {
					res = nil
				}
			case 7:
				checkStatus(t, "Flush", ep.Flush())
				res = nil
			case 8:
				var out [4]*nd.Result
				for _, cq := range []nd.CompletionQueue{side.s.InCQ, side.s.OutCQ} {
					n := cq.GetResults(out[:p.next()%5])
					for _, r := range out[:n] {
						if _, ok := posted[r]; !ok {
							t.Fatalf("GetResults returned %p, which was never posted or came back twice", r)
						}
						delete(posted, r)
					}
				}
				res = nil
			case 9:
				c, cancel := context.WithTimeout(context.Background(), ndtest.Timeout)
				checkStatus(t, "Disconnect", side.s.Connector.Disconnect(c))
				cancel()
				res = nil
			}
			checkStatus(t, "post", err)
			if res != nil && err == nil {
				posted[res] = flags&nd.FlagSilentSuccess != 0
			}
		}
		// End both connections: everything accepted completes.
		for _, fs := range sides {
			fs.s.Endpoint.Flush()
		}
		var out [16]*nd.Result
		for _, fs := range sides {
			for _, cq := range []nd.CompletionQueue{fs.s.InCQ, fs.s.OutCQ} {
				for n := cq.GetResults(out[:]); n > 0; n = cq.GetResults(out[:]) {
					for _, r := range out[:n] {
						if _, ok := posted[r]; !ok {
							t.Fatalf("GetResults returned %p, which was never posted or came back twice", r)
						}
						checkStatus(t, "completion", r.Status.Err())
						delete(posted, r)
					}
				}
			}
		}
		for r, silent := range posted {
			if !silent || r.Status != nd.Success {
				t.Fatalf("a request accepted by its post never completed (status now %v)", r.Status)
			}
		}
		for _, fs := range sides {
			for i, b := range fs.arena {
				if (i < guardLen || i >= guardLen+regionLen) && b != guardByte {
					t.Fatalf("byte %d outside the registration changed to %#x", i, b)
				}
			}
		}
	})
}
