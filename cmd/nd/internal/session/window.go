package session

import (
	"fmt"

	"github.com/godirect/nd"
)

// BindWindow creates a memory window and binds it on s's endpoint over buf,
// which lies in mr, with rights (nd.FlagAllowRead and/or nd.FlagAllowWrite).
// res is the Bind's Result, which completes on s's queue in order with the
// endpoint's other outbound requests. The caller closes the window.
func (s *Session) BindWindow(res *nd.Result, mr nd.MemoryRegion, buf []byte, rights nd.Flags) (nd.MemoryWindow, nd.MWDescriptor, error) {
	mw, err := s.Adapter.CreateMemoryWindow(nil)
	if err != nil {
		return nil, nd.MWDescriptor{}, fmt.Errorf("CreateMemoryWindow: %w", err)
	}
	desc, err := s.EP.Bind(res, mr, mw, buf, rights)
	if err != nil {
		mw.Close()
		return nil, nd.MWDescriptor{}, fmt.Errorf("binding %d bytes: %w", len(buf), err)
	}
	return mw, desc, nil
}
