package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// takeCase is one call against counters that already hold counts: the
// gates' limits, kinds and starting counts, the call's cost and whether it
// consumes, and optionally one gate (race) that another transaction fills
// to raceTo after rl_take has read it without a lock and before it locks it.
type takeCase struct {
	name    string
	limits  []int64
	shadow  []bool
	start   []int64
	cost    int64
	consume bool
	race    int // 1-based gate index; 0: no race
	raceTo  int64
}

var takeCases = []takeCase{
	{name: "fits", limits: []int64{5, 5, 5}, shadow: []bool{false, false, false}, start: []int64{0, 2, 4}, cost: 1, consume: true},
	{name: "fits exactly with cost 3", limits: []int64{5, 9}, shadow: []bool{false, false}, start: []int64{2, 6}, cost: 3, consume: true},
	{name: "one enforce gate full", limits: []int64{5, 5, 5}, shadow: []bool{false, false, false}, start: []int64{1, 5, 0}, cost: 1, consume: true},
	{name: "cost 3 does not fit", limits: []int64{5, 10}, shadow: []bool{false, false}, start: []int64{3, 0}, cost: 3, consume: true},
	{name: "shadow gate full, enforce gates fit", limits: []int64{3, 5, 5}, shadow: []bool{true, false, false}, start: []int64{3, 1, 0}, cost: 1, consume: true},
	{name: "shadow gate full with cost 2", limits: []int64{5, 5}, shadow: []bool{false, true}, start: []int64{0, 4}, cost: 2, consume: true},
	{name: "shadow has room, enforce gate full", limits: []int64{5, 2}, shadow: []bool{true, false}, start: []int64{0, 2}, cost: 1, consume: true},
	{name: "only shadow gates, all full", limits: []int64{1, 1}, shadow: []bool{true, true}, start: []int64{1, 1}, cost: 1, consume: true},
	{name: "fresh counters", limits: []int64{5, 5}, shadow: []bool{false, true}, start: []int64{-1, -1}, cost: 2, consume: true},
	{name: "peek with room", limits: []int64{5, 5}, shadow: []bool{false, true}, start: []int64{1, 5}, cost: 1, consume: false},
	{name: "peek that would be denied", limits: []int64{5, 5}, shadow: []bool{false, false}, start: []int64{5, 0}, cost: 2, consume: false},
	{name: "enforce gate lost a race", limits: []int64{5, 5, 5}, shadow: []bool{false, false, false}, start: []int64{1, 1, 1}, cost: 2, consume: true, race: 2, raceTo: 4},
	{name: "first gate lost a race", limits: []int64{5, 5}, shadow: []bool{false, false}, start: []int64{0, 0}, cost: 1, consume: true, race: 1, raceTo: 5},
	{name: "shadow gate lost a race", limits: []int64{5, 5}, shadow: []bool{false, true}, start: []int64{0, 0}, cost: 2, consume: true, race: 2, raceTo: 4},
	{name: "race leaves room", limits: []int64{5, 5}, shadow: []bool{false, false}, start: []int64{0, 0}, cost: 2, consume: true, race: 1, raceTo: 3},
}

// TestTakeOneCallAndBatchPathsAgree: rl_take decides a lone call on one
// path and a batch of calls on another; given the same call against the
// same counts (shadow gates, cost above 1, a gate that lost a race, a
// peek), both answer the same and leave the same counts.
func TestTakeOneCallAndBatchPathsAgree(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	now := time.Now()
	for i, c := range takeCases {
		t.Run(c.name, func(t *testing.T) {
			one, oneRows := runTakeCase(t, s, fmt.Sprintf("one%d|", i), c, now, false)
			batch, batchRows := runTakeCase(t, s, fmt.Sprintf("batch%d|", i), c, now, true)
			if !reflect.DeepEqual(one, batch) {
				t.Errorf("one call: %+v; in a batch: %+v", one, batch)
			}
			if !reflect.DeepEqual(oneRows, batchRows) {
				t.Errorf("counts left by one call %v, by a batch %v", oneRows, batchRows)
			}
			if c.race == 0 && c.consume && one.Allowed != allFit(c) {
				t.Errorf("allowed = %v, want %v", one.Allowed, allFit(c))
			}
		})
	}
}

// allFit is the expected decision of a call without a race.
func allFit(c takeCase) bool {
	for i, l := range c.limits {
		if !c.shadow[i] && max(c.start[i], 0)+c.cost > l {
			return false
		}
	}
	return true
}

// runTakeCase sets up c's counters under prefix and decides its call: alone
// (rl_take's one-call path) or, with batch, followed by a peek on another
// counter (its batch path). It returns the call's result and the counts
// stored afterwards, in gate order.
func runTakeCase(t *testing.T, s *store.Store, prefix string, c takeCase, now time.Time, batch bool) (store.TakeResult, []int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := store.TakeRequest{Cost: c.cost, Consume: c.consume}
	for i, l := range c.limits {
		g := gate(fmt.Sprintf("%sg%d", prefix, i), l, now)
		g.Enforce = !c.shadow[i]
		req.Gates = append(req.Gates, g)
		if c.start[i] < 0 {
			continue
		}
		if _, err := s.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ($1, $2, $3, $4)`,
			g.Key, g.WindowIndex, c.start[i], g.ExpiresAt); err != nil {
			t.Fatal(err)
		}
	}
	reqs := []store.TakeRequest{req}
	if batch {
		pad := takeOne(prefix+"pad", 5, now)
		pad.Consume = false
		reqs = append(reqs, pad)
	}
	var res []store.TakeResult
	var err error
	if c.race == 0 {
		res, err = s.TakeBatch(ctx, reqs, time.Time{})
	} else {
		res, err = takeLosingARace(ctx, t, s, reqs, req.Gates[c.race-1], c.raceTo)
	}
	if err != nil {
		t.Fatal(err)
	}
	var left []int64
	for _, g := range req.Gates {
		var n int64
		err := s.Pool().QueryRow(ctx, `select coalesce((select count from rl_counters where key = $1 and window_index = $2), -1)`, g.Key, g.WindowIndex).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, n)
	}
	return res[0], left
}

// takeLosingARace decides reqs while another transaction holds g's row
// locked; once rl_take waits for that lock (its unlocked read is done), the
// transaction sets g's count to to and commits.
func takeLosingARace(ctx context.Context, t *testing.T, s *store.Store, reqs []store.TakeRequest, g store.Gate, to int64) ([]store.TakeResult, error) {
	t.Helper()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	var pid int32
	if err := tx.QueryRow(ctx, `select pg_backend_pid() from rl_counters where key = $1 and window_index = $2 for update`, g.Key, g.WindowIndex).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res []store.TakeResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.TakeBatch(ctx, reqs, time.Time{})
		done <- answer{res, err}
	}()
	// Wait (bounded by ctx) until rl_take is blocked behind our lock.
	for {
		var waiting bool
		err := s.Pool().QueryRow(ctx, `select exists (select 1 from pg_stat_activity
			where datname = current_database() and $1 = any (pg_blocking_pids(pid)) and query like '%rl_take%')`, pid).Scan(&waiting)
		if err != nil {
			t.Fatalf("waiting for rl_take to block: %v", err)
		}
		if waiting {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("rl_take finished without waiting for the locked row: %+v, %v", a.res, a.err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	if _, err := tx.Exec(ctx, `update rl_counters set count = $3 where key = $1 and window_index = $2`, g.Key, g.WindowIndex, to); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	return a.res, a.err
}

// TestTakePathsAgreeOnExpectedAnswers pins a few of the cases above to
// their answers, so that both paths agreeing is not both being wrong.
func TestTakePathsAgreeOnExpectedAnswers(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	now := time.Now()
	want := map[string]struct {
		res  store.TakeResult
		left []int64
	}{
		"fits exactly with cost 3":            {store.TakeResult{Allowed: true, Counts: []int64{5, 9}, Room: []bool{true, true}}, []int64{5, 9}},
		"shadow gate full, enforce gates fit": {store.TakeResult{Allowed: true, Counts: []int64{3, 2, 1}, Room: []bool{false, true, true}}, []int64{3, 2, 1}},
		"shadow has room, enforce gate full":  {store.TakeResult{Allowed: false, Counts: []int64{0, 2}, Room: []bool{true, false}}, []int64{0, 2}},
		"peek with room":                      {store.TakeResult{Allowed: true, Counts: []int64{1, 5}, Room: []bool{true, false}}, []int64{1, 5}},
		"enforce gate lost a race":            {store.TakeResult{Allowed: false, Counts: []int64{1, 4, 1}, Room: []bool{true, false, true}}, []int64{1, 4, 1}},
		"shadow gate lost a race":             {store.TakeResult{Allowed: true, Counts: []int64{2, 4}, Room: []bool{true, false}}, []int64{2, 4}},
		"race leaves room":                    {store.TakeResult{Allowed: true, Counts: []int64{5, 2}, Room: []bool{true, true}}, []int64{5, 2}},
	}
	seen := 0
	for i, c := range takeCases {
		w, ok := want[c.name]
		if !ok {
			continue
		}
		seen++
		for _, batch := range []bool{false, true} {
			res, left := runTakeCase(t, s, fmt.Sprintf("pin%d-%v|", i, batch), c, now, batch)
			if !reflect.DeepEqual(res, w.res) || !reflect.DeepEqual(left, w.left) {
				t.Errorf("%s (batch %v): %+v leaving %v, want %+v leaving %v", c.name, batch, res, left, w.res, w.left)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("pinned %d cases, found %d: a name changed", len(want), seen)
	}
}
