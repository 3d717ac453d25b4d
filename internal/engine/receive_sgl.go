package engine

import "github.com/godirect/nd"

// setReceiveSGL copies sgl into wr's own entries (wr.sge, empty, reused
// between requests) and points wr.SGL at them. An entry outside memory
// registered with a presets the request's status to ND_ACCESS_VIOLATION:
// the Receive is accepted and completes with it, as ND reports no
// immediate status for it.
func (wr *WorkRequest) setReceiveSGL(a *Adapter, sgl []nd.SGE) {
	for i := range sgl {
		if !ownedBy(a, wr.appendSGE(&sgl[i])) {
			wr.status, wr.preset, wr.cause = nd.ErrAccessViolation, true, nd.CauseLocalAccess
		}
	}
	wr.SGL = wr.sge
}

// appendSGE appends a copy of *src to wr.sge and returns the new entry.
// The caller checked the number of entries against the queue's SGE limit,
// which is sge's capacity. Field by field, not append(wr.sge, *src): see
// reset.
func (wr *WorkRequest) appendSGE(src *nd.SGE) *nd.SGE {
	n := len(wr.sge)
	wr.sge = wr.sge[:n+1]
	e := &wr.sge[n]
	e.Buffer, e.Region = src.Buffer, src.Region
	return e
}
