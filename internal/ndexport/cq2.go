package ndexport

import (
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// CQ2 is ND v2's IND2CompletionQueue. GetResults takes the engine's
// completions through a list kept with the queue (under a lock of its own)
// and copies each into the consumer's ND2_RESULT.
type CQ2 struct {
	Base
	ad   *Adapter2
	file File
	cq   nd.CompletionQueue

	mu      sync.Mutex
	scratch []*nd.Result
}

func (q *CQ2) released() {}
func (q *CQ2) finalize() {
	q.cq.Close()
	q.ad.unhold()
}

// Resize is IND2CompletionQueue::Resize.
func (q *CQ2) Resize(depth uint32) nd.Status {
	if depth == 0 {
		return nd.ErrInvalidParameter1
	}
	return status(q.cq.Resize(int(min(uint64(depth), 1<<31))))
}

// Notify is IND2CompletionQueue::Notify.
func (q *CQ2) Notify(typ uint32, ov *ndabi.Overlapped) nd.Status {
	return notify(&q.Base, q.file, q.cq, typ, ov)
}

// GetResults is IND2CompletionQueue::GetResults: completed requests into
// the consumer's array out, oldest first per queue pair and direction; it
// returns how many. Each reaped request's slot is free again.
func (q *CQ2) GetResults(out []ndabi.Result2) int {
	if len(out) > maxResultsPerCall {
		out = out[:maxResultsPerCall]
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	filled := 0
	for filled < len(out) {
		n := min(len(out)-filled, len(q.scratch))
		k := q.cq.GetResults(q.scratch[:n])
		for i, res := range q.scratch[:k] {
			r := requestOf(res)
			o := &out[filled+i]
			o.Status = uint32(r.res.Status)
			o.BytesTransferred = uint32(r.res.BytesTransferred)
			o.QueuePairContext = 0
			if r.qp != nil {
				o.QueuePairContext = r.qp.context
			}
			o.RequestContext = r.ctx
			o.RequestType = r.typ
			q.scratch[i] = nil
			r.owner.reaped(r)
		}
		filled += k
		if k < n {
			break
		}
	}
	return filled
}
