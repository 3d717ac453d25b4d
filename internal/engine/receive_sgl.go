package engine

import "github.com/godirect/nd"

// setReceiveSGL copies sgl into wr's own entries (wr.sge, empty, reused
// between requests) and points wr.SGL at them. An entry outside memory
// registered with a presets the request's status to ND_ACCESS_VIOLATION:
// the Receive is accepted and completes with it, as ND reports no
// immediate status for it.
func (wr *WorkRequest) setReceiveSGL(a *Adapter, sgl []nd.SGE) {
	for i := range sgl {
		wr.sge = append(wr.sge, sgl[i])
		if !ownedBy(a, &wr.sge[len(wr.sge)-1]) {
			wr.status, wr.preset = nd.ErrAccessViolation, true
		}
	}
	wr.SGL = wr.sge
}
