package migrate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestRollingBack012DropsRlTake012: migration 012 adds rl_take_012 (no
// function-level SET clauses) beside rl_take, which it leaves as it was;
// rolling it back leaves the functions exactly as 011 had them.
func TestRollingBack012DropsRlTake012(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, pgtest.NewDatabase(t), store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions)
	}
	if err := migrate.To(ctx, s.Pool(), 11); err != nil {
		t.Fatal(err)
	}
	before := schema()
	if err := migrate.To(ctx, s.Pool(), 12); err != nil {
		t.Fatal(err)
	}
	at12 := schema()
	take := "function rl_take_012(integer[],text[],bigint[],bigint[],boolean[],timestamp with time zone[],bigint[],boolean[],text[],bigint[],bigint[],bigint[])"
	if at12[take] == "" {
		t.Fatalf("012 did not create %s", take)
	}
	for k, v := range before {
		if at12[k] != v {
			t.Errorf("012 changed %s:\n%s\nwant (as 011 left it)\n%s", k, at12[k], v)
		}
	}
	var config []string
	if err := s.Pool().QueryRow(ctx, `select proconfig from pg_proc where oid = 'rl_take_012'::regproc`).Scan(&config); err != nil {
		t.Fatal(err)
	}
	if config != nil {
		t.Errorf("rl_take_012 has function-level settings %v: each call would pay a GUC save and restore", config)
	}
	if err := migrate.To(ctx, s.Pool(), 11); err != nil {
		t.Fatalf("roll back 012: %v", err)
	}
	back := schema()
	for k, v := range before {
		if back[k] != v {
			t.Errorf("after rolling back 012, %s is\n%s\nwant (as before)\n%s", k, back[k], v)
		}
	}
	for k := range back {
		if _, ok := before[k]; !ok {
			t.Errorf("after rolling back 012, %s is left", k)
		}
	}
}

// TestTakeBatchCountsWithoutRlTake: the store counts through rl_take_012;
// a database whose rl_take is gone (or slow) does not matter to it.
func TestTakeBatchCountsWithoutRlTake(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := pgtest.NewStore(t)
	if _, err := s.Pool().Exec(ctx, `alter function rl_take rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	idx := now.Unix() / 60
	req := store.TakeRequest{Gates: []store.Gate{{Key: "c|60|user:new", WindowIndex: idx, Limit: 1, Enforce: true,
		ExpiresAt: time.Unix((idx+2)*60, 0)}}, Cost: 1, Consume: true, Now: now}
	for i, want := range []bool{true, false} {
		res, err := s.TakeBatch(ctx, []store.TakeRequest{req}, time.Time{})
		if err != nil {
			t.Fatalf("take %d: %v", i+1, err)
		}
		if res[0].Allowed != want || res[0].Counts[0] != 1 {
			t.Fatalf("take %d: %+v, want allowed %v at count 1", i+1, res[0], want)
		}
	}
}

// TestOldAndNewTakeCountTogether: during a rolling deploy replicas on the
// binary before 008 (rl_take, eight arguments), on 008-011's (rl_take,
// twelve) and on this one (rl_take_012) decide at once on the same
// counters. They lock rows in the same order (no deadlock) and count
// exactly: a fixed window and a token bucket each let through exactly
// their limit, whoever asked.
func TestOldAndNewTakeCountTogether(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := pgtest.NewStore(t)
	now := time.Now()
	idx := now.Unix() / 3600
	exp := time.Unix((idx+2)*3600, 0)
	const limit, burst = 40, 25
	// Every call takes the fixed window's two counters (caller and target,
	// in key order); the token bucket calls take the bucket too.
	fixed := []store.Gate{
		{Key: "c|3600|user:roll", WindowIndex: idx, Limit: limit, Enforce: true, ExpiresAt: exp, Window: time.Hour},
		{Key: "t|3600|mcp_server:roll", WindowIndex: idx, Limit: 1000, Enforce: true, ExpiresAt: exp, Window: time.Hour},
	}
	bucket := store.Gate{Key: "b.tb|3600|user:roll", Algorithm: store.AlgorithmTokenBucket, Limit: 1, Burst: burst,
		Window: time.Hour, Enforce: true, ExpiresAt: now}
	type caller func(gates []store.Gate) (bool, error)
	old8 := func(gates []store.Gate) (bool, error) {
		var allowed []bool
		err := s.Pool().QueryRow(ctx, `select allowed from rl_take($1, $2, $3, $4, $5, $6, $7, $8)`,
			[]int32{1, 1}, []string{gates[0].Key, gates[1].Key}, []int64{idx, idx}, []int64{gates[0].Limit, gates[1].Limit},
			[]bool{true, true}, []time.Time{exp, exp}, []int64{1}, []bool{true}).Scan(&allowed)
		return len(allowed) == 1 && allowed[0], err
	}
	old12 := func(gates []store.Gate) (bool, error) {
		var call []int32
		var keys, algs []string
		var wins, limits, wns, bursts []int64
		var enf []bool
		var exps []time.Time
		for _, g := range gates {
			alg := g.Algorithm
			if alg == "" {
				alg = store.AlgorithmFixedWindow
			}
			call, keys, algs = append(call, 1), append(keys, g.Key), append(algs, alg)
			wins, limits, wns, bursts = append(wins, g.WindowIndex), append(limits, g.Limit), append(wns, int64(g.Window)), append(bursts, g.Burst)
			enf, exps = append(enf, true), append(exps, g.ExpiresAt)
		}
		var allowed []bool
		err := s.Pool().QueryRow(ctx, `select allowed from rl_take($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			call, keys, wins, limits, enf, exps, []int64{1}, []bool{true}, algs, wns, bursts, []int64{now.UnixNano()}).Scan(&allowed)
		return len(allowed) == 1 && allowed[0], err
	}
	new12 := func(gates []store.Gate) (bool, error) {
		res, err := s.TakeBatch(ctx, []store.TakeRequest{{Gates: gates, Cost: 1, Consume: true, Now: now}}, time.Time{})
		if err != nil {
			return false, err
		}
		return res[0].Allowed, nil
	}
	// Each caller asks until it is denied; the total allowed is the limit.
	run := func(name string, gates []store.Gate, callers []caller, want int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		total := 0
		errs := make(chan error, 3*len(callers))
		for i := range 3 * len(callers) {
			c := callers[i%len(callers)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					ok, err := c(gates)
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						return
					}
					mu.Lock()
					total++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", name, err)
		}
		if total != want {
			t.Errorf("%s: %d calls allowed, want exactly %d", name, total, want)
		}
	}
	run("fixed window", fixed, []caller{old8, old12, new12}, limit)
	var n int64
	if err := s.Pool().QueryRow(ctx, `select count from rl_counters where key = $1 and window_index = $2`, fixed[0].Key, idx).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != limit {
		t.Errorf("the fixed window's count is %d, want %d", n, limit)
	}
	// The bucket (a key before the windows') with a fresh window pair.
	for i := range fixed {
		fixed[i].Key = fmt.Sprintf("%s:b", fixed[i].Key)
		fixed[i].Limit = 1000
	}
	run("token bucket", []store.Gate{bucket, fixed[0], fixed[1]}, []caller{old12, new12}, burst)
}
