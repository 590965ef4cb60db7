package enforce

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The hot path logs nothing per decision: throttles, quarantine denials,
// shadow would-denies and counter store failures are counted in metrics,
// and written to the log in aggregate by an eventLog: at most one line per
// (reason, subject) per interval, carrying how many calls it stands for,
// and at most maxKeys distinct subjects per interval (the rest are counted
// in one line per reason). A flood of a million throttles writes a bounded
// number of lines, however many callers it comes from.

// Reasons an event is logged for.
const (
	eventThrottled   = "throttled"
	eventQuarantined = "quarantined"
	eventShadow      = "shadow"
	eventBackend     = "backend"
)

// event is one decision worth a log line. The subject fields are its key;
// the others describe the latest event of the key.
type event struct {
	reason                                 string
	username, clientID, targetType, target string
	// caller is the caller the counters count (user:alice, agent:bot,
	// ip:203.0.113.7 for an anonymous call keyed by its address).
	caller string

	scope      string // quarantined: caller or target
	gate       string // throttled, shadow: the definition
	limit      int64
	retryAfter time.Duration
	failClosed bool // backend
	err        error
	until      time.Time // escalation lockouts: when the lockout ends

	// message, when set, is a Guard's line (guard.go): written with the
	// event, its count and the interval, then attrs.
	message string
	attrs   []slog.Attr
}

// eventKey is what one line is kept per.
type eventKey struct {
	reason, username, clientID, targetType, target, caller string
}

func (ev *event) key() eventKey {
	k := eventKey{reason: ev.reason, username: ev.username, clientID: ev.clientID, targetType: ev.targetType, target: ev.target, caller: ev.caller}
	if ev.reason == eventBackend {
		// A store outage fails every call: one line for all of them.
		k.username, k.clientID, k.targetType, k.target, k.caller = "", "", "", "", ""
	}
	return k
}

type eventCount struct {
	last  event
	count int64
}

// eventLogOpts tune an eventLog; zero values take the defaults.
type eventLogOpts struct {
	// Interval is how often a key gets a line at most (default 10 s).
	Interval time.Duration
	// MaxKeys bounds the keys tracked per interval (default 1,000).
	MaxKeys int
}

type eventLog struct {
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

func newEventLog(log *slog.Logger, now func() time.Time, opts eventLogOpts) *eventLog {
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 1000
	}
	return &eventLog{log: log, now: now, interval: opts.Interval, maxKeys: opts.MaxKeys, since: now(),
		counts: map[eventKey]*eventCount{}, dropped: map[string]int64{}}
}

// record counts ev, and writes the lines of the interval that ended if
// one did.
func (l *eventLog) record(ev event) {
	k := ev.key()
	l.mu.Lock()
	if c, ok := l.counts[k]; ok {
		c.count++
		c.last = ev
	} else if len(l.counts) < l.maxKeys {
		l.counts[k] = &eventCount{last: ev, count: 1}
		l.order = append(l.order, k)
	} else {
		l.dropped[ev.reason]++
	}
	due := l.now().Sub(l.since) >= l.interval
	l.mu.Unlock()
	if due {
		l.flushIfDue()
	}
}

// flushIfDue writes the lines when the interval has ended.
func (l *eventLog) flushIfDue() {
	l.mu.Lock()
	if l.now().Sub(l.since) < l.interval {
		l.mu.Unlock()
		return
	}
	l.writeLocked()
}

// flush writes what has been counted, whatever the time.
func (l *eventLog) flush() {
	l.mu.Lock()
	l.writeLocked()
}

// writeLocked takes the counts, unlocks, and writes them.
func (l *eventLog) writeLocked() {
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
		if ev.message != "" {
			l.log.LogAttrs(ctx, slog.LevelWarn, ev.message, append([]slog.Attr{slog.String("event", ev.reason), slog.Int64("count", c.count),
				slog.Float64("period_s", period)}, ev.attrs...)...)
			continue
		}
		switch ev.reason {
		case eventThrottled:
			l.log.Info("calls throttled", "count", c.count, "period_s", period, "caller", ev.caller, "username", ev.username, "client_id", ev.clientID,
				"target_type", ev.targetType, "target", ev.target, "gate", ev.gate, "limit", ev.limit,
				"retry_after_s", ev.retryAfter.Seconds())
		case eventShadow:
			l.log.Info("shadow limit would deny", "count", c.count, "period_s", period, "caller", ev.caller, "username", ev.username, "client_id", ev.clientID,
				"target", ev.target, "gate", ev.gate)
		case eventQuarantined:
			l.log.Warn("calls denied: quarantined", "count", c.count, "period_s", period, "scope", ev.scope, "caller", ev.caller, "username", ev.username,
				"client_id", ev.clientID, "target_type", ev.targetType, "target", ev.target)
		case EventLockoutStarted:
			l.log.Warn("caller locked out after repeated violations", "event", ev.reason, "count", c.count, "caller", ev.caller, "username", ev.username,
				"client_id", ev.clientID, "target_type", ev.targetType, "target", ev.target, "gate", ev.gate, "violations", ev.limit,
				"duration", ev.retryAfter.String(), "until", ev.until.UTC().Format(time.RFC3339))
		case eventLockedOut:
			l.log.Warn("calls denied: caller locked out", "event", ev.reason, "count", c.count, "period_s", period, "caller", ev.caller,
				"username", ev.username, "client_id", ev.clientID, "target_type", ev.targetType, "target", ev.target,
				"until", ev.until.UTC().Format(time.RFC3339))
		case eventBackend:
			l.log.Warn("counter store failed; applied the fail policy", "count", c.count, "period_s", period,
				"fail_closed", ev.failClosed, "target", ev.target, "err", ev.err)
		}
	}
	reasons := []string{eventThrottled, eventQuarantined, eventShadow, eventBackend, EventLockoutStarted, eventLockedOut}
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

// eventCaller is the caller c's counters count, for the log lines: an
// anonymous call with a client address is ip:<key>, as its buckets are
// (its username and client_id are empty), keyed by ipv6Prefix. Only the
// event paths call it.
func eventCaller(c Call, ipv6Prefix int) string {
	switch {
	case c.ClientID != "":
		return "agent:" + c.ClientID
	case c.Username != "":
		return ratelimit.SubjectUser + ":" + c.Username
	}
	if ip := clientAddr(c.ClientIP); ip.IsValid() {
		return CallerIP + ":" + clientip.Key(ip, ipv6Prefix)
	}
	return ""
}
