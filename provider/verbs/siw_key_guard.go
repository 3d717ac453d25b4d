//go:build verbs && linux

package verbs

import (
	"errors"
	"sync"
)

// rdma-core's libsiw maps every queue it creates (completion queue, queue
// pair, shared receive queue) through a key the kernel gives it, an offset
// into the device file. The kernel hands out keys first fit, by pages, from
// 0, reusing freed ones; libsiw takes the key 0x90000 (SIW_INVAL_UOBJ_KEY,
// one past SIW_UOBJ_MAX_KEY) for the kernel's "no key" and fails the
// creation, without setting errno. So in a device context whose queues
// mapped 576 KiB (page 0x90 is the first free one), every creation fails:
// the failed queue's pages are freed, and the next one gets the same key.
// ndtest's SharedCQ cases, with two 256 KiB completion queues, failed at
// the fourth connection.
//
// The guard: before anything else maps in a siw context, a completion
// queue whose mapping spans page 0x90 is created and kept for the
// process's life (librdmacm keeps its device contexts as long), so that no
// later queue can start there. siw rounds a completion queue up to a power
// of two entries of 32 bytes, so keyGuardEntries entries map 1 MiB and 8
// bytes, pages 0 to 0x100.
const (
	siwVendorID     = 0x626d74 // "bmt", siw's vendor_id
	keyGuardEntries = 32768
)

var keyGuards struct {
	mu   sync.Mutex
	made map[cContext]bool
}

// guardKeys makes the guard of siw context ctx once.
func guardKeys(ctx cContext, d devInfo) {
	if d.vendor != siwVendorID {
		return
	}
	keyGuards.mu.Lock()
	defer keyGuards.mu.Unlock()
	if keyGuards.made[ctx] {
		return
	}
	if keyGuards.made == nil {
		keyGuards.made = map[cContext]bool{}
	}
	// Without the guard the context works until its queues reach the key.
	keyGuards.made[ctx] = createKeyGuard(ctx, keyGuardEntries) == nil
}

// errLibrarySilent is the cause of a creation that the device's user-space
// library failed without setting errno (libsiw refusing a key, above).
var errLibrarySilent = errors.New("the device's library refused it without an errno (libsiw refuses the memory-map key 0x90000)")
