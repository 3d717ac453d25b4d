package engine

import "github.com/godirect/nd"

// receiveLength checks a Receive's scatter list, whether posted to an
// endpoint or to a shared receive queue: at most maxSGE entries
// (ND_DATA_OVERRUN) and at most a's MaxInboundLength bytes in all
// (ND_BUFFER_OVERFLOW). It returns the list's byte count.
func receiveLength(a *Adapter, sgl []nd.SGE, maxSGE int) (int, nd.Status) {
	if len(sgl) > maxSGE {
		return 0, nd.ErrDataOverrun
	}
	total := 0
	for i := range sgl {
		total += len(sgl[i].Buffer)
	}
	if total > a.info.MaxInboundLength {
		return 0, nd.ErrBufferOverflow
	}
	return total, nd.Success
}

// setReceiveSGL copies sgl into wr's own entries (wr.sge, empty, reused
// between requests) and points wr.SGL at them. An entry outside memory
// registered with a presets the request's status to ND_ACCESS_VIOLATION:
// the Receive is accepted and completes with it, as ND reports no
// immediate status for it.
func (wr *WorkRequest) setReceiveSGL(a *Adapter, sgl []nd.SGE) {
	for i := range sgl {
		if !ownedBy(a, sgl[i]) {
			wr.status, wr.preset = nd.ErrAccessViolation, true
		}
		wr.sge = append(wr.sge, sgl[i])
	}
	wr.SGL = wr.sge
}
