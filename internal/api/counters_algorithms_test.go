package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Counters of every algorithm are found by every selector (migration 009)
// and shown in their algorithm's terms; a caller definition selects only
// the buckets of its own algorithm; a reset fills a token bucket.
func TestCountersOfEveryAlgorithm(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	bucket := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "tb", WindowSeconds: 3600,
		MaxRequests: ptr(10), Algorithm: ratelimit.AlgorithmTokenBucket, Burst: ptr(10), Enabled: true}
	sliding := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "sw", WindowSeconds: 60,
		MaxRequests: ptr(100), Algorithm: ratelimit.AlgorithmSlidingWindow, Enabled: true}
	callerBucket := group("dev", 60, 100, 0)
	callerBucket.Algorithm, callerBucket.UserBurst = ratelimit.AlgorithmTokenBucket, ptr(20)
	callerFixed := group("dev2", 60, 100, 0)
	for _, d := range []ratelimit.Definition{bucket, sliding, callerBucket, callerFixed} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"dev", "dev2"}},
		client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	call := func(target string) enforce.Decision {
		t.Helper()
		d, err := env.Enforcer.Check(ctx, enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: target})
		if err != nil {
			t.Fatalf("check %s: %v", target, err)
		}
		return d
	}
	for range 3 {
		if d := call("tb"); !d.Allowed {
			t.Fatalf("call to tb: %+v, want allowed", d)
		}
	}
	for range 2 {
		if d := call("sw"); !d.Allowed {
			t.Fatalf("call to sw: %+v, want allowed", d)
		}
	}

	byKey := func(cs []client.Counter) map[string]client.Counter {
		out := map[string]client.Counter{}
		for _, c := range cs {
			out[c.Key] = c
		}
		return out
	}
	// The token bucket refills one token per 360 s: three calls leave 7
	// of 10, full again about 1,080 s from now.
	tbKey := counterkey.Target(withID(bucket), "").String()
	for _, sel := range []client.CounterSelector{{Target: "mcp_server:tb"}, {Definition: bucket.Key()}} {
		got := byKey(listCounters(t, c, sel))
		tb, ok := got[tbKey]
		if len(got) != 1 || !ok {
			t.Fatalf("counters of %s = %v, want only %s", sel, got, tbKey)
		}
		if tb.Algorithm != ratelimit.AlgorithmTokenBucket || tb.Tokens == nil || *tb.Tokens != 7 || tb.Burst != 10 || tb.FullAt == nil {
			t.Errorf("%s: %+v, want a token bucket with 7 of 10 tokens and a time it is full", sel, tb)
		} else if left := time.Until(*tb.FullAt); left < 1000*time.Second || left > 1080*time.Second {
			t.Errorf("%s full in %s, want about 1,080 s", sel, left)
		}
	}
	swKey := counterkey.Target(withID(sliding), "").String()
	for _, sel := range []client.CounterSelector{{Target: "mcp_server:sw"}, {Definition: sliding.Key()}} {
		if got := byKey(listCounters(t, c, sel)); len(got) != 1 || got[swKey].Count != 2 || got[swKey].Algorithm != ratelimit.AlgorithmSlidingWindow {
			t.Errorf("counters of %s = %+v, want %s counting 2", sel, got, swKey)
		}
	}
	// alice's caller buckets: one per algorithm of the window; each caller
	// definition selects its own algorithm's.
	fixed, tokens := counterkey.Caller(60, "user:alice"), counterkey.Caller(60, "user:alice")
	tokens.Algorithm = enforce.AlgorithmTokenBucket
	mine := byKey(listCounters(t, c, client.CounterSelector{Caller: "user:alice"}))
	if _, ok := mine[tokens.String()]; !ok || mine[fixed.String()].Count != 5 || len(mine) != 2 {
		t.Errorf("alice's counters = %+v, want %s and %s (5)", mine, tokens, fixed)
	}
	if got := byKey(listCounters(t, c, client.CounterSelector{Definition: callerBucket.Key()})); len(got) != 1 || got[tokens.String()].Algorithm != ratelimit.AlgorithmTokenBucket {
		t.Errorf("counters of %s = %+v, want only alice's token bucket", callerBucket.Key(), got)
	}
	if got := byKey(listCounters(t, c, client.CounterSelector{Definition: callerFixed.Key()})); len(got) != 1 || got[fixed.String()].Count != 5 {
		t.Errorf("counters of %s = %+v, want only alice's fixed window (5)", callerFixed.Key(), got)
	}

	// A reset fills the bucket: ten calls pass again, the eleventh waits.
	if n, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Definition: bucket.Key()}, client.WriteOptions{})); err != nil || n != 1 {
		t.Fatalf("reset %s = %d, %v; want 1", bucket.Key(), n, err)
	}
	if got := listCounters(t, c, client.CounterSelector{Target: "mcp_server:tb"}); len(got) != 0 {
		t.Errorf("after the reset: %+v, want no counter (a full bucket)", got)
	}
	for i := range 10 {
		if d := call("tb"); !d.Allowed {
			t.Fatalf("call %d after the reset: %+v, want allowed", i+1, d)
		}
	}
	if d := call("tb"); d.Allowed || d.Reason != enforce.ReasonThrottled || d.RetryAfter < 300*time.Second {
		t.Errorf("11th call after the reset: %+v, want throttled for about 360 s", d)
	}
}

// withID is d named by its id, as the snapshot names it (for the key of
// its counter).
func withID(d ratelimit.Definition) ratelimit.Definition {
	d.ID = d.Key()
	return d
}
