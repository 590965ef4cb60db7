package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDefinitionAlgorithmsRoundTrip: a definition's algorithm and bursts are
// stored and read back by a PUT and by apply's bulk writes; a fixed window
// (stored as fixed_window, the column's default) reads back with no
// algorithm, as every definition did before algorithms existed; changing
// only the algorithm or a burst is a change (a new version).
func TestDefinitionAlgorithmsRoundTrip(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()

	d := callerGroup("tb", 60, 100)
	d.Algorithm, d.UserBurst = ratelimit.AlgorithmTokenBucket, ptr(150)
	after, _, err := put(t, s, d, store.Write{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Algorithm != ratelimit.AlgorithmTokenBucket || after.UserBurst == nil || *after.UserBurst != 150 || after.AgentBurst != nil {
		t.Fatalf("put a token bucket, read back algorithm %q user_burst %v agent_burst %v", after.Algorithm, after.UserBurst, after.AgentBurst)
	}
	d.UserBurst = ptr(200)
	after, _, err = put(t, s, d, store.Write{})
	if err != nil || after.Version != 2 || *after.UserBurst != 200 {
		t.Fatalf("changing only the burst: version %d burst %v (%v), want version 2, burst 200", after.Version, after.UserBurst, err)
	}
	d.Algorithm, d.UserBurst = ratelimit.AlgorithmSlidingWindow, nil
	if after, _, err = put(t, s, d, store.Write{}); err != nil || after.Version != 3 || after.Algorithm != ratelimit.AlgorithmSlidingWindow {
		t.Fatalf("changing only the algorithm: %+v (%v), want version 3, sliding_window", after, err)
	}
	d.Algorithm = ratelimit.AlgorithmFixedWindow
	if after, _, err = put(t, s, d, store.Write{}); err != nil || after.Algorithm != "" {
		t.Fatalf("a fixed window reads back algorithm %q (%v), want none", after.Algorithm, err)
	}
	if _, _, err := put(t, s, ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "plain", WindowSeconds: 60,
		UserMaxRequests: ptr(5), Enabled: true}, store.Write{}); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.Pool().QueryRow(ctx, `select algorithm from rl_definitions where id = 'caller:group:plain:60'`).Scan(&stored); err != nil || stored != "fixed_window" {
		t.Fatalf("a definition without an algorithm is stored as %q (%v), want fixed_window", stored, err)
	}

	// Apply's bulk paths.
	inTx(t, s, func(ctx context.Context, q *store.Queries) error {
		now, err := q.TransactionTime(ctx)
		if err != nil {
			return err
		}
		if err := q.LockForApply(ctx); err != nil {
			return err
		}
		b := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "bulk", WindowSeconds: 60, MaxRequests: ptr(10),
			Algorithm: ratelimit.AlgorithmTokenBucket, Burst: ptr(30), Enabled: true,
			CreatedAt: &now, UpdatedAt: &now, UpdatedBy: "apply", Version: 1}
		if err := q.InsertDefinitions(ctx, []ratelimit.Definition{b}); err != nil {
			return err
		}
		got, err := q.GetDefinition(ctx, b.Key())
		if err != nil {
			return err
		}
		if got.Algorithm != ratelimit.AlgorithmTokenBucket || got.Burst == nil || *got.Burst != 30 {
			t.Errorf("inserted by apply, read back algorithm %q burst %v", got.Algorithm, got.Burst)
		}
		b.Algorithm, b.Burst = ratelimit.AlgorithmSlidingWindow, nil
		if err := q.UpdateDefinitions(ctx, []ratelimit.Definition{b}); err != nil {
			return err
		}
		if got, err = q.GetDefinition(ctx, b.Key()); err != nil {
			return err
		}
		if got.Algorithm != ratelimit.AlgorithmSlidingWindow || got.Burst != nil || got.Version != 2 {
			t.Errorf("updated by apply, read back algorithm %q burst %v version %d", got.Algorithm, got.Burst, got.Version)
		}
		return nil
	})

	// The schema refuses what validate refuses (the last line of defence).
	for name, bad := range map[string]ratelimit.Definition{
		"burst on a fixed window": {Axis: "caller", EntityType: "group", Name: "x1", WindowSeconds: 60, UserMaxRequests: ptr(5),
			UserBurst: ptr(5), Enabled: true},
		"burst below 1": {Axis: "caller", EntityType: "group", Name: "x2", WindowSeconds: 60, UserMaxRequests: ptr(5),
			Algorithm: ratelimit.AlgorithmTokenBucket, UserBurst: ptr(0), Enabled: true},
		"target burst on a caller axis": {Axis: "caller", EntityType: "group", Name: "x3", WindowSeconds: 60, UserMaxRequests: ptr(5),
			Algorithm: ratelimit.AlgorithmTokenBucket, Burst: ptr(5), Enabled: true},
		"unknown algorithm": {Axis: "caller", EntityType: "group", Name: "x4", WindowSeconds: 60, UserMaxRequests: ptr(5),
			Algorithm: "leaky_bucket", Enabled: true},
	} {
		if _, _, err := put(t, s, bad, store.Write{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
