// Package violations is the record of violations: an observer of the
// enforcement core's decisions (enforce.Observer) that counts every
// throttle and quarantine denial, and every lockout reported to it
// (RecordEvent), into one entry per (minute, kind, subject, definition),
// written in the background to a Sink (pkg/enforce/postgres's EventSink:
// the rl_events table) and as JSON lines to a log for SIEMs.
//
//	rec, err := violations.New(postgres.NewEventSink(pool), violations.Opts{Registerer: reg})
//	defer rec.Close() // after the Enforcer's Close
//	e, err := postgres.New(ctx, pool, enforce.Options{Observers: []enforce.Observer{rec}})
package violations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The record of violations. Every throttle and quarantine denial an
// Enforcer decides (the Recorder observes its decisions) and every lockout
// reported through RecordEvent is counted into one entry per (minute,
// kind, subject, definition); a background flush writes the entries to the
// Sink in one batch (pkg/enforce/postgres upserts them into rl_events,
// where a row's count grows while its minute lasts) and one JSON line per
// entry to Opts.Log. So a flood of any size from one subject writes one row
// a minute, and one log line per flush.
//
// A flood from many subjects is bounded too: one flush writes the rows of
// at most Opts.Buffer subjects' keys, and one minute gets at
// most Opts.RowsPerMinute new keys. The calls of the keys past
// either cap are not dropped: they are folded into one summary row per
// (minute, kind, definition), subject ratelimit.EventSubjectOverflow, whose
// count is their calls and MoreSubjects how many distinct subjects they
// came from ("N more subjects"; exact up to overflowTrack subjects a
// minute, a lower bound past that), and counted in
// rlctl_enforce_violations_summarized_total by the cap that was full. So
// a replica writes at most Opts.RowsPerMinute rows a minute plus one
// per (kind, definition) that refused past the caps, whatever the flood
// (docs/operations.md, "The record of violations", has the arithmetic).
// Recording never blocks a decision; only a summary row that finds
// Opts.Buffer summary rows already pending is dropped, counted in
// rlctl_enforce_violations_dropped_total{reason="buffer_full"}.

// Sink keeps aggregated violation events. WriteEvents gets
// entries with distinct (Minute, Kind, Subject, DefinitionID) keys and
// adds their counts to what it holds for those keys.
type Sink interface {
	WriteEvents(ctx context.Context, evs []ratelimit.Event) error
}

// Defaults of the Recorder (Opts).
const (
	DefaultBuffer        = 500
	DefaultRowsPerMinute = 1_000
	DefaultFlushInterval = 5 * time.Second
	// violationWriteTimeout bounds one flush's write to the sink.
	violationWriteTimeout = 10 * time.Second
	// overflowTrack bounds the subjects a minute's summary rows tell
	// apart (a hash each, about 2 MB): past it, MoreSubjects stops
	// growing, a lower bound.
	overflowTrack = 100_000
)

// ErrUnknownEventKind: RecordEvent was given a kind pkg/ratelimit does not
// know (ratelimit.EventKinds).
var ErrUnknownEventKind = errors.New("violations: unknown event kind")

type violationKey struct {
	minute                    int64
	kind, subject, definition string
}

func violationKeyOf(ev *ratelimit.Event) violationKey {
	return violationKey{ev.Minute.Unix(), ev.Kind, ev.Subject, ev.DefinitionID}
}

// summaryKey is what one summary row is kept per.
type summaryKey struct {
	minute           int64
	kind, definition string
}

// Opts tune a Recorder; zero values take the defaults.
type Opts struct {
	// Log receives one JSON line per aggregated event per flush, for
	// SIEMs (nil: none).
	Log io.Writer
	// Buffer bounds the subjects' rows one flush writes (default
	// DefaultBuffer), and RowsPerMinute those a minute gets (default
	// DefaultRowsPerMinute): the calls of further subjects are folded into
	// one summary row per kind, definition and minute and counted in
	// rlctl_enforce_violations_summarized_total.
	Buffer        int
	RowsPerMinute int
	// FlushInterval is how often the entries are written (default
	// DefaultFlushInterval).
	FlushInterval time.Duration
	// Now is the clock of the entries' minutes and times (default
	// time.Now): give it the Enforcer's.
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Recorder is the record of violations: an enforce.Observer, and where
// lockouts detected outside the decisions are reported (RecordEvent). It
// is safe for concurrent use.
type Recorder struct {
	sink       Sink
	out        io.Writer // JSON lines; nil: none
	log        *slog.Logger
	now        func() time.Time
	max        int // subjects' keys per flush (Opts.Buffer)
	perMinute  int // new keys per minute (Opts.RowsPerMinute)
	seed       maphash.Seed
	total      *prometheus.CounterVec // kind, severity, axis
	dropped    *prometheus.CounterVec // reason
	summarized *prometheus.CounterVec // reason

	mu      sync.Mutex
	pending map[violationKey]*ratelimit.Event
	// summaries are the pending summary rows.
	summaries map[summaryKey]*ratelimit.Event
	// minute is the minute (Unix seconds) the two sets below are of:
	// keyed, the keys that have a row in it, and folded, the hashes of the
	// (kind, definition, subject) folded into its summary rows.
	minute int64
	keyed  map[violationKey]struct{}
	folded map[uint64]struct{}

	// flushMu serializes flushes; unsent (under it) holds what the sink
	// refused last time, retried with the next flush, bounded by max.
	flushMu sync.Mutex
	unsent  map[violationKey]unsentEvent

	cancel context.CancelFunc
	done   chan struct{}
}

// New starts a Recorder writing to sink (nil: none; the metrics and the
// JSON lines still count), flushing every opts.FlushInterval until Close.
func New(sink Sink, opts Opts) (*Recorder, error) {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.RowsPerMinute <= 0 {
		opts.RowsPerMinute = DefaultRowsPerMinute
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{sink: sink, out: opts.Log, log: opts.Logger, now: opts.Now, max: opts.Buffer,
		perMinute: opts.RowsPerMinute, seed: maphash.MakeSeed(),
		pending: map[violationKey]*ratelimit.Event{}, summaries: map[summaryKey]*ratelimit.Event{},
		keyed: map[violationKey]struct{}{}, folded: map[uint64]struct{}{}, unsent: map[violationKey]unsentEvent{}}
	if err := r.metrics(opts.Registerer); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.loop(ctx, opts.FlushInterval)
	return r, nil
}

// metrics builds the Recorder's metrics and registers them on reg; a
// series registered already (another Recorder on the same registry) is
// shared.
func (r *Recorder) metrics(reg prometheus.Registerer) error {
	vecs := []**prometheus.CounterVec{&r.total, &r.dropped, &r.summarized}
	r.total = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_violations_total",
		Help: "Calls recorded as violation events, by kind (rate_limit_exceeded, quarantine_denied, lockout_started, auth_lockout_started), severity and axis (clr, ctg, tgt, quarantine_caller, quarantine_target, none)."},
		[]string{"kind", "severity", "axis"})
	r.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_violations_dropped_total",
		Help: "Calls the record of violations could not keep, by reason: buffer_full (more summary rows than its buffer (rlapi --events-rows-per-flush) between flushes: that many definitions refusing past the caps), write_failed (the store refused and the retry buffer was full)."},
		[]string{"reason"})
	r.summarized = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_violations_summarized_total",
		Help: "Calls the record of violations folded into a summary row (subject overflow:subjects, one per kind, definition and minute) instead of a row of their subject, by the cap that was full: per_flush (--events-rows-per-flush subjects in one flush) or per_minute (--events-rows-per-minute subjects in one minute)."},
		[]string{"reason"})
	if reg == nil {
		return nil
	}
	for _, v := range vecs {
		if err := reg.Register(*v); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return fmt.Errorf("violations: register metrics: %w", err)
			}
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				*v = existing
			}
		}
	}
	return nil
}

// loop flushes every interval until ctx ends.
func (r *Recorder) loop(ctx context.Context, interval time.Duration) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Close stops the background flush and writes what is still aggregated.
// Close it after the Enforcer whose decisions it observes.
func (r *Recorder) Close() {
	r.cancel()
	<-r.done
	r.Flush(context.Background())
}

// Name is the Recorder's name as an enforce.Observer.
func (r *Recorder) Name() string { return "violations" }

// Observe records a throttle or a quarantine denial (enforce.Observer).
// It never changes the decision.
func (r *Recorder) Observe(_ context.Context, o enforce.Observation) enforce.Verdict {
	switch o.Decision.Reason {
	case enforce.ReasonThrottled:
		r.recordThrottle(o)
	case enforce.ReasonQuarantined:
		r.recordQuarantine(o)
	}
	return enforce.Verdict{}
}

// record counts ev (Kind and Subject set, Count >= 1), under the axis
// label axis (a metric label only).
func (r *Recorder) record(ev ratelimit.Event, axis string) {
	now := r.now().UTC()
	if ev.Count <= 0 {
		ev.Count = 1
	}
	if ev.Severity == "" {
		ev.Severity, _ = ratelimit.EventSeverity(ev.Kind)
	}
	ev.Minute = now.Truncate(time.Minute)
	ev.FirstSeen, ev.LastSeen = now, now
	r.total.WithLabelValues(ev.Kind, ev.Severity, axis).Add(float64(ev.Count))
	k := violationKeyOf(&ev)
	r.mu.Lock()
	if p, ok := r.pending[k]; ok {
		merge(p, &ev)
		r.mu.Unlock()
		return
	}
	if k.minute != r.minute {
		r.minute = k.minute
		clear(r.keyed)
		clear(r.folded)
	}
	_, keyed := r.keyed[k]
	reason := ""
	switch {
	case len(r.pending) >= r.max:
		reason = "per_flush"
	case !keyed && len(r.keyed) >= r.perMinute:
		reason = "per_minute"
	default:
		p := new(ratelimit.Event) // only a new key allocates
		*p = ev
		r.pending[k] = p
		r.keyed[k] = struct{}{}
		r.mu.Unlock()
		return
	}
	dropped := r.fold(&ev, !keyed)
	r.mu.Unlock()
	if dropped {
		r.dropped.WithLabelValues("buffer_full").Add(float64(ev.Count))
		return
	}
	r.summarized.WithLabelValues(reason).Add(float64(ev.Count))
}

// merge adds ev's calls to p, which takes ev's context: p's count and
// first time, and the subjects a summary row stands for, add up.
func merge(p, ev *ratelimit.Event) {
	count, first, more := p.Count, p.FirstSeen, p.MoreSubjects
	*p = *ev
	p.Count += count
	p.FirstSeen = minTime(first, ev.FirstSeen)
	p.MoreSubjects += more
}

// fold adds ev, past the caps, to its summary row (under r.mu), as one
// more subject if another (ev's subject has no row of its own this minute
// and was not folded yet). It reports whether ev was dropped instead:
// Opts.Buffer summary rows are pending already.
func (r *Recorder) fold(ev *ratelimit.Event, another bool) bool {
	sk := summaryKey{ev.Minute.Unix(), ev.Kind, ev.DefinitionID}
	p, ok := r.summaries[sk]
	if !ok {
		if len(r.summaries) >= r.max {
			return true
		}
		p = &ratelimit.Event{Minute: ev.Minute, Kind: ev.Kind, DefinitionID: ev.DefinitionID, FirstSeen: ev.FirstSeen}
		r.summaries[sk] = p
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(ev.Kind)
	h.WriteByte(0)
	h.WriteString(ev.DefinitionID)
	h.WriteByte(0)
	h.WriteString(ev.Subject)
	sum := h.Sum64()
	more := int64(0)
	if _, seen := r.folded[sum]; another && !seen {
		if len(r.folded) < overflowTrack {
			r.folded[sum] = struct{}{}
			more = 1
		} else if !ok {
			more = 1 // past overflowTrack a new row still stands for one
		}
	}
	folded := *ev
	folded.Subject, folded.MoreSubjects = ratelimit.EventSubjectOverflow, more
	merge(p, &folded)
	return false
}

// maxWriteTries is how many flushes in a row may fail to write an entry
// before it is dropped (a minute at the default interval): an outage
// longer than that, or an entry the sink refuses whatever the time,
// must not hold the retry buffer forever.
const maxWriteTries = 12

// Flush writes what was counted since the last flush (Close does too;
// tests, and programs that stop without Close, call it): its JSON lines, then
// the sink (with what the sink refused before).
func (r *Recorder) Flush(ctx context.Context) {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	pending := r.pending
	if len(pending) > 0 || len(r.summaries) > 0 {
		r.pending = make(map[violationKey]*ratelimit.Event, len(pending))
		for _, p := range r.summaries {
			if q, ok := pending[violationKeyOf(p)]; ok {
				merge(q, p) // RecordEvent was given the summary's subject
				continue
			}
			pending[violationKeyOf(p)] = p
		}
		r.summaries = map[summaryKey]*ratelimit.Event{}
	} else {
		pending = nil // r.pending stays the decisions': never read it unlocked
	}
	r.mu.Unlock()
	if len(pending) == 0 && len(r.unsent) == 0 {
		return
	}
	batch := sanitized(pending)
	evs := make([]ratelimit.Event, 0, len(batch))
	for _, ev := range batch {
		evs = append(evs, *ev)
	}
	sortEvents(evs)
	r.writeLines(evs)
	if r.sink == nil {
		return
	}
	tries := map[violationKey]int{}
	for k, u := range r.unsent {
		tries[k] = u.tries
		if p, ok := batch[k]; ok {
			p.Count += u.ev.Count
			p.MoreSubjects += u.ev.MoreSubjects
			p.FirstSeen = minTime(p.FirstSeen, u.ev.FirstSeen)
			continue
		}
		ev := u.ev
		batch[k] = &ev
	}
	r.unsent = map[violationKey]unsentEvent{}
	evs = evs[:0]
	for _, ev := range batch {
		evs = append(evs, *ev)
	}
	sortEvents(evs)
	wctx, cancel := context.WithTimeout(ctx, violationWriteTimeout)
	err := r.sink.WriteEvents(wctx, evs)
	cancel()
	if err == nil {
		return
	}
	// Keep what fits for the next flush, each entry for maxWriteTries
	// flushes at most; count the rest.
	var lost int64
	for _, ev := range evs {
		k := violationKeyOf(&ev)
		if n := tries[k] + 1; n < maxWriteTries && len(r.unsent) < 2*r.max {
			r.unsent[k] = unsentEvent{ev: ev, tries: n}
			continue
		}
		lost += ev.Count
	}
	if lost > 0 {
		r.dropped.WithLabelValues("write_failed").Add(float64(lost))
	}
	r.log.Warn("writing the record of violations failed; retrying with the next flush", "entries", len(evs),
		"kept", len(r.unsent), "dropped_calls", lost, "err", err)
}

// unsentEvent is an entry the sink refused, and how many flushes have.
type unsentEvent struct {
	ev    ratelimit.Event
	tries int
}

// Bounds of the text fields, as rl_events' constraints have them.
const (
	maxEventText  = 1024
	maxEventShort = 64
	maxEventTier  = 256
)

// sanitized returns the entries with their text made storable: valid
// UTF-8 without NUL, cut to the table's lengths (a call's raw target
// name may be anything). Entries whose keys become equal are merged, so
// the keys stay distinct.
func sanitized(pending map[violationKey]*ratelimit.Event) map[violationKey]*ratelimit.Event {
	out := make(map[violationKey]*ratelimit.Event, len(pending))
	for _, ev := range pending {
		ev.Subject = cleanText(ev.Subject, maxEventText)
		ev.DefinitionID = cleanText(ev.DefinitionID, maxEventText)
		ev.Caller = cleanText(ev.Caller, maxEventText)
		ev.Target = cleanText(ev.Target, maxEventText)
		ev.ClientIP = cleanText(ev.ClientIP, maxEventShort)
		ev.TargetType = cleanText(ev.TargetType, maxEventShort)
		ev.Tier = cleanText(ev.Tier, maxEventTier)
		ev.Team = cleanText(ev.Team, maxEventText)
		ev.Path = cleanText(ev.Path, maxEventText)
		ev.Limit = max(ev.Limit, 0)
		if ev.Subject == "" {
			ev.Subject = "unknown"
		}
		k := violationKeyOf(ev)
		if p, ok := out[k]; ok {
			p.Count += ev.Count
			p.MoreSubjects += ev.MoreSubjects
			p.FirstSeen = minTime(p.FirstSeen, ev.FirstSeen)
			if ev.LastSeen.After(p.LastSeen) {
				count, first, more := p.Count, p.FirstSeen, p.MoreSubjects
				*p = *ev
				p.Count, p.FirstSeen, p.MoreSubjects = count, first, more
			}
			continue
		}
		out[k] = ev
	}
	return out
}

// cleanText is s as valid UTF-8 without NUL, at most n characters.
func cleanText(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

// eventLine is one JSON line of the violation log.
type eventLine struct {
	Time    time.Time `json:"time"`
	Message string    `json:"msg"`
	ratelimit.Event
}

func (r *Recorder) writeLines(evs []ratelimit.Event) {
	if r.out == nil || len(evs) == 0 {
		return
	}
	now := r.now().UTC()
	var buf []byte
	for _, ev := range evs {
		b, err := json.Marshal(eventLine{Time: now, Message: "rate limit event", Event: ev})
		if err != nil {
			continue
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := r.out.Write(buf); err != nil {
		r.log.Warn("writing the violation log failed", "lines", len(evs), "err", err)
	}
}

func sortEvents(evs []ratelimit.Event) {
	// Oldest minute first, then by key: stable output for the log and
	// for the upsert's lock order.
	slices.SortFunc(evs, func(a, b ratelimit.Event) int {
		if c := a.Minute.Compare(b.Minute); c != 0 {
			return c
		}
		for _, p := range [][2]string{{a.Kind, b.Kind}, {a.Subject, b.Subject}, {a.DefinitionID, b.DefinitionID}} {
			if p[0] != p[1] {
				if p[0] < p[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// SubjectTypes are the types of the subjects (type:name) the record of
// violations writes: callers (user; agent, a caller with a client id; ip,
// an anonymous caller by its address), the shared buckets of a team (team)
// and of a route tier (route), targets (mcp_server, a2a_agent), an Envoy
// domain's descriptors called without an identity (descriptor:<domain>),
// and the summary rows of what the caps left out (overflow:subjects).
// RecordEvent refuses any other, so every subject recorded can be
// selected by its type.
func SubjectTypes() []string {
	overflow, _, _ := strings.Cut(ratelimit.EventSubjectOverflow, ":")
	return []string{ratelimit.SubjectUser, "agent", enforce.CallerIP, enforce.CallerTeam, ratelimit.EntityRoute,
		ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent, ratelimit.EntityDescriptor, overflow}
}

// RecordEvent adds ev to the record of violations, aggregated with the
// throttles and quarantine denials the Recorder observes: a lockout or a
// failed-credential lockout detected outside the decisions is recorded
// so. ev.Kind must be one of ratelimit.EventKinds and ev.Subject set;
// Count 0 means 1; Severity, one of ratelimit.EventSeverities, defaults to
// the kind's; Minute and the times are the Recorder's clock's.
func (r *Recorder) RecordEvent(ev ratelimit.Event) error {
	if _, ok := ratelimit.EventSeverity(ev.Kind); !ok {
		return fmt.Errorf("%w %q", ErrUnknownEventKind, ev.Kind)
	}
	if ev.Subject == "" {
		return errors.New("violations: an event needs a subject")
	}
	if typ, name, ok := strings.Cut(ev.Subject, ":"); !ok || name == "" || !slices.Contains(SubjectTypes(), typ) {
		return fmt.Errorf("violations: event subject %q: must be <type>:<name> with type %s", ev.Subject, strings.Join(SubjectTypes(), ", "))
	}
	if ev.Severity != "" && !slices.Contains(ratelimit.EventSeverities(), ev.Severity) {
		return fmt.Errorf("violations: unknown event severity %q", ev.Severity)
	}
	axis := "none"
	if ev.DefinitionID != "" {
		if a, _, _, _, err := ratelimit.ParseDefinitionID(ev.DefinitionID); err == nil {
			axis = enforce.AxisLabel(a)
		}
	}
	r.record(ev, axis)
	return nil
}

// recordThrottle records a throttle by the denying gate o.Gate. The
// subject is whom the refusing bucket is kept for: the caller for its own
// buckets (a per-caller tool scope and a descriptor call's identity among
// them), the team, route tier or target for the buckets they share.
func (r *Recorder) recordThrottle(o enforce.Observation) {
	c, g, caller := o.Call, o.Gate, o.Caller
	ev := ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, DefinitionID: g.DefinitionID, Caller: caller,
		ClientIP: c.ClientIP, TargetType: c.TargetType, Target: c.TargetName, Limit: g.Limit, Subject: caller,
		Team: c.Team, Path: c.Path}
	if name, ok, err := ratelimit.NormalizeTargetName(c.TargetType, c.TargetName); ok && err == nil {
		ev.Target = name // as definitions and memberships name it
	}
	switch {
	case g.EntityType == ratelimit.EntityDescriptor:
		// A descriptor's bucket is kept per its entries' values: the
		// identity they carry (pkg/envoyrls maps its identity keys onto
		// the call) names who did it, else the domain does.
		ev.Tier = definitionName(g.DefinitionID)
		if ev.Subject == "" && c.Descriptors != nil {
			ev.Subject = ratelimit.EntityDescriptor + ":" + c.Descriptors.Domain
		}
	case g.Dimension == ratelimit.ToolScopePrincipal || g.Dimension == ratelimit.ToolScopePrincipalTool:
		// A tool's per-caller scopes: the caller's own bucket.
		ev.Tier = definitionName(g.DefinitionID)
		if ev.Subject == "" {
			ev.Subject = c.TargetType + ":" + ev.Target
		}
	case g.EntityType == ratelimit.EntityRoute:
		// A route tier counts per dimension: the subject is whom the
		// refusing bucket is kept for, the tier is the route's name.
		ev.Tier = definitionName(g.DefinitionID)
		switch g.Dimension {
		case enforce.DimensionAll:
			ev.Subject = ratelimit.EntityRoute + ":" + ev.Tier
		case enforce.DimensionIP:
			if o.IPKey != "" {
				ev.Subject = enforce.CallerIP + ":" + o.IPKey
			}
		case enforce.DimensionTeam:
			if c.Team != "" {
				ev.Subject = enforce.CallerTeam + ":" + c.Team
			}
		}
	case g.Axis == ratelimit.AxisTarget:
		ev.Subject = c.TargetType + ":" + ev.Target
	case g.Axis == ratelimit.AxisCaller || g.Axis == ratelimit.AxisCallerTarget:
		ev.Tier = definitionName(g.DefinitionID)
	}
	if typ, name, _ := strings.Cut(ev.Subject, ":"); typ == "" || name == "" {
		return
	}
	r.record(ev, enforce.AxisLabel(g.Axis))
}

// definitionName is the name in a definition id, or "" if it is none.
func definitionName(id string) string {
	if _, _, name, _, err := ratelimit.ParseDefinitionID(id); err == nil {
		return name
	}
	return ""
}

// recordQuarantine records a quarantine denial of its scope (caller,
// target).
func (r *Recorder) recordQuarantine(o enforce.Observation) {
	c, scope, target, caller := o.Call, o.Decision.QuarantineScope, o.Target, o.Caller
	ev := ratelimit.Event{Kind: ratelimit.EventQuarantineDenied, Caller: caller, ClientIP: c.ClientIP,
		TargetType: c.TargetType, Target: target, Subject: caller, Team: c.Team, Path: c.Path}
	if scope == "target" {
		ev.Subject = c.TargetType + ":" + target
	}
	if ev.Subject == "" {
		return
	}
	r.record(ev, "quarantine_"+scope)
}
