package enforcetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// AdminStore is a counter store that lists and resets its counters.
type AdminStore interface {
	enforce.CounterStore
	counteradmin.Admin
}

// TestCounterAdmin checks a store's CounterAdmin over counters its own
// Take wrote: selection by caller, target and definition (with the
// shared buckets the selector names) reads each key as counterkey.Parse
// does, exactly (user:al is not user:alice), whatever bytes a name
// holds; counts, token bucket state and expiry are what Take left; a
// limit truncates; a reset returns what it reset, and Take then counts
// from zero. newStore returns a store with no counters.
func TestCounterAdmin(t *testing.T, newStore func(t *testing.T) AdminStore) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	dev := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "dev", WindowSeconds: 60}
	dev.ID = ratelimit.DefinitionID(dev.Axis, dev.EntityType, dev.Name, dev.WindowSeconds)
	gw := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "gw", WindowSeconds: 60}
	gw.ID = ratelimit.DefinitionID(gw.Axis, gw.EntityType, gw.Name, gw.WindowSeconds)
	odd := "user:a{b}%*?[c]\\d"
	keys := map[string]counterkey.Key{
		"alice":    counterkey.Caller(60, "user:alice"),
		"aliceTB":  {Kind: counterkey.KindCaller, Algorithm: enforce.AlgorithmTokenBucket, WindowSeconds: 60, Caller: "user:alice"},
		"aliceCT":  counterkey.CallerTarget(60, "user:alice", "mcp_server:gw"),
		"shadow":   counterkey.Shadow(dev, "user:alice", ""),
		"bob":      counterkey.Caller(60, "user:bob"),
		"target":   counterkey.Target(gw, ""),
		"odd":      counterkey.Caller(60, odd),
		"aliceOld": counterkey.Caller(3600, "user:alice"),
	}
	gate := func(name string) enforce.CounterGate {
		k := keys[name]
		return enforce.CounterGate{Key: k.String(), Algorithm: k.Algorithm, Window: time.Duration(k.WindowSeconds) * time.Second,
			Limit: 100, Burst: 100, Enforce: true, Parts: counterkey.PartsOf(k.String())}
	}
	take := func(times int, names ...string) {
		t.Helper()
		gates := make([]enforce.CounterGate, len(names))
		for i, n := range names {
			gates[i] = gate(n)
		}
		slices.SortFunc(gates, func(a, b enforce.CounterGate) int { return strings.Compare(a.Key, b.Key) })
		for range times {
			res, err := s.Take(ctx, []enforce.TakeRequest{{Gates: gates, Cost: 1, Consume: true, Now: now}}, time.Now().Add(10*time.Second))
			if err != nil || !res[0].Allowed {
				t.Fatalf("take %v: %+v, %v", names, res, err)
			}
		}
	}
	take(2, "alice", "aliceCT", "target")
	take(1, "aliceTB", "shadow", "bob", "odd", "aliceOld")

	list := func(sel counteradmin.Selector, limit int) (map[string]counteradmin.Counter, []string, bool) {
		t.Helper()
		p, err := s.Counters(ctx, sel, now, limit)
		if err != nil {
			t.Fatalf("counters %s: %v", sel, err)
		}
		got := map[string]counteradmin.Counter{}
		var order []string
		for _, c := range p.Counters {
			got[c.Key] = c
			order = append(order, c.Key)
		}
		return got, order, p.Truncated
	}
	want := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, keys[n].String())
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		sel  counteradmin.Selector
		want []string
	}{
		{counteradmin.Selector{Caller: "user:alice"}, want("alice", "aliceTB", "aliceCT", "shadow", "aliceOld")},
		{counteradmin.Selector{Caller: "user:al"}, nil},
		{counteradmin.Selector{Caller: odd}, want("odd")},
		{counteradmin.Selector{Target: "mcp_server:gw"}, want("aliceCT", "target")},
		{counteradmin.Selector{Definition: gw.ID}, want("target")},
		{counteradmin.Selector{Definition: dev.ID, Shared: counteradmin.SharedBuckets{Kind: counterkey.KindCaller, WindowSeconds: 60,
			Callers: []string{"user:bob", odd}}}, want("shadow", "bob", "odd")},
		{counteradmin.Selector{Definition: dev.ID, Shared: counteradmin.SharedBuckets{Kind: counterkey.KindCaller, WindowSeconds: 60,
			Algorithm: enforce.AlgorithmTokenBucket, Callers: []string{"user:alice"}}}, want("shadow", "aliceTB")},
	} {
		_, order, truncated := list(tt.sel, 0)
		if !slices.Equal(order, tt.want) || truncated {
			t.Errorf("counters %s = %q (truncated %v), want %q", tt.sel, order, truncated, tt.want)
		}
	}

	got, _, _ := list(counteradmin.Selector{Caller: "user:alice"}, 0)
	c := got[keys["alice"].String()]
	if c.State.Count != 2 || c.Algorithm != enforce.AlgorithmFixedWindow || c.WindowIndex != now.Unix()/60 || !c.ExpiresAt.After(now) {
		t.Errorf("alice's bucket after 2 calls: %+v, want count 2 in window %d, expiring after now", c, now.Unix()/60)
	}
	tb := got[keys["aliceTB"].String()]
	if tb.Algorithm != enforce.AlgorithmTokenBucket || tb.WindowIndex != 0 || !tb.State.TAT.After(now) || !tb.ExpiresAt.After(now) {
		t.Errorf("alice's token bucket after 1 call: %+v, want a TAT after now", tb)
	}
	if _, order, truncated := list(counteradmin.Selector{Caller: "user:alice"}, 2); len(order) != 2 || !truncated {
		t.Errorf("counters of alice, limit 2: %q, truncated %v; want 2, truncated", order, truncated)
	}

	reset, err := s.ResetCounters(ctx, counteradmin.Selector{Definition: gw.ID}, now)
	if err != nil || len(reset.Counters) != 1 || reset.Counters[0].Key != keys["target"].String() || reset.Counters[0].State.Count != 2 {
		t.Fatalf("reset %s: %+v, %v; want the target counter at 2", gw.ID, reset, err)
	}
	if _, order, _ := list(counteradmin.Selector{Target: "mcp_server:gw"}, 0); !slices.Equal(order, want("aliceCT")) {
		t.Errorf("after resetting %s, target mcp_server:gw lists %q, want alice's caller_target bucket only", gw.ID, order)
	}
	reset, err = s.ResetCounters(ctx, counteradmin.Selector{Caller: "user:alice"}, now)
	var resetKeys []string
	for _, c := range reset.Counters {
		resetKeys = append(resetKeys, c.Key)
	}
	if err != nil || !slices.Equal(resetKeys, want("alice", "aliceTB", "aliceCT", "shadow", "aliceOld")) {
		t.Fatalf("reset user:alice: %q, %v", resetKeys, err)
	}
	if _, order, _ := list(counteradmin.Selector{Caller: "user:alice"}, 0); len(order) != 0 {
		t.Errorf("after the reset alice lists %q, want nothing", order)
	}
	if _, order, _ := list(counteradmin.Selector{Caller: "user:bob"}, 0); !slices.Equal(order, want("bob")) {
		t.Errorf("resetting alice reset bob's bucket too: %q", order)
	}
	take(1, "alice")
	if got, _, _ := list(counteradmin.Selector{Caller: "user:alice"}, 0); got[keys["alice"].String()].State.Count != 1 {
		t.Errorf("a call after the reset: alice's bucket %+v, want a count of 1", got[keys["alice"].String()])
	}
	if _, err := s.Counters(ctx, counteradmin.Selector{Caller: "user:a", Target: "mcp_server:gw"}, now, 0); err == nil {
		t.Error("a selector naming a caller and a target was accepted")
	}
}
