package enforce

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/batch"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
)

// What the external tests (which may import pkg/enforce/postgres, as the
// package itself cannot) need of the internals.

// Batcher is the batcher, for TestOneFailingCallDoesNotDecideItsBatch.
type Batcher struct{ b *batch.Batcher }

func NewBatcher(st CounterStore) *Batcher { return &Batcher{batch.New(st)} }

func (b *Batcher) Work(ctx context.Context) { b.b.Work(ctx) }

func (b *Batcher) Take(ctx context.Context, req TakeRequest) (TakeResult, error) {
	return b.b.Take(ctx, req, 0)
}

// Queued is how many calls wait for a worker.
func (b *Batcher) Queued() int { return b.b.Queued() }

// Snapshot is a loaded snapshot, for BenchmarkReload.
type Snapshot struct{ s *snapshot }

// LoadSnapshot loads everything from src.
func LoadSnapshot(ctx context.Context, src Source, now time.Time) (Snapshot, error) {
	s, _, err := snapshots.Load(ctx, src, nil, snapshots.Changes{All: true}, now, newViewCache)
	return Snapshot{s}, err
}

// ReloadAfter reloads prev after ch (nil: everything), as the refresh loop
// would, and reports how many rows it read.
func ReloadAfter(ctx context.Context, src Source, prev Snapshot, ch *Change, now time.Time) (rows int, err error) {
	c := snapshots.Changes{All: ch == nil}
	if ch != nil {
		c.Add(*ch)
	}
	_, n, err := snapshots.Load(ctx, src, prev.s, c, now, newViewCache)
	return n.Definitions + n.Memberships + n.Admins, err
}
