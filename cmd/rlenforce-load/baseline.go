package main

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// baseline does what the reference design does: for each gate, one after
// another, a durable conditional increment in its own round trip
// ("increment only when under the limit"), stopping at the first denial.
// It resolves gates the same way (the same three per call), so the
// difference measured is the counter protocol alone.
type baseline struct {
	pool *pgxpool.Pool
}

func newBaseline(ctx context.Context, pool *pgxpool.Pool) (*baseline, error) {
	_, err := pool.Exec(ctx, `create table if not exists load_baseline_counters (
		key text primary key, count bigint not null, expires_at timestamptz not null)`)
	return &baseline{pool: pool}, err
}

func (b *baseline) drop() {
	_, _ = b.pool.Exec(context.Background(), `drop table if exists load_baseline_counters`)
}

func (b *baseline) decide(ctx context.Context, c enforce.Call) error {
	window := time.Now().Unix() / 3600
	w := strconv.FormatInt(window, 10)
	keys := []string{
		"clr:group:user:" + c.Username + ":3600:" + w,
		"ctg:group:user:" + c.Username + "|" + c.TargetName + ":3600:" + w,
		"tgt:server_group:" + c.TargetName + ":3600:" + w,
	}
	for _, k := range keys {
		tag, err := b.pool.Exec(ctx, `
			insert into load_baseline_counters (key, count, expires_at) values ($1, 1, now() + interval '2 hours')
			on conflict (key) do update set count = load_baseline_counters.count + 1
			where load_baseline_counters.count < $2`, k, 1_000_000_000)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // denied: stop at the first denying gate, as the reference does
		}
	}
	return nil
}
