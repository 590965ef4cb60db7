package redis

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
)

// TestLateScriptRefuses: a batch that reaches the server past its
// deadline, on the server's clock, changes nothing and is reported as
// timed out and not applied (so the batcher may retry the calls that have
// time left). The server is made to see it late by measuring its clock and
// then moving the measurement a minute back: a batch due in 10 s is then
// put 50 s in the past on the server's clock, as a server whose clock ran
// a minute ahead of what the store measured would see it.
func TestLateScriptRefuses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, srv.URL, Options{CheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := s.clock.Load()
	if a == nil {
		t.Fatal("Open measured no clock")
	}
	// The measured clock is a lower bound of the server's at a.local: the
	// server's own TIME, read after, as it is (a later instant's clock), is
	// not below it. (readClock's answer would be another lower bound at
	// a.local, which may be the looser of the two.)
	v, err := s.client.Do(ctx, s.client.B().Time().Build()).AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME: %q, %v", v, err)
	}
	sec, err1 := strconv.ParseInt(v[0], 10, 64)
	usec, err2 := strconv.ParseInt(v[1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME answered %q", v)
	}
	if n := sec*1_000_000 + usec; n < a.server {
		t.Errorf("the server's clock read %d µs after the anchor's %d µs: the anchor is not a lower bound", n, a.server)
	}
	gate := enforce.CounterGate{Key: "late", Window: time.Hour, Limit: 10, Enforce: true}
	call := enforce.TakeRequest{Gates: []enforce.CounterGate{gate}, Cost: 1, Consume: true, Now: time.Now()}
	s.clock.Store(&clockAnchor{local: a.local, server: a.server - time.Minute.Microseconds()})
	_, err = s.Take(ctx, []enforce.TakeRequest{call}, time.Now().Add(10*time.Second))
	if !errors.Is(err, enforce.ErrTimedOut) || !errors.Is(err, enforce.ErrNotApplied) || errors.Is(err, enforce.ErrOutcomeUnknown) {
		t.Errorf("a batch the server saw past its deadline: %v, want ErrTimedOut and ErrNotApplied, not ErrOutcomeUnknown", err)
	}
	s.clock.Store(a)
	peek := call
	peek.Consume = false
	res, err := s.Take(ctx, []enforce.TakeRequest{peek}, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].States[0].Count; got != 0 {
		t.Errorf("the refused batch left a count of %d, want 0", got)
	}
	// With the clock as measured, the same batch counts.
	if res, err := s.Take(ctx, []enforce.TakeRequest{call}, time.Now().Add(10*time.Second)); err != nil || !res[0].Allowed {
		t.Errorf("the batch in time: %+v, %v; want allowed", res, err)
	}
}
