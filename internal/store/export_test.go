package store

import (
	"context"
	"time"
)

// ExplainCounters returns PostgreSQL's plan (EXPLAIN (format json)) of the
// statement CountersOf (reset false) or ResetCounters (reset true) runs for
// sel, without running it.
func (q *Queries) ExplainCounters(ctx context.Context, sel CounterSelector, now time.Time, reset bool) ([]byte, error) {
	sel, err := q.resolved(ctx, sel)
	if err != nil {
		return nil, err
	}
	sql, args, err := countersOfSQL(sel, now, 0)
	if reset {
		sql, args, err = resetCountersSQL(sel, now)
	}
	if err != nil {
		return nil, err
	}
	var plan []byte
	err = q.db.QueryRow(ctx, `explain (format json) `+sql, args...).Scan(&plan)
	return plan, err
}

// BucketPrefix is bucketPrefix, for the test that holds it to the key
// type's grammar.
var BucketPrefix = bucketPrefix
