//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"context"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// TestInlineWithBadEntry posts, through each ND version, a Send and a
// Write that mix an inline entry with one whose region was deregistered:
// ND v2's inline posting would copy every entry's bytes without looking at
// its registration, so such a request goes without it, and the provider
// fails it ND_ACCESS_VIOLATION, as nd says, instead of copying what the
// entry names.
func TestInlineWithBadEntry(t *testing.T) {
	for _, v := range []int{2, 1} {
		for _, write := range []bool{false, true} {
			name := versionName(v) + "/Send"
			if write {
				name = versionName(v) + "/Write"
			}
			t.Run(name, func(t *testing.T) {
				p := dllProvider(t, transports[0].class, v)
				pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
				a, b := pr.Active, pr.Passive
				if a.Inline < 8 {
					t.Skipf("the endpoint grants %d bytes of inline data", a.Inline)
				}
				dst := make([]byte, 64)
				dmr := b.Register(t, dst)
				var recv nd.Result
				if err := b.Endpoint.Receive(&recv, []nd.SGE{{Buffer: dst, Region: dmr}}); err != nil {
					t.Fatal(err)
				}
				gone := make([]byte, 16)
				mr, err := a.Adapter.RegisterMemory(context.Background(), gone)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Adapter.DeregisterMemory(context.Background(), mr); err != nil {
					t.Fatal(err)
				}
				sgl := []nd.SGE{{Buffer: []byte("inline!!")}, {Buffer: gone, Region: mr}}
				var res nd.Result
				if write {
					mw, err := b.Adapter.CreateMemoryWindow(nil)
					if err != nil {
						t.Fatal(err)
					}
					defer mw.Close()
					var bind nd.Result
					desc, err := b.Endpoint.Bind(&bind, dmr, mw, dst, nd.FlagAllowWrite)
					if err != nil {
						t.Fatal(err)
					}
					ndtest.Expect(t, b.OutCQ, &bind, nd.Success, -1)
					err = a.Endpoint.Write(&res, sgl, desc, 0, 0)
					if err != nil {
						t.Fatalf("Write: %v", err)
					}
				} else if err := a.Endpoint.Send(&res, sgl, 0); err != nil {
					t.Fatalf("Send: %v", err)
				}
				ndtest.Expect(t, a.OutCQ, &res, nd.ErrAccessViolation, -1)
			})
		}
	}
}
