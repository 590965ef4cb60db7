package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
)

// TestPartsOfAgreeWithTheParsers: the parts the core computes for a key
// (counterkey.PartsOf), stored through CounterKeyText, are what the SQL
// parsers read from the stored key, for every key a gateway builds and
// every string Go reads as one: a counter rl_take_024 writes and one an
// older binary writes through rl_take_012 (parts from the trigger) are
// selected alike.
func TestPartsOfAgreeWithTheParsers(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	keys, _ := trickyKeys()
	var parsed []string
	for _, k := range keys {
		if _, err := counterkey.Parse(k); err == nil {
			parsed = append(parsed, k)
		}
	}
	stored := make([]string, len(parsed))
	for i, k := range parsed {
		stored[i] = store.CounterKeyText(k)
	}
	rows, err := s.Pool().Query(ctx, `select rl_counter_caller(key), rl_counter_target(key), rl_counter_definition(key)
		from unnest($1::text[]) with ordinality k(key, i) order by i`, stored)
	if err != nil {
		t.Fatal(err)
	}
	var got []keyParts
	for rows.Next() {
		var p keyParts
		if err := rows.Scan(&p.Caller, &p.Target, &p.Definition); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if err := rows.Err(); err != nil || len(got) != len(parsed) {
		t.Fatalf("%d rows for %d keys, %v", len(got), len(parsed), err)
	}
	opt := func(s string) string {
		if s == "" {
			return "<null>"
		}
		return fmt.Sprintf("%q", store.CounterKeyText(s))
	}
	for i, k := range parsed {
		p := counterkey.PartsOf(k)
		want := fmt.Sprintf("caller %s target %s definition %s", opt(p.Caller), opt(p.Target), opt(p.Definition))
		have := fmt.Sprintf("caller %s target %s definition %s", str(got[i].Caller), str(got[i].Target), str(got[i].Definition))
		if have != want {
			t.Errorf("key %q:\n SQL %s\n Go  %s", k, have, want)
		}
	}
	if len(parsed) < 1000 {
		t.Errorf("only %d keys parse: the test exercises too little", len(parsed))
	}
}

// TestTakeWritesTheGatesParts: the row a take creates holds the parts its
// gate carries, as given (the trigger for rows without parts leaves them
// alone), and a gate without parts leaves a row without any.
func TestTakeWritesTheGatesParts(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	gate := func(key, caller, target, def string) store.Gate {
		return store.Gate{Key: key, WindowIndex: now.Unix() / 60, Window: time.Minute, Limit: 10, Enforce: true,
			ExpiresAt: now.Add(2 * time.Minute), Caller: caller, Target: target, Definition: def}
	}
	// The parts are not what a parser would read from these keys: what
	// is stored is what the writer gave.
	res, err := s.TakeBatch(ctx, []store.TakeRequest{{Cost: 1, Consume: true, Now: now, Gates: []store.Gate{
		gate("af|rlapi|300|ip:192.0.2.1", "", "", ""),
		gate("c|60|user:alice", "user:alice", "", ""),
		gate("x|given", "user:\x00bob", "mcp_server:m", "target:mcp_server:m:60"),
	}}}, time.Time{})
	if err != nil || len(res) != 1 || !res[0].Allowed {
		t.Fatalf("take: %+v, %v", res, err)
	}
	for key, want := range map[string]string{
		"af|rlapi|300|ip:192.0.2.1": "<null> <null> <null>",
		"c|60|user:alice":           `"user:alice" <null> <null>`,
		"x|given":                   fmt.Sprintf("%q %q %q", store.CounterKeyText("user:\x00bob"), "mcp_server:m", "target:mcp_server:m:60"),
	} {
		var p keyParts
		if err := s.Pool().QueryRow(ctx, `select caller, target, definition from rl_counters where key = $1`, key).Scan(&p.Caller, &p.Target, &p.Definition); err != nil {
			t.Fatalf("row of %q: %v", key, err)
		}
		if got := str(p.Caller) + " " + str(p.Target) + " " + str(p.Definition); got != want {
			t.Errorf("row of %q has parts %s, want %s", key, got, want)
		}
	}
}

// TestBucketPrefixIsTheKeys: the prefix the shared-bucket selector keeps a
// caller's keys by is what the key type writes before the caller, for
// both kinds and every algorithm.
func TestBucketPrefixIsTheKeys(t *testing.T) {
	for _, alg := range []enforce.Algorithm{enforce.AlgorithmFixedWindow, enforce.AlgorithmSlidingWindow, enforce.AlgorithmTokenBucket} {
		c := counterkey.Caller(3600, "user:alice")
		ct := counterkey.CallerTarget(3600, "user:alice", "mcp_server:m")
		if alg != enforce.AlgorithmFixedWindow {
			c.Algorithm, ct.Algorithm = alg, alg
		}
		for _, tt := range []struct {
			kind, key, rest string
		}{{"c", c.String(), "user:alice"}, {"ct", ct.String(), "user:alice|mcp_server:m"}} {
			prefix := store.BucketPrefix(store.SharedBuckets{Kind: tt.kind, WindowSeconds: 3600, Algorithm: string(alg)})
			if prefix+tt.rest != tt.key {
				t.Errorf("%s %s: prefix %q then %q, but the key type writes %q", tt.kind, alg, prefix, tt.rest, tt.key)
			}
		}
	}
}
