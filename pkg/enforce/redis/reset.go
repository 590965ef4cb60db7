package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// Capabilities: the Redis store gives back (ReturnUnused) and resets.
func (s *Store) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: true}
}

// TakeLocal: every decision is the server's (the store does not declare
// Local).
func (s *Store) TakeLocal(context.Context, enforce.TakeRequest, enforce.TakeResult, enforce.TakeFunc) (enforce.TakeResult, error) {
	return enforce.TakeResult{}, fmt.Errorf("redis: take local: %w", enforce.ErrNotImplemented)
}

// Reset forgets the counters of the gates' keys as of now
// (enforce.CounterStore): one DEL per gate, pipelined. A gate's Redis keys
// are named by its window (prefix{key}:f:<window>:<index>,
// prefix{key}:s:<window>:<index>, prefix{key}:t), so they are found from
// the gate's Window and now, with no scan: the bucket, and for both window
// algorithms the window now falls in and its two neighbours (the previous
// one a sliding window weighs, the next one a replica whose clock is a
// little ahead may already count in). All of one gate's keys share its
// hash tag, so on a cluster each DEL is one slot's business. Older
// windows no longer count; they expire on their own.
func (s *Store) Reset(ctx context.Context, gates []enforce.CounterGate, now, deadline time.Time) error {
	if len(gates) == 0 {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(gates))
	for _, g := range gates {
		cmds = append(cmds, s.client.B().Del().Key(s.resetKeys(g, now)...).Build())
	}
	var errs error
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			errs = errors.Join(errs, err)
		}
	}
	if errs != nil {
		if errors.Is(errs, context.DeadlineExceeded) {
			return fmt.Errorf("redis: reset counters: %w: %w", enforce.ErrTimedOut, errs)
		}
		return fmt.Errorf("redis: reset counters: %w", errs)
	}
	return nil
}

// resetKeys are the Redis keys Reset deletes for g at now.
func (s *Store) resetKeys(g enforce.CounterGate, now time.Time) []string {
	tag := s.prefix + "{" + escape(g.Key) + "}"
	keys := []string{tag + ":t"}
	if g.Window < time.Second {
		return keys
	}
	w := strconv.FormatInt(int64(g.Window/time.Second), 10)
	idx := algorithm.WindowIndex(now, g.Window)
	for _, a := range []string{":f:", ":s:"} {
		for i := idx - 1; i <= idx+1; i++ {
			keys = append(keys, tag+a+w+":"+strconv.FormatInt(i, 10))
		}
	}
	return keys
}
