package enforce

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/internal/store"
)

// maxBatch bounds how many decisions share one round trip.
const maxBatch = 32

// takeRequest is one decision waiting for its counter round trip.
type takeRequest struct {
	ctx   context.Context
	req   store.TakeRequest
	reply chan takeReply
}

type takeReply struct {
	res store.TakeResult
	err error
}

// batcher sends decisions to PostgreSQL. Each worker holds no connection
// while idle; when it wakes for a decision it takes every other decision
// already waiting (up to maxBatch) into the same round trip. A lone
// decision waits for nobody, so latency at low load is one round trip,
// while under load the round trips, statements and commits per decision
// fall with the batch size.
type batcher struct {
	store *store.Store
	queue chan *takeRequest
}

func newBatcher(st *store.Store) *batcher {
	return &batcher{store: st, queue: make(chan *takeRequest, 4096)}
}

// take queues a decision and waits for it, or for ctx to end.
func (b *batcher) take(ctx context.Context, req store.TakeRequest) (store.TakeResult, error) {
	r := &takeRequest{ctx: ctx, req: req, reply: make(chan takeReply, 1)}
	select {
	case b.queue <- r:
	case <-ctx.Done():
		return store.TakeResult{}, ctx.Err()
	}
	select {
	case rep := <-r.reply:
		return rep.res, rep.err
	case <-ctx.Done():
		return store.TakeResult{}, ctx.Err()
	}
}

// work serves the queue until ctx ends.
func (b *batcher) work(ctx context.Context) {
	batch := make([]*takeRequest, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case r := <-b.queue:
			batch = append(batch, r)
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-b.queue:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		b.send(ctx, batch)
	}
}

func (b *batcher) send(ctx context.Context, batch []*takeRequest) {
	// A decision whose caller gave up is left out: it must not consume.
	live := batch[:0]
	var deadline time.Time
	for _, r := range batch {
		if r.ctx.Err() != nil {
			r.reply <- takeReply{err: r.ctx.Err()}
			continue
		}
		live = append(live, r)
		if d, ok := r.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
	}
	if len(live) == 0 {
		return
	}
	sendCtx, cancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		sendCtx, cancel = context.WithDeadline(ctx, deadline)
	}
	reqs := make([]store.TakeRequest, len(live))
	for i, r := range live {
		reqs[i] = r.req
	}
	res, err := b.store.TakeBatch(sendCtx, reqs)
	cancel()
	for i, r := range live {
		if err != nil {
			r.reply <- takeReply{err: err}
			continue
		}
		r.reply <- takeReply{res: res[i]}
	}
}
