// Package eventlog writes what the enforcement hot path would log, in
// aggregate: a decision logs nothing itself, it records an Event, and the
// Log writes at most one line per (reason, subject) per interval, carrying
// how many calls it stands for, and at most MaxKeys distinct subjects per
// interval (the rest are counted in one line per reason). A flood of a
// million throttles writes a bounded number of lines, however many callers
// it comes from.
package eventlog

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Reasons an event is logged for.
const (
	Throttled   = "throttled"
	Quarantined = "quarantined"
	Shadow      = "shadow"
	Backend     = "backend"
	// LockoutStarted and LockedOut are escalation lockouts': one written,
	// a call refused under one.
	LockoutStarted = "lockout_started"
	LockedOut      = "locked_out"
)

// Event is one decision worth a log line. The subject fields are its key;
// the others describe the latest event of the key.
type Event struct {
	Reason                                 string
	Username, ClientID, TargetType, Target string
	// Caller is the caller the counters count (user:alice, agent:bot,
	// ip:203.0.113.7 for an anonymous call keyed by its address).
	Caller string

	Scope      string // quarantined: caller or target
	Gate       string // throttled, shadow: the definition
	Limit      int64
	RetryAfter time.Duration
	FailClosed bool // backend
	Err        error
	Until      time.Time // escalation lockouts: when the lockout ends

	// Message, when set, is a line of a feature's own (the core's Guard):
	// written with the event, its count and the interval, then Attrs.
	Message string
	Attrs   []slog.Attr
}

// eventKey is what one line is kept per.
type eventKey struct {
	reason, username, clientID, targetType, target, caller string
}

func (ev *Event) key() eventKey {
	k := eventKey{reason: ev.Reason, username: ev.Username, clientID: ev.ClientID, targetType: ev.TargetType, target: ev.Target, caller: ev.Caller}
	if ev.Reason == Backend {
		// A store outage fails every call: one line for all of them.
		k.username, k.clientID, k.targetType, k.target, k.caller = "", "", "", "", ""
	}
	return k
}

type eventCount struct {
	last  Event
	count int64
}

// Opts tune a Log; zero values take the defaults.
type Opts struct {
	// Interval is how often a key gets a line at most (default 10 s).
	Interval time.Duration
	// MaxKeys bounds the keys tracked per interval (default 1,000).
	MaxKeys int
}

type Log struct {
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	maxKeys  int

	mu      sync.Mutex
	since   time.Time // start of the current interval
	counts  map[eventKey]*eventCount
	order   []eventKey       // first-seen order, for stable output
	dropped map[string]int64 // reason -> events past maxKeys
}

func New(log *slog.Logger, now func() time.Time, opts Opts) *Log {
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 1000
	}
	return &Log{log: log, now: now, interval: opts.Interval, maxKeys: opts.MaxKeys, since: now(),
		counts: map[eventKey]*eventCount{}, dropped: map[string]int64{}}
}

// Record counts ev, and writes the lines of the interval that ended if
// one did.
func (l *Log) Record(ev Event) {
	k := ev.key()
	l.mu.Lock()
	if c, ok := l.counts[k]; ok {
		c.count++
		c.last = ev
	} else if len(l.counts) < l.maxKeys {
		l.counts[k] = &eventCount{last: ev, count: 1}
		l.order = append(l.order, k)
	} else {
		l.dropped[ev.Reason]++
	}
	due := l.now().Sub(l.since) >= l.interval
	l.mu.Unlock()
	if due {
		l.FlushIfDue()
	}
}

// FlushIfDue writes the lines when the interval has ended.
func (l *Log) FlushIfDue() {
	l.mu.Lock()
	if l.now().Sub(l.since) < l.interval {
		l.mu.Unlock()
		return
	}
	l.writeLocked()
}

// Flush writes what has been counted, whatever the time.
func (l *Log) Flush() {
	l.mu.Lock()
	l.writeLocked()
}

// writeLocked takes the counts, unlocks, and writes them.
func (l *Log) writeLocked() {
	now := l.now()
	counts, order, dropped, since := l.counts, l.order, l.dropped, l.since
	l.since = now
	if len(counts) == 0 && len(dropped) == 0 {
		l.mu.Unlock()
		return
	}
	l.counts, l.order, l.dropped = make(map[eventKey]*eventCount, len(counts)), nil, map[string]int64{}
	l.mu.Unlock()

	ctx := context.Background()
	period := now.Sub(since).Round(time.Millisecond).Seconds()
	for _, k := range order {
		c := counts[k]
		ev := &c.last
		if ev.Message != "" {
			l.log.LogAttrs(ctx, slog.LevelWarn, ev.Message, append([]slog.Attr{slog.String("event", ev.Reason), slog.Int64("count", c.count),
				slog.Float64("period_s", period)}, ev.Attrs...)...)
			continue
		}
		switch ev.Reason {
		case Throttled:
			l.log.Info("calls throttled", "count", c.count, "period_s", period, "caller", ev.Caller, "username", ev.Username, "client_id", ev.ClientID,
				"target_type", ev.TargetType, "target", ev.Target, "gate", ev.Gate, "limit", ev.Limit,
				"retry_after_s", ev.RetryAfter.Seconds())
		case Shadow:
			l.log.Info("shadow limit would deny", "count", c.count, "period_s", period, "caller", ev.Caller, "username", ev.Username, "client_id", ev.ClientID,
				"target", ev.Target, "gate", ev.Gate)
		case Quarantined:
			l.log.Warn("calls denied: quarantined", "count", c.count, "period_s", period, "scope", ev.Scope, "caller", ev.Caller, "username", ev.Username,
				"client_id", ev.ClientID, "target_type", ev.TargetType, "target", ev.Target)
		case LockoutStarted:
			l.log.Warn("caller locked out after repeated violations", "event", ev.Reason, "count", c.count, "caller", ev.Caller, "username", ev.Username,
				"client_id", ev.ClientID, "target_type", ev.TargetType, "target", ev.Target, "gate", ev.Gate, "violations", ev.Limit,
				"duration", ev.RetryAfter.String(), "until", ev.Until.UTC().Format(time.RFC3339))
		case LockedOut:
			l.log.Warn("calls denied: caller locked out", "event", ev.Reason, "count", c.count, "period_s", period, "caller", ev.Caller,
				"username", ev.Username, "client_id", ev.ClientID, "target_type", ev.TargetType, "target", ev.Target,
				"until", ev.Until.UTC().Format(time.RFC3339))
		case Backend:
			l.log.Warn("counter store failed; applied the fail policy", "count", c.count, "period_s", period,
				"fail_closed", ev.FailClosed, "target", ev.Target, "err", ev.Err)
		}
	}
	reasons := []string{Throttled, Quarantined, Shadow, Backend, LockoutStarted, LockedOut}
	// Then a Guard's reasons, in a stable order.
	for _, reason := range slices.Sorted(maps.Keys(dropped)) {
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
	}
	for _, reason := range reasons {
		if n := dropped[reason]; n > 0 {
			l.log.LogAttrs(ctx, slog.LevelWarn, "more subjects than the log itemizes; counted here",
				slog.String("reason", reason), slog.Int64("count", n), slog.Float64("period_s", period), slog.Int("max_keys", l.maxKeys))
		}
	}
}

// Interval is how often a key gets a line at most: how often a caller
// should call FlushIfDue.
func (l *Log) Interval() time.Duration { return l.interval }
