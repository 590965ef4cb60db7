package violations_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestThrottlesAndQuarantineDenialsAreRecorded: a caller over its tier's
// limit, a target over its own and a quarantined caller each leave one
// row per minute with their context, count and severity; the next minute
// starts a new row; the SIEM log has a JSON line per row and flush.
func TestThrottlesAndQuarantineDenialsAreRecorded(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	f := newFixture(t, violations.Opts{Log: &log, Registerer: reg})
	f.Def(callerGroup("free", 60, ptr(2), nil), target("mcp_server", "busy", 60, 1))
	f.Member("user", "alice", "free")
	f.Member("user", "mallory", ratelimit.GroupQuarantineCallers)
	alice := user("alice", "srv")
	alice.ClientIP = "203.0.113.7"
	if allowed := f.Burst(alice, 5); allowed != 2 {
		t.Fatalf("alice: %d allowed, want 2", allowed)
	}
	f.Burst(user("bob", "busy"), 4) // 3 throttled by the target's limit
	f.Burst(user("mallory", "srv"), 2)
	f.rec.Flush(context.Background())

	evs := listEvents(t, f.Store, store.EventFilter{})
	minute := f.Clock.Now().UTC()
	got := map[string]ratelimit.Event{}
	for _, ev := range evs {
		got[ev.Kind+" "+ev.Subject] = ev
	}
	if len(evs) != 3 {
		t.Fatalf("rows %+v, want 3", evs)
	}
	a := got["rate_limit_exceeded user:alice"]
	if a.Count != 3 || a.Severity != "warn" || a.DefinitionID != "caller:group:free:60" || a.Tier != "free" ||
		a.Limit != 2 || a.ClientIP != "203.0.113.7" || a.Target != "srv" || a.TargetType != "mcp_server" || !a.Minute.Equal(minute) {
		t.Errorf("alice's row: %+v", a)
	}
	b := got["rate_limit_exceeded mcp_server:busy"]
	if b.Count != 3 || b.Caller != "user:bob" || b.DefinitionID != "target:mcp_server:busy:60" || b.Tier != "" || b.Limit != 1 {
		t.Errorf("the target's row: %+v", b)
	}
	m := got["quarantine_denied user:mallory"]
	if m.Count != 2 || m.Severity != "high" || m.DefinitionID != "" {
		t.Errorf("mallory's row: %+v", m)
	}

	// The same minute adds to the rows; the next starts new ones.
	f.Burst(alice, 1)
	f.rec.Flush(context.Background())
	f.Clock.Advance(time.Minute)
	f.Burst(alice, 3) // a new window: 2 allowed, 1 throttled
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{Subject: "user:alice"})
	if len(rows) != 2 || rows[0].Count != 1 || rows[1].Count != 4 || !rows[0].Minute.Equal(minute.Add(time.Minute)) {
		t.Errorf("alice's rows, newest first: %+v, want counts 1 (the next minute) and 4", rows)
	}

	lines := log.lines(t)
	if len(lines) != 5 { // 3 for the first flush, 1 for each of the next two
		t.Fatalf("%d violation log lines, want 5: %v", len(lines), lines)
	}
	if l := lines[0]; l["kind"] == "" || l["subject"] == "" || l["count"] == nil || l["time"] == nil {
		t.Errorf("log line lacks its fields: %v", l)
	}
	wantMetric := []string{
		"axis=clr,kind=rate_limit_exceeded,severity=warn 5",
		"axis=quarantine_caller,kind=quarantine_denied,severity=high 2",
		"axis=tgt,kind=rate_limit_exceeded,severity=warn 3",
	}
	if got := series(t, reg, "rlctl_enforce_violations_total"); !slices.Equal(got, wantMetric) {
		t.Errorf("rlctl_enforce_violations_total:\n%v\nwant\n%v", got, wantMetric)
	}
}

// TestViolationFloodWritesBoundedRows is the flood test: one
// subject throttled 1,000,000 times over ten minutes, flushed every five
// seconds, writes 10 rows (one per minute) counting 1,000,000 calls and
// 120 log lines (one per flush): rows are bounded by minutes x subjects x
// definitions, lines by flushes x entries, whatever the rate.
func TestViolationFloodWritesBoundedRows(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	f := newFixture(t, violations.Opts{Log: &log, FlushInterval: time.Hour})
	const (
		n     = 1_000_000
		span  = 10 * time.Minute
		every = 5 * time.Second
	)
	step := span / n // 600 µs
	next := f.Clock.Now().Add(every)
	ev := ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:flood", DefinitionID: "caller:group:free:60", Limit: 5}
	for range n {
		if err := f.rec.RecordEvent(ev); err != nil {
			t.Fatal(err)
		}
		f.Clock.Advance(step)
		if !f.Clock.Now().Before(next) {
			f.rec.Flush(context.Background())
			next = next.Add(every)
		}
	}
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{})
	var total int64
	for _, r := range rows {
		total += r.Count
	}
	if len(rows) != 10 || total != n {
		t.Errorf("%d throttles wrote %d rows counting %d calls, want 10 rows counting %d", n, len(rows), total, n)
	}
	if lines := log.lines(t); len(lines) != 120 {
		t.Errorf("%d throttles wrote %d log lines, want 120 (one per flush)", n, len(lines))
	}
}

// TestViolationBufferIsBounded: one flush writes the rows of at most
// ViolationBuffer subjects; the calls of further subjects are not dropped
// but folded into one summary row for their definition and minute
// (overflow:subjects, "N more subjects"), counted in the summarized
// metric; the next flush has room again.
func TestViolationBufferIsBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, violations.Opts{Registerer: reg, Buffer: 3, FlushInterval: time.Hour})
	for i := range 5 {
		for range 2 {
			if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventLockoutStarted, Subject: fmt.Sprintf("user:u%d", i),
				DefinitionID: "caller:group:free:60"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{})
	if len(rows) != 4 {
		t.Fatalf("%d rows %+v, want 3 (the buffer's size) and a summary", len(rows), rows)
	}
	sum := listEvents(t, f.Store, store.EventFilter{Subject: ratelimit.EventSubjectOverflow})
	if len(sum) != 1 || sum[0].Count != 4 || sum[0].MoreSubjects != 2 || sum[0].DefinitionID != "caller:group:free:60" ||
		sum[0].Kind != ratelimit.EventLockoutStarted || sum[0].Severity != "high" {
		t.Errorf("summary row %+v, want the 4 calls of 2 more subjects under caller:group:free:60", sum)
	}
	if got := series(t, reg, "rlctl_enforce_violations_summarized_total"); !slices.Equal(got, []string{"reason=per_flush 4"}) {
		t.Errorf("summarized: %v, want the 4 calls of the 2 subjects past the buffer", got)
	}
	if got := series(t, reg, "rlctl_enforce_violations_dropped_total"); len(got) != 0 {
		t.Errorf("dropped: %v, want nothing", got)
	}
	if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventLockoutStarted, Subject: "user:u4"}); err != nil {
		t.Fatal(err)
	}
	f.rec.Flush(context.Background())
	if rows := listEvents(t, f.Store, store.EventFilter{Subject: "user:u4"}); len(rows) != 1 || rows[0].Severity != "high" {
		t.Errorf("after a flush: %+v, want u4's lockout recorded", rows)
	}
}

// TestViolationRowsPerMinuteCap: a minute gets the rows of at most
// ViolationRowsPerMinute subjects, across flushes; a subject that has its
// row already keeps adding to it; the rest of the minute is the summary
// row, whose subjects are told apart across flushes (one with a row of its
// own, summed up past a flush's cap, is no more subject); the next minute
// starts afresh.
func TestViolationRowsPerMinuteCap(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, violations.Opts{Registerer: reg, Buffer: 3, RowsPerMinute: 4, FlushInterval: time.Hour})
	rec := func(subjects ...string) {
		t.Helper()
		for _, s := range subjects {
			if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: s, DefinitionID: "caller:group:free:60"}); err != nil {
				t.Fatal(err)
			}
		}
		f.rec.Flush(context.Background())
	}
	minute := f.Clock.Now().UTC().Truncate(time.Minute)
	rec("user:a", "user:b", "user:c")           // three rows
	rec("user:d", "user:e", "user:a")           // d: the minute's 4th; e past it; a has its row
	rec("user:e", "user:f", "user:a", "user:a") // e again is no new subject
	rec("user:b", "user:c", "user:d", "user:a") // a past the flush's 3: summed up, no new subject
	f.Clock.Advance(time.Minute)
	rec("user:g")
	counts := map[string]int64{}
	for _, r := range listEvents(t, f.Store, store.EventFilter{Since: minute, Until: minute.Add(time.Minute)}) {
		counts[r.Subject] = r.Count
		if r.Subject == ratelimit.EventSubjectOverflow && r.MoreSubjects != 2 {
			t.Errorf("summary %+v: more_subjects %d, want 2 (e and f)", r, r.MoreSubjects)
		}
	}
	want := map[string]int64{"user:a": 4, "user:b": 2, "user:c": 2, "user:d": 2, ratelimit.EventSubjectOverflow: 4}
	if !maps.Equal(counts, want) {
		t.Errorf("the first minute's rows by subject %v, want %v", counts, want)
	}
	if rows := listEvents(t, f.Store, store.EventFilter{Subject: "user:g"}); len(rows) != 1 {
		t.Errorf("the next minute: %+v, want g's row", rows)
	}
	if got := series(t, reg, "rlctl_enforce_violations_summarized_total"); !slices.Equal(got, []string{"reason=per_flush 1", "reason=per_minute 3"}) {
		t.Errorf("summarized: %v, want the call past a flush's 3 subjects and the 3 past the minute's 4", got)
	}
}

// TestViolationFloodOfDistinctCallersIsCapped is the flood:
// 100,000 distinct callers throttled within 25 s, flushed every 5 s. With
// the defaults the record writes at most DefaultViolationRowsPerMinute
// subjects' rows and one summary row, whose count and more_subjects make
// up the rest: every call is accounted for, none dropped.
func TestViolationFloodOfDistinctCallersIsCapped(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, violations.Opts{Registerer: reg, FlushInterval: time.Hour})
	f.Clock.Advance(time.Duration(60-f.Clock.Now().Second()) * time.Second) // all within one minute
	const n = 100_000
	step := 25 * time.Second / n
	next := f.Clock.Now().Add(5 * time.Second)
	for i := range n {
		if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: fmt.Sprintf("ip:10.%d.%d.%d", i>>16, i>>8&255, i&255),
			DefinitionID: "caller:group:anon:60", Limit: 5}); err != nil {
			t.Fatal(err)
		}
		f.Clock.Advance(step)
		if !f.Clock.Now().Before(next) {
			f.rec.Flush(context.Background())
			next = next.Add(5 * time.Second)
		}
	}
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{Limit: n})
	var calls, subjects int64
	for _, r := range rows {
		calls += r.Count
		subjects += max(r.MoreSubjects, 1)
	}
	if len(rows) != violations.DefaultRowsPerMinute+1 || calls != n || subjects != n {
		t.Errorf("%d callers wrote %d rows for %d calls of %d subjects, want %d rows (the cap and a summary) for all of them",
			n, len(rows), calls, subjects, violations.DefaultRowsPerMinute+1)
	}
	if got := series(t, reg, "rlctl_enforce_violations_dropped_total"); len(got) != 0 {
		t.Errorf("dropped: %v, want nothing", got)
	}
}

// TestRecordEventRefusesUnknownKinds: a kind or severity pkg/ratelimit
// does not know, no subject, or one of a type the events filter does not
// take, is refused, so the metric's labels stay
// bounded and the table's constraints hold.
func TestRecordEventRefusesUnknownKinds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, violations.Opts{})
	for _, ev := range []ratelimit.Event{{Kind: "made_up", Subject: "user:a"}, {Kind: ratelimit.EventLockoutStarted},
		{Kind: ratelimit.EventLockoutStarted, Subject: "user:a", Severity: "urgent"},
		{Kind: ratelimit.EventLockoutStarted, Subject: "alice"}, {Kind: ratelimit.EventLockoutStarted, Subject: ":"},
		{Kind: ratelimit.EventLockoutStarted, Subject: "person:alice"}} {
		if err := f.rec.RecordEvent(ev); err == nil {
			t.Errorf("RecordEvent(%+v) accepted", ev)
		}
	}
}

// TestAuthLockoutsAreRecorded: a failed-credential lockout that started,
// as a failed-credential throttle reports it (auththrottle.Options.Record),
// is recorded with its kind's severity, high, under its subject
// ip:<address>. That the throttle reports started lockouts and no ended
// ones is pkg/auththrottle's test; escalation's lockout_started rows are
// pkg/enforce/escalation's.
func TestAuthLockoutsAreRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, violations.Opts{})
	if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventAuthLockoutStarted, Subject: "ip:203.0.113.7", Caller: "ip:203.0.113.7", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{})
	got := map[string]string{}
	for _, r := range rows {
		got[r.Subject] = r.Kind + " " + r.Severity + " " + r.DefinitionID
	}
	want := map[string]string{"ip:203.0.113.7": "auth_lockout_started high "}
	if len(got) != len(want) || got["ip:203.0.113.7"] != want["ip:203.0.113.7"] {
		t.Errorf("recorded %v, want %v", got, want)
	}
}

// flakySink writes to rl_events, or fails while failing is set.
type flakySink struct {
	mu      sync.Mutex
	failing bool
	next    violations.Sink
}

func (s *flakySink) set(failing bool) {
	s.mu.Lock()
	s.failing = failing
	s.mu.Unlock()
}

func (s *flakySink) WriteEvents(ctx context.Context, evs []ratelimit.Event) error {
	s.mu.Lock()
	failing := s.failing
	s.mu.Unlock()
	if failing {
		return errors.New("database unavailable")
	}
	return s.next.WriteEvents(ctx, evs)
}

// TestViolationWritesRetryThenGiveUp: a flush the store refuses is retried
// with the next ones, its counts added to what came meanwhile; an entry
// refused for a minute of flushes is dropped and counted, so an outage
// cannot hold the buffer forever.
func TestViolationWritesRetryThenGiveUp(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	sink := &flakySink{failing: true}
	f := newFixture(t, violations.Opts{Registerer: reg, FlushInterval: time.Hour}, sink)
	sink.next = postgres.NewEventSink(f.Store.Pool())
	rec := func(subject string, n int) {
		for range n {
			if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: subject}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec("user:a", 3)
	f.rec.Flush(context.Background()) // refused: kept
	rec("user:a", 2)
	sink.set(false)
	f.rec.Flush(context.Background())
	if rows := listEvents(t, f.Store, store.EventFilter{}); len(rows) != 1 || rows[0].Count != 5 {
		t.Fatalf("after the outage: %+v, want user:a counting 5", rows)
	}
	sink.set(true)
	rec("user:b", 4)
	for range 12 {
		f.rec.Flush(context.Background())
	}
	sink.set(false)
	f.rec.Flush(context.Background())
	if rows := listEvents(t, f.Store, store.EventFilter{Subject: "user:b"}); len(rows) != 0 {
		t.Errorf("user:b written after 12 refusals: %+v", rows)
	}
	if got := series(t, reg, "rlctl_enforce_violations_dropped_total"); !slices.Equal(got, []string{"reason=write_failed 4"}) {
		t.Errorf("dropped: %v, want user:b's 4 calls", got)
	}
}

// TestViolationTextIsMadeStorable: a call's raw target may be anything;
// what the table cannot hold (NUL, invalid UTF-8, more than its length)
// is cleaned rather than failing the batch that carries it.
func TestViolationTextIsMadeStorable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, violations.Opts{FlushInterval: time.Hour})
	long := strings.Repeat("x", 5000)
	for _, ev := range []ratelimit.Event{
		{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:nul\x00byte", Target: "t\xffarget"},
		{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:" + long, Target: long, ClientIP: long, Tier: long},
		{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:fine"},
	} {
		if err := f.rec.RecordEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	f.rec.Flush(context.Background())
	rows := listEvents(t, f.Store, store.EventFilter{})
	if len(rows) != 3 {
		t.Fatalf("%d rows, want all 3: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if len([]rune(r.Subject)) > 1024 || strings.ContainsRune(r.Subject, 0) || !utf8.ValidString(r.Target) {
			t.Errorf("row not cleaned: subject %.40q target %.40q", r.Subject, r.Target)
		}
	}
}

// TestViolationFlushWhileRecording: flushes that find nothing new but
// retry what the store refused run while decisions record (run with
// -race: the buffer the decisions write is never read unlocked).
func TestViolationFlushWhileRecording(t *testing.T) {
	t.Parallel()
	sink := &flakySink{failing: true}
	f := newFixture(t, violations.Opts{FlushInterval: time.Hour}, sink)
	sink.next = postgres.NewEventSink(f.Store.Pool())
	if err := f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:first"}); err != nil {
		t.Fatal(err)
	}
	f.rec.Flush(context.Background()) // refused: user:first waits in the retry buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			_ = f.rec.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: fmt.Sprintf("user:u%d", i%50)})
		}
	}()
	for range 5 {
		f.rec.Flush(context.Background())
	}
	<-done
	sink.set(false)
	f.rec.Flush(context.Background())
	var total int64
	for _, r := range listEvents(t, f.Store, store.EventFilter{}) {
		total += r.Count
	}
	if total != 2001 {
		t.Errorf("recorded %d calls, want 2,001", total)
	}
}

// TestRouteThrottlesNameTheirDimension: a route tier's refusal is
// recorded against whom the refusing bucket is kept for (ip:<address>
// for the per-IP dimension, route:<tier> for the shared one, the caller
// for the per-user one), with the tier, not against an empty target.
func TestRouteThrottlesNameTheirDimension(t *testing.T) {
	t.Parallel()
	f := newFixture(t, violations.Opts{})
	perIP := route("login", 60, "/auth/*")
	perIP.IPMaxRequests = ptr(1)
	shared := route("docs", 60, "/docs/*")
	shared.MaxRequests = ptr(1)
	perUser := route("tokens", 60, "/tokens/*")
	perUser.UserMaxRequests = ptr(1)
	f.Def(perIP, shared, perUser)
	f.Burst(routeCall("POST", "/auth/login", "alice", "203.0.113.7"), 3)
	f.Burst(routeCall("GET", "/docs/a", "bob", "198.51.100.1"), 2)
	f.Burst(routeCall("POST", "/tokens/new", "carol", "198.51.100.2"), 2)
	f.rec.Flush(context.Background())

	got := map[string]ratelimit.Event{}
	for _, ev := range listEvents(t, f.Store, store.EventFilter{}) {
		got[ev.Subject] = ev
	}
	want := map[string]struct {
		def, tier string
		count     int64
	}{
		"ip:203.0.113.7": {"target:route:login:60", "login", 2},
		"route:docs":     {"target:route:docs:60", "docs", 1},
		"user:carol":     {"target:route:tokens:60", "tokens", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("rows by subject %v, want the subjects of %v", got, want)
	}
	for subject, w := range want {
		ev, ok := got[subject]
		if !ok || ev.DefinitionID != w.def || ev.Tier != w.tier || ev.Count != w.count {
			t.Errorf("row of %s: %+v, want definition %s, tier %s, count %d", subject, ev, w.def, w.tier, w.count)
		}
	}
}

// TestViolationsNameWhoDidIt: every row names whom the refusing bucket is
// kept for and carries the context an incident review needs. A route throttle of a
// user in a team holds the user, the team, the client address, the
// endpoint (the request path), the tier and the limit; a team-dimension
// throttle is the team's; a tool's per-caller scopes are the caller's, not
// the server's; an Envoy descriptor throttle is the identity the
// descriptor carried (user=bob), or the domain when it carried none,
// never ":". Each subject selects its rows.
func TestViolationsNameWhoDidIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, violations.Opts{})
	login := route("login", 60, "/auth/*")
	login.UserMaxRequests = ptr(1)
	teams := route("reports", 60, "/reports/*")
	teams.TeamMaxRequests = ptr(1)
	desc := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 60,
		MaxRequests: ptr(1), Enabled: true}
	desc.Domain, desc.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: "path", Value: "/api"}}
	desc.Name = ratelimit.DescriptorName(desc.Domain, desc.Descriptor)
	descID := desc.Key()
	f.Def(login, teams, desc, toolDef("github:hot", 3600, 1, ratelimit.ToolScopePrincipalTool),
		toolDef("github:*", 3600, 2, ratelimit.ToolScopePrincipal))

	alice := routeCall("POST", "/auth/login", "alice", "203.0.113.7")
	alice.Team = "acme"
	f.Burst(alice, 2)
	report := routeCall("GET", "/reports/q3", "carol", "198.51.100.9")
	report.Team = "umbrella"
	f.Burst(report, 2)
	f.Burst(toolCall("dave", "hot"), 2)
	f.Burst(toolCall("erin", "cold"), 3)
	envoy := func(username string) enforce.Call {
		return enforce.Call{Username: username, Descriptors: &enforce.DescriptorRequest{Domain: "edge",
			Descriptors: []enforce.Descriptor{{Entries: desc.Descriptor}}}}
	}
	f.Burst(envoy("bob"), 2)
	f.Burst(envoy(""), 3) // the descriptor's bucket is bob's too: both throttled
	f.rec.Flush(context.Background())

	got := map[string]ratelimit.Event{}
	for _, ev := range listEvents(t, f.Store, store.EventFilter{}) {
		if strings.Contains(ev.Subject, ":") && strings.SplitN(ev.Subject, ":", 2)[1] == "" || strings.HasPrefix(ev.Subject, ":") {
			t.Errorf("a row without a subject name: %+v", ev)
		}
		got[ev.Subject] = ev
	}
	a := got["user:alice"]
	if a.Caller != "user:alice" || a.Team != "acme" || a.ClientIP != "203.0.113.7" || a.Path != "/auth/login" ||
		a.Tier != "login" || a.Limit != 1 || a.Count != 1 {
		t.Errorf("alice's route throttle: %+v, want user, team acme, client IP, path /auth/login, tier login, limit 1", a)
	}
	if r := got["team:umbrella"]; r.Caller != "user:carol" || r.Team != "umbrella" || r.Path != "/reports/q3" || r.Tier != "reports" {
		t.Errorf("the team's throttle: %+v, want subject team:umbrella with carol, the path and the tier", r)
	}
	if d := got["user:dave"]; d.DefinitionID != "target:mcp_tool:github:hot:3600" || d.Target != "github" || d.Count != 1 {
		t.Errorf("dave's principal_tool throttle: %+v, want subject user:dave", d)
	}
	if e := got["user:erin"]; e.DefinitionID != "target:mcp_tool:github:*:3600" || e.Count != 1 {
		t.Errorf("erin's principal throttle: %+v, want subject user:erin", e)
	}
	if _, ok := got["mcp_server:github"]; ok {
		t.Errorf("a per-caller tool throttle recorded against the server: %+v", got["mcp_server:github"])
	}
	if b := got["user:bob"]; b.DefinitionID != descID || b.Count != 1 {
		t.Errorf("bob's descriptor throttle: %+v, want subject user:bob", b)
	}
	if d := got["descriptor:edge"]; d.DefinitionID != descID || d.Count != 3 {
		t.Errorf("the anonymous descriptor throttles: %+v, want subject descriptor:edge counting 3", d)
	}
	for subject := range got {
		if rows := listEvents(t, f.Store, store.EventFilter{Subject: subject}); len(rows) != 1 {
			t.Errorf("subject %s selects %d rows, want 1", subject, len(rows))
		}
		typ, _, _ := strings.Cut(subject, ":")
		if !slices.Contains(violations.SubjectTypes(), typ) {
			t.Errorf("subject %s: type %q is not one the events filter takes (%v)", subject, typ, violations.SubjectTypes())
		}
	}
}
