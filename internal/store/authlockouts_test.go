package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
)

// LiftAuthLockout deletes the address's lockout and failures (every
// window) in its scope, nothing of another address or scope, and its
// notice goes out when the transaction commits, never for one rolled
// back (a dry run).
func TestLiftAuthLockout(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, dsn, store.Opts{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "listen "+store.AuthLockoutsChannel); err != nil {
		t.Fatal(err)
	}
	lockout, failures60, failures120 := counterkey.AuthLockout("rlapi", "1.2.3.4").String(),
		counterkey.AuthFailures("rlapi", 60, "1.2.3.4").String(), counterkey.AuthFailures("rlapi", 120, "1.2.3.4").String()
	keys := []string{lockout, failures60, failures120,
		counterkey.AuthLockout("rlapi", "11.2.3.4").String(), counterkey.AuthFailures("rlapi", 60, "11.2.3.4").String(),
		counterkey.AuthLockout("gateway", "1.2.3.4").String(), counterkey.Caller(60, "ip:1.2.3.4").String()}
	lift := store.AuthAddressKeys{Lockout: lockout, Notice: counterkey.AuthLockoutID("rlapi", "1.2.3.4")}
	lift.FailuresPrefix, lift.FailuresSuffix = counterkey.AuthFailuresPattern("rlapi", "1.2.3.4")
	for _, k := range keys {
		if _, err := s.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ($1, 1, 1, now() + interval '1 hour')`, k); err != nil {
			t.Fatal(err)
		}
	}
	errRollback := errors.New("dry run")
	if err := s.InTx(ctx, func(q *store.Queries) error {
		if _, err := q.LiftAuthLockout(ctx, lift); err != nil {
			return err
		}
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	var deleted []store.CounterRow
	if err := s.InTx(ctx, func(q *store.Queries) (err error) {
		deleted, err = q.LiftAuthLockout(ctx, lift)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range deleted {
		got = append(got, r.Key)
	}
	slices.Sort(got)
	if want := []string{failures120, failures60, lockout}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `select count(*) from rl_counters`).Scan(&left); err != nil || left != 4 {
		t.Errorf("%d counters left (%v), want the other address's, the other scope's and the call's", left, err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil || n.Payload != "rlapi|1.2.3.4" {
		t.Fatalf("notice %+v, %v; want rlapi|1.2.3.4 once, after the commit", n, err)
	}
	// The rolled-back lift sent nothing: the one notice was the commit's.
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if n, err := listener.WaitForNotification(wctx); err == nil {
		t.Errorf("a second notice %+v: the rolled-back lift notified", n)
	}
}
