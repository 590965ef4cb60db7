package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

func gate(key string, limit int64, now time.Time) store.Gate {
	return store.Gate{Key: key, WindowIndex: now.Unix() / 60, Limit: limit, Enforce: true, ExpiresAt: now.Add(2 * time.Minute)}
}

func takeOne(key string, limit int64, now time.Time) store.TakeRequest {
	return store.TakeRequest{Gates: []store.Gate{gate(key, limit, now)}, Cost: 1, Consume: true}
}

// TestTakeBatchWithBadKeysDecidesEveryCall: keys with a NUL or bytes that
// are not UTF-8 (what a percent-decoded path or a raw header can carry) are
// stored harmlessly, so the batch they share with other calls is decided
// as a whole instead of failing for all of them (SQLSTATE 22021).
func TestTakeBatchWithBadKeysDecidesEveryCall(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	// alice has used up her limit of 1; bob has room.
	if _, err := s.TakeBatch(ctx, []store.TakeRequest{takeOne("c|60|user:alice", 1, now)}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	bad := []string{"ct|60|user:x|mcp_server:x\x00", "ct|60|user:x|mcp_server:srvx\xff", "ct|60|user:x|mcp_server:srvx\x01ff", "ct|60|user:x|mcp_server:srvx\xfe"}
	reqs := []store.TakeRequest{takeOne("c|60|user:alice", 1, now)}
	for _, k := range bad {
		reqs = append(reqs, takeOne(k, 5, now))
	}
	reqs = append(reqs, takeOne("c|60|user:bob", 1, now))
	res, err := s.TakeBatch(ctx, reqs, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatalf("batch with bad keys: %v", err)
	}
	if res[0].Allowed {
		t.Error("alice, past her limit, was allowed")
	}
	for i := range bad {
		if !res[1+i].Allowed || res[1+i].Counts[0] != 1 {
			t.Errorf("bad key %q: %+v, want allowed with count 1 (distinct keys stay distinct)", bad[i], res[1+i])
		}
	}
	if last := res[len(res)-1]; !last.Allowed {
		t.Error("bob, under his limit, was denied")
	}
	rows, err := s.Counters(ctx, "ct|60|user:x|", now, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(bad) {
		t.Fatalf("stored %d counters for %d distinct bad keys: %+v", len(rows), len(bad), rows)
	}
	for _, r := range rows {
		if !utf8.ValidString(r.Key) {
			t.Errorf("stored key %q is not UTF-8", r.Key)
		}
	}
}

func TestCounterKeyText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"c|60|user:alice":   "c|60|user:alice",
		"user:ünï|€":        "user:ünï|€",
		"a\x00b":            "a\x0100b",
		"a\xffb":            "a\x01ffb",
		"a\x01ffb":          "a\x0101ffb",
		"\xe2\x82":          "\x01e2\x0182",
		"valid \ufffd kept": "valid \ufffd kept",
	} {
		if got := store.CounterKeyText(in); got != want {
			t.Errorf("CounterKeyText(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCounterKeyText(f *testing.F) {
	for _, s := range []string{"", "a", "a\x00", "\xff\xfe", "\x01", "€"} {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := store.CounterKeyText(a), store.CounterKeyText(b)
		if !utf8.ValidString(ka) || strings.ContainsRune(ka, 0) {
			t.Fatalf("CounterKeyText(%q) = %q: not text PostgreSQL holds", a, ka)
		}
		if (a == b) != (ka == kb) {
			t.Fatalf("%q and %q map to %q and %q", a, b, ka, kb)
		}
	})
}

// TestTakeBatchDeadlineIsTheServers: a statement stuck behind a lock past
// its deadline is aborted by PostgreSQL itself (statement_timeout), so the
// caller hears a failure that changed nothing, not a timeout after which
// the statement goes on and commits once the lock is gone.
func TestTakeBatchDeadlineIsTheServers(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	req := []store.TakeRequest{takeOne("t|blocked", 100, now)}
	if _, err := s.TakeBatch(ctx, req, time.Time{}); err != nil { // the row exists, count 1
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // released below
	if _, err := tx.Exec(ctx, `lock table rl_counters in exclusive mode`); err != nil {
		t.Fatal(err)
	}
	// ctx outlives the deadline by far: only the server can end the wait.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = s.TakeBatch(wctx, req, time.Now().Add(200*time.Millisecond))
	if err == nil || !errors.Is(err, store.ErrNotApplied) || !errors.Is(err, store.ErrTimedOut) || wctx.Err() != nil {
		t.Fatalf("blocked take: %v (ctx %v), want the server's abort (ErrNotApplied)", err, wctx.Err())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Counters(ctx, "t|blocked", now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Count != 1 {
		t.Errorf("after the aborted take: %+v, want the one count taken before", rows)
	}
}

// TestSweepRemovesEveryExpiredCounter: one sweep removes all the expired
// counters, however many batches that takes, and nothing live.
func TestSweepRemovesEveryExpiredCounter(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	if _, err := s.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at)
		select 'c|1|user:u' || i, 1, 1, $1::timestamptz from generate_series(1, 12345) i`, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at)
		select 'c|1|user:live' || i, 2, 1, $1::timestamptz from generate_series(1, 7) i`, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	removed, ran, err := s.SweepCounters(sctx, now, 1000)
	if err != nil || !ran {
		t.Fatalf("sweep: removed %d, ran %v, %v", removed, ran, err)
	}
	var left, live int
	if err := s.Pool().QueryRow(ctx, `select count(*) filter (where expires_at <= $1), count(*) filter (where expires_at > $1) from rl_counters`, now).Scan(&left, &live); err != nil {
		t.Fatal(err)
	}
	if removed != 12345 || left != 0 || live != 7 {
		t.Errorf("one sweep removed %d of 12345 expired counters, left %d expired and %d of 7 live", removed, left, live)
	}
}

// TestCounterSweepOneReplicaAtATime: the counter sweep (which also ends
// the failed-credential lockouts' and the violations' counters) runs on
// one replica at a time: while another replica's sweep holds its lock
// (here an open transaction of a second store on the same database, as a
// batch in progress holds it), a sweep removes nothing and says it did not
// run; once the lock is free it removes the expired counters.
func TestCounterSweepOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	a := pgtest.NewStore(t)
	ctx := context.Background()
	b, err := store.Open(ctx, a.Pool().Config().ConnString(), store.Opts{ApplicationName: "replica-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	if _, err := a.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at)
		select 'al|rlapi|ip:192.0.2.' || i, 1, 1, $1::timestamptz from generate_series(1, 50) i`, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		t.Helper()
		if err := a.Pool().QueryRow(ctx, `select count(*) from rl_counters`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var held bool
	if err := tx.QueryRow(ctx, `select pg_try_advisory_xact_lock(hashtext('rlctl counter sweep'))`).Scan(&held); err != nil || !held {
		t.Fatalf("taking the sweep lock as replica b: %v, %v", held, err)
	}
	removed, ran, err := a.SweepCounters(ctx, now, 1000)
	if err != nil || ran || removed != 0 || count() != 50 {
		t.Errorf("sweep while b holds the lock: removed %d, ran %v, %v, %d rows; want it not run, 50 rows left", removed, ran, err, count())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	removed, ran, err = a.SweepCounters(ctx, now, 1000)
	if err != nil || !ran || removed != 50 || count() != 0 {
		t.Errorf("sweep after b let go: removed %d, ran %v, %v, %d rows; want 50 removed", removed, ran, err, count())
	}
}
