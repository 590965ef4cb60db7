package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// replyGrace is how long past a batch's deadline Take waits for the
// servers' answer. The scripts refuse to start past the deadline (on the
// server's clock, see serverDeadline), so what is left is the answer's
// way back; only a server or network that answers nothing within the
// grace leaves a batch whose takes may or may not have been applied. It
// matches pkg/enforce's own grace for the store's answer.
const replyGrace = 200 * time.Millisecond

// deadlinePrefix starts takeScript's refusal of a batch that reached the
// server after its deadline.
const deadlinePrefix = "DEADLINE"

// clockSamples is how many TIME round trips measure a node's clock: the
// tightest of them is kept.
const clockSamples = 3

// clockSpreadWarn is how far apart the nodes' clocks may be before the
// store warns: the deadline is put on the earliest node's clock, so a node
// this far ahead refuses scripts this much before their deadline.
const clockSpreadWarn = 100 * time.Millisecond

// clockAnchor maps this process's clock onto the servers': at local (a
// reading with Go's monotonic clock) no node's clock read less than
// server microseconds since the epoch.
type clockAnchor struct {
	local  time.Time
	server int64
}

// serverDeadline is deadline on the servers' clocks, in microseconds since
// the epoch, as takeScript's first argument ("0" for none).
//
// The servers' clocks are measured, not assumed to agree with ours:
// Inspect reads every node's TIME and keeps, per node, a lower bound of its
// clock (the reply came after the node read it), and the anchor is the
// lowest over the nodes. A deadline put on it is never later on any node's
// clock than the true one, so a script a node runs after the caller gave up
// never takes; the error (a round trip, or a node's clock ahead of the
// others) can only make a node refuse a little early, which the caller
// hears as a timeout within replyGrace. Measured against the monotonic
// clock, a step of this host's wall clock does not move it. Until the first
// Inspect (a Store built with New) the clocks are taken to agree.
func (s *Store) serverDeadline(deadline time.Time) string {
	if deadline.IsZero() {
		return "0"
	}
	us := deadline.UnixMicro()
	if a := s.clock.Load(); a != nil {
		us = a.server + deadline.Sub(a.local).Microseconds()
	}
	return strconv.FormatInt(max(us, 1), 10)
}

// readClock is a lower bound of node n's clock at the local time ref, in
// microseconds since the epoch: the tightest of clockSamples TIME round
// trips.
func readClock(ctx context.Context, n rueidis.Client, ref time.Time) (int64, error) {
	var best int64
	for i := range clockSamples {
		v, err := n.Do(ctx, n.B().Time().Build()).AsStrSlice()
		recv := time.Now()
		if err != nil {
			return 0, fmt.Errorf("TIME: %w", err)
		}
		if len(v) != 2 {
			return 0, fmt.Errorf("TIME answered %d values, want 2", len(v))
		}
		sec, err1 := strconv.ParseInt(v[0], 10, 64)
		usec, err2 := strconv.ParseInt(v[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("TIME answered %q: not integers", v)
		}
		// The node read its clock before recv: at recv it read at least
		// this much, so at ref at least this minus recv - ref.
		lb := sec*1_000_000 + usec - recv.Sub(ref).Microseconds()
		if i == 0 || lb > best {
			best = lb
		}
	}
	return best, nil
}

// nodeClocks measures the nodes' clocks (readClock) and sets the anchor
// to the lowest; nodes that did not answer are left out, and with none the
// anchor stays as it was. It warns, once per change, when the nodes'
// clocks are further apart than clockSpreadWarn.
func (s *Store) nodeClocks(ctx context.Context, nodes map[string]rueidis.Client) map[string]error {
	ref := time.Now()
	errs := map[string]error{}
	var lo, hi int64
	n := 0
	for addr, c := range nodes {
		lb, err := readClock(ctx, c, ref)
		if err != nil {
			errs[addr] = err
			continue
		}
		if n == 0 || lb < lo {
			lo = lb
		}
		if n == 0 || lb > hi {
			hi = lb
		}
		n++
	}
	if n == 0 {
		if s.clock.Load() == nil && !s.clockUnread {
			s.clockUnread = true
			s.log.Warn("redis: no node answered TIME: deadlines are checked as if the servers' clocks agreed with this host's; a server clock ahead refuses scripts early, one behind lets a script that reached it late take",
				"errors", fmt.Sprint(errs))
		}
		return errs
	}
	s.clockUnread = false
	s.clock.Store(&clockAnchor{local: ref, server: lo})
	apart := time.Duration(hi-lo) * time.Microsecond
	if wide := apart > clockSpreadWarn; wide != s.clocksApart {
		s.clocksApart = wide
		if wide {
			s.log.Warn("redis: the nodes' clocks disagree: a decision's deadline is put on the earliest, so the nodes ahead refuse scripts early and their decisions follow the fail policy more often; synchronise the nodes' clocks (NTP)",
				"apart", apart.Round(time.Millisecond))
		} else {
			s.log.Info("redis: the nodes' clocks agree again", "apart", apart.Round(time.Millisecond))
		}
	}
	return errs
}

// watch inspects the nodes every interval until ctx ends (Close).
func (s *Store) watch(ctx context.Context, interval time.Duration) {
	defer close(s.watched)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
			s.Inspect(ictx)
			cancel()
		}
	}
}

// inspectTimeout bounds one Inspect of the watch.
const inspectTimeout = 10 * time.Second
