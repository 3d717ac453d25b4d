package ndexport

import (
	"context"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// CQ1 is ND v1's INDCompletionQueue.
type CQ1 struct {
	Base
	ad *Adapter1
	cq nd.CompletionQueue
}

func (q *CQ1) released() {}
func (q *CQ1) finalize() {
	q.cq.Close()
	q.ad.unhold()
}

// Resize is INDCompletionQueue::Resize.
func (q *CQ1) Resize(entries uintptr) nd.Status { return status(q.cq.Resize(size(entries))) }

// Notify is INDCompletionQueue::Notify: the request completes when the
// queue fires for typ (ND_CQ_NOTIFY_ERRORS, _ANY or _SOLICITED, else
// ND_INVALID_PARAMETER_1), with ND_SUCCESS, ND_BUFFER_OVERFLOW when the
// queue overran, or ND_CANCELED.
func (q *CQ1) Notify(typ uint32, ov *ndabi.Overlapped) nd.Status {
	return notify(&q.Base, q.ad.file, q.cq, typ, ov)
}

// notify is Notify of ND v1 and v2.
func notify(b *Base, f File, cq nd.CompletionQueue, typ uint32, ov *ndabi.Overlapped) nd.Status {
	if typ > uint32(nd.NotifySolicited) {
		return nd.ErrInvalidParameter1
	}
	if ov == nil {
		return nd.ErrInvalidParameter2
	}
	return b.start(f, ov, nd.ErrInvalidParameter2, func(ctx context.Context) nd.Status {
		return status(cq.Notify(ctx, nd.NotifyType(typ)))
	})
}

// maxResultsPerCall bounds what one GetResults call takes, so that a count
// from the consumer never sizes anything.
const maxResultsPerCall = 1 << 16

// GetResults is INDCompletionQueue::GetResults: the consumer's ND_RESULT
// pointers of completed requests into results (the consumer's array),
// their Status and BytesTransferred written first; it returns how many.
func (q *CQ1) GetResults(results []*nd.Result) int {
	if len(results) > maxResultsPerCall {
		results = results[:maxResultsPerCall]
	}
	return q.cq.GetResults(results)
}
