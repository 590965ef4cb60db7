package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestRateLimitEventsRecordThrottles: calls throttled through POST
// /api/check are in GET /api/rate-limit-events with their context,
// filtered by subject, definition, kind and severity, paged newest first
// with a cursor, and followed oldest first with after.
func TestRateLimitEventsRecordThrottles(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	viewer := clientFor(t, env, env.Token(t, "viewer", "viewer"))
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 1))
	// Count the throttles as the answers say: on a loaded machine a call
	// may time out and fail open instead.
	var throttled int64
	for _, who := range []string{"alice", "alice", "alice", "bob", "bob"} {
		a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
			body: `{"username":"` + who + `","target_type":"mcp_server","target_name":"srv","client_ip":"198.51.100.4"}`})
		if r := decodeCheck(t, a); r.Reason == "throttled" {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("no call was throttled")
	}
	env.Violations.Flush(context.Background())

	ctx := context.Background()
	page, err := viewer.ListEvents(ctx, client.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// A target's limit: the subject is the target, one row a minute for
	// both callers (two if the minute turned between the calls).
	if len(page.Events) < 1 || len(page.Events) > 2 {
		t.Fatalf("events %+v, want one row a minute", page.Events)
	}
	var total int64
	for _, ev := range page.Events {
		total += ev.Count
		if ev.Kind != ratelimit.EventRateLimitExceeded || ev.Severity != ratelimit.SeverityWarn || ev.Subject != "mcp_server:srv" ||
			ev.DefinitionID != "target:mcp_server:srv:60" || ev.Limit != 1 || ev.ClientIP != "198.51.100.4" {
			t.Errorf("event %+v, want throttles of target:mcp_server:srv:60", ev)
		}
	}
	if total != throttled {
		t.Errorf("the rows count %d throttles, the answers said %d", total, throttled)
	}
	ev := page.Events[0] // the newest row: its latest caller was bob
	if ev.Caller != "user:bob" {
		t.Errorf("the newest row's caller is %q, want user:bob (the latest)", ev.Caller)
	}
	if p, err := viewer.ListEvents(ctx, client.EventFilter{Subject: "client:nobody"}); err != nil || len(p.Events) != 0 {
		t.Errorf("client: subject: %+v %v, want none and no error", p.Events, err)
	}
	for _, f := range []client.EventFilter{{Subject: "user:alice"}, {Kind: ratelimit.EventQuarantineDenied}, {Severity: "high"},
		{DefinitionID: "target:mcp_server:srv:3600"}, {Since: time.Now().Add(2 * time.Minute)}} {
		if p, err := viewer.ListEvents(ctx, f); err != nil || len(p.Events) != 0 {
			t.Errorf("filter %+v: %+v %v, want none", f, p.Events, err)
		}
	}
	if p, err := viewer.ListEvents(ctx, client.EventFilter{Subject: "mcp_server:srv", Kind: ratelimit.EventRateLimitExceeded,
		Since: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Minute)}); err != nil || len(p.Events) != 1 {
		t.Errorf("matching filter: %+v %v, want the row", p.Events, err)
	}

	// Paging and following over rows recorded directly.
	for _, s := range []string{"user:a", "user:b", "user:c"} {
		if err := env.Violations.RecordEvent(ratelimit.Event{Kind: ratelimit.EventLockoutStarted, Subject: s}); err != nil {
			t.Fatal(err)
		}
	}
	env.Violations.Flush(ctx)
	first, err := viewer.ListEvents(ctx, client.EventFilter{Limit: 2})
	if err != nil || len(first.Events) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	second, err := viewer.ListEvents(ctx, client.EventFilter{Limit: 2, Cursor: first.NextCursor})
	if err != nil || len(second.Events) != 2 || second.NextCursor != "" || second.Events[0].ID >= first.Events[1].ID {
		t.Fatalf("second page: %+v %v", second, err)
	}
	after, err := viewer.ListEvents(ctx, client.EventFilter{After: ev.ID})
	if err != nil || len(after.Events) != 3 || after.Events[0].ID > after.Events[2].ID || after.Events[0].Severity != "high" {
		t.Errorf("after %d: %+v %v, want the 3 lockouts oldest first", ev.ID, after.Events, err)
	}
}

// TestRateLimitEventsRefuseBadFilters: every bad parameter is a 400 that
// names it.
func TestRateLimitEventsRefuseBadFilters(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	hc := contractHTTPClient(t)
	for _, c := range []struct{ query, field string }{
		{"kind=made_up", "kind"},
		{"subject=alice", "subject"},
		{"subject=robot:r2", "subject"},
		{"subject=user:", "subject"},
		{"definition=nonsense", "definition"},
		{"severity=urgent", "severity"},
		{"since=yesterday", "since"},
		{"until=2026-13-01T00:00:00Z", "until"},
		{"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
		{"limit=-1", "limit"},
		{"limit=0", "limit"},
		{"cursor=-5", "cursor"},
		{"after=x", "after"},
	} {
		a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limit-events?" + c.query, token: env.AdminToken})
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"`+c.field+`"`) {
			t.Errorf("?%s: %d %s, want 400 naming %s", c.query, a.status, a.body, c.field)
		}
	}
	// Several at once: each named.
	q := url.Values{"kind": {"x"}, "limit": {"-3"}}
	a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limit-events?" + q.Encode(), token: env.AdminToken})
	if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"kind"`) || !strings.Contains(string(a.body), `"field":"limit"`) {
		t.Errorf("two bad parameters: %d %s, want both named", a.status, a.body)
	}
}

// TestRateLimitEventsRetention: rlapi deletes the rows of minutes older
// than its retention, and keeps the others.
func TestRateLimitEventsRetention(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	now := time.Now().UTC().Truncate(time.Minute)
	row := func(subject string, minute time.Time) ratelimit.Event {
		return ratelimit.Event{Minute: minute, Kind: ratelimit.EventRateLimitExceeded, Severity: "warn", Subject: subject,
			Count: 1, FirstSeen: minute, LastSeen: minute}
	}
	if err := st.UpsertEvents(context.Background(), []ratelimit.Event{row("user:old", now.Add(-8*24*time.Hour)), row("user:new", now.Add(-6*24*time.Hour))}); err != nil {
		t.Fatal(err)
	}
	env := apitest.StartOn(t, st, api.Config{})
	viewer := clientFor(t, env, env.AdminToken)
	// The sweep runs as rlapi starts; wait for it (the deadline only
	// bounds a hang).
	deadline := time.Now().Add(30 * time.Second)
	var got []ratelimit.Event
	for {
		p, err := viewer.ListEvents(context.Background(), client.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		got = p.Events
		if len(got) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) != 1 || got[0].Subject != "user:new" {
		t.Errorf("after the sweep: %+v, want only user:new (6 days old, inside the default 7 days)", got)
	}
}

// rlapi's own token lockouts are in the record of violations as gateways'
// failed-credential lockouts are: kind auth_lockout_started, severity
// high, subject ip:<address or /64>, with the client address, the
// failures that locked it and target "rlapi"; one row per lockout, not
// per refused attempt.
func TestRlapiTokenLockoutsAreRecorded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: 2, TrustedProxies: mustPrefixes("127.0.0.0/8")})
	get := func(token, xff string) answer {
		return do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: token, header: map[string]string{"X-Forwarded-For": xff}})
	}
	for _, xff := range []string{"2001:db8:5:6::1", "2001:db8:5:6::2"} {
		if a := get("rlt_wrong", xff); a.status != http.StatusUnauthorized {
			t.Fatalf("wrong token from %s: %d, want 401", xff, a.status)
		}
	}
	// Refused while locked: these are not lockouts of their own.
	for range 3 {
		if a := get(env.AdminToken, "2001:db8:5:6::3"); a.status != http.StatusTooManyRequests {
			t.Fatalf("locked /64: %d, want 429", a.status)
		}
	}
	env.Violations.Flush(context.Background())
	viewer := clientFor(t, env, env.Token(t, "viewer", "viewer"))
	page, err := viewer.ListEvents(context.Background(), client.EventFilter{Kind: ratelimit.EventAuthLockoutStarted})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 {
		t.Fatalf("events %+v, want one auth_lockout_started row", page.Events)
	}
	ev := page.Events[0]
	if ev.Severity != ratelimit.SeverityHigh || ev.Subject != "ip:2001:db8:5:6::/64" || ev.Caller != "ip:2001:db8:5:6::/64" ||
		ev.ClientIP != "2001:db8:5:6::2" || ev.Target != "rlapi" || ev.Limit != 2 || ev.Count != 1 {
		t.Errorf("event %+v; want high, subject ip:2001:db8:5:6::/64, client_ip 2001:db8:5:6::2, target rlapi, limit 2, count 1", ev)
	}
}

// The failed-credential lockouts gateways report (POST /api/auth-events)
// are in the record of violations too: kind auth_lockout_started,
// severity high, subject ip:<address or /64>, the failures that locked
// it; one row per lockout.
func TestGatewayAuthLockoutsAreRecorded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	gw := clientFor(t, env, env.Token(t, "gateway", ratelimit.RoleEnforcer))
	for i := range 6 {
		if _, err := gw.ReportAuth(t.Context(), client.AuthEvent{ClientIP: "203.0.113.9", Identity: "alice", Outcome: client.AuthFailure}); err != nil {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	env.Violations.Flush(context.Background())
	viewer := clientFor(t, env, env.Token(t, "viewer", "viewer"))
	page, err := viewer.ListEvents(context.Background(), client.EventFilter{Kind: ratelimit.EventAuthLockoutStarted})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 {
		t.Fatalf("events %+v, want one auth_lockout_started row", page.Events)
	}
	if ev := page.Events[0]; ev.Severity != ratelimit.SeverityHigh || ev.Subject != "ip:203.0.113.9" || ev.Limit != 5 || ev.Count != 1 {
		t.Errorf("event %+v; want high, subject ip:203.0.113.9, limit 5, count 1", ev)
	}
}
