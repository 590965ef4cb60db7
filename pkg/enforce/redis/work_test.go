package redis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestServerWorkPerGate: what the server runs for a decision, read from
// its own INFO commandstats on a throwaway server. A consuming call of
// fixed windows costs one INCRBY per gate and a PEXPIRE per key it
// creates, no GET (the server's one thread runs every script: its work
// per gate bounds a master's decisions/s, docs/scaling.md); a call a gate
// refuses leaves its counts, and no key it created, behind.
func TestServerWorkPerGate(t *testing.T) {
	_, url := scratch(t, "standalone")
	ctx := context.Background()
	s, err := redis.Open(ctx, url, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	gate := func(key string, limit int64) enforce.CounterGate {
		return enforce.CounterGate{Key: key, Window: time.Hour, Limit: limit, Enforce: true}
	}
	const calls = 40
	var batch []enforce.TakeRequest
	for i := range calls {
		k := strconv.Itoa(i)
		batch = append(batch, enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
			gate("caller:"+k, 1000), gate("pair:"+k, 1000), gate("hot", 1000)}})
	}
	for i := 0; i < calls; i += 10 {
		res, err := s.Take(ctx, batch[i:i+10], time.Now().Add(hang))
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range res {
			if !r.Allowed || r.States[2].Count != int64(i+j+1) {
				t.Fatalf("call %d: allowed %v, hot count %d; want allowed, %d", i+j, r.Allowed, r.States[2].Count, i+j+1)
			}
		}
	}
	// Refused by its second gate (limit 0): its first and third gates
	// keep their counts, and the keys it created are gone.
	res, err := s.Take(ctx, []enforce.TakeRequest{{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
		gate("caller:0", 1000), gate("blocked", 0), gate("new", 1000)}}}, time.Now().Add(hang))
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Allowed || r.Room[1] || !r.Room[0] || r.States[0].Count != 1 || r.States[2].Count != 0 {
		t.Fatalf("refused call: %+v; want refused by gate 1, counts 1 and 0 left as they were", r)
	}
	peek, err := s.Take(ctx, []enforce.TakeRequest{{Cost: 1, Now: now, Gates: []enforce.CounterGate{
		gate("caller:0", 1000), gate("hot", 1000), gate("new", 1000)}}}, time.Now().Add(hang))
	if err != nil {
		t.Fatal(err)
	}
	if st := peek[0].States; st[0].Count != 1 || st[1].Count != calls || st[2].Count != 0 {
		t.Fatalf("counts after the refusal: %+v; want 1, %d, 0", st, calls)
	}
	keys, err := c.Do(ctx, c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2*calls + 1); keys != want {
		t.Errorf("%d keys on the server, want %d (the refused call's new keys are not left behind)", keys, want)
	}

	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	stat := func(cmd string) int64 {
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	// The consuming calls: 3 gates each, and the refused one's 3; the
	// peek reads its 3 keys with one MGET, no script.
	if got, want := stat("incrby"), int64(3*calls+3); got != want {
		t.Errorf("INCRBY ran %d times, want %d (one per gate of a consuming call)", got, want)
	}
	if got := stat("get"); got != 0 {
		t.Errorf("GET ran %d times, want none", got)
	}
	if got := stat("mget"); got != 1 {
		t.Errorf("MGET ran %d times, want 1 (the peek)", got)
	}
	if got, want := stat("pexpire"), int64(2*calls+1+2); got != want {
		t.Errorf("PEXPIRE ran %d times, want %d (once per key created)", got, want)
	}
	if got := stat("evalsha"); got != calls/10+1 {
		t.Errorf("EVALSHA ran %d times, want %d (one script per consuming batch)", got, calls/10+1)
	}
}

// TestPeekReadsOnly: a batch of peeks (what the failed-credential
// throttle asks before every decision from an address) of every
// algorithm is one MGET, and answers what a script would: the counts and
// TAT the takes left, room by the same arithmetic.
func TestPeekReadsOnly(t *testing.T) {
	_, url := scratch(t, "standalone")
	ctx := context.Background()
	s, err := redis.Open(ctx, url, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	now := time.Unix(1_800_000_000, 0)
	gates := []enforce.CounterGate{
		{Key: "f", Window: time.Minute, Limit: 3, Enforce: true},
		{Key: "s", Algorithm: enforce.AlgorithmSlidingWindow, Window: time.Minute, Limit: 3, Enforce: true},
		{Key: "t", Algorithm: enforce.AlgorithmTokenBucket, Window: time.Minute, Limit: 3, Enforce: true},
	}
	// now starts a minute. The fixed window and the bucket take 3 now:
	// full. The sliding window takes 2 in the previous minute and 1 now:
	// at now the previous minute weighs whole, so 2 + 1 is its limit.
	take := func(at time.Time, g enforce.CounterGate) {
		t.Helper()
		res, err := s.Take(ctx, []enforce.TakeRequest{{Cost: 1, Consume: true, Now: at, Gates: []enforce.CounterGate{g}}}, time.Now().Add(hang))
		if err != nil || !res[0].Allowed {
			t.Fatalf("take %s at %v: %v %+v", g.Key, at, err, res)
		}
	}
	for _, at := range []time.Time{now.Add(-40 * time.Second), now.Add(-30 * time.Second), now} {
		take(at, gates[1])
	}
	for range 3 {
		take(now, gates[0])
		take(now, gates[2])
	}
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	peek := func(at time.Time) []enforce.TakeResult {
		t.Helper()
		var reqs []enforce.TakeRequest
		for _, g := range gates {
			reqs = append(reqs, enforce.TakeRequest{Cost: 1, Now: at, Gates: []enforce.CounterGate{g}})
		}
		res, err := s.Take(ctx, reqs, time.Now().Add(hang))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := peek(now)
	if res[0].Allowed || res[0].States[0].Count != 3 {
		t.Errorf("fixed window peek: %+v; want refused at count 3", res[0])
	}
	if res[1].Allowed || res[1].States[0].Count != 1 || res[1].States[0].Previous != 2 {
		t.Errorf("sliding window peek: %+v; want refused at 1 and 2 before", res[1])
	}
	if res[2].Allowed || !res[2].States[0].TAT.Equal(now.Add(time.Minute)) {
		t.Errorf("token bucket peek: %+v; want refused, TAT a minute on", res[2])
	}
	// 80 s on: the fixed window is empty, the sliding window weighs now's
	// minute's 1 at 40/60, the bucket is full.
	res = peek(now.Add(time.Minute + 20*time.Second))
	for i, r := range res {
		if !r.Allowed {
			t.Errorf("peek %d 80 s on: %+v; want room", i, r)
		}
	}
	if st := res[1].States[0]; st.Count != 0 || st.Previous != 1 {
		t.Errorf("sliding window 80 s on: %+v; want 0 and 1 before", st)
	}
	if !res[2].States[0].TAT.IsZero() {
		t.Errorf("token bucket 80 s on: TAT %v; want none (full)", res[2].States[0].TAT)
	}
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_mget:calls=2,") || strings.Contains(info, "cmdstat_evalsha") {
		t.Errorf("two batches of peeks ran:\n%s\nwant 2 MGETs and no script", info)
	}
}
