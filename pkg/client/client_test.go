package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func validDefinition() ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "developers",
		WindowSeconds: 60, UserMaxRequests: ptr(100), Enabled: true, Mode: ratelimit.ModeEnforce,
	}
}

func TestNewValidatesBaseURL(t *testing.T) {
	t.Parallel()
	good := []struct{ in, want string }{
		{"http://localhost:8080", "http://localhost:8080"},
		{"https://rlapi.example.com/", "https://rlapi.example.com"},
		{"https://gw.example.com/rlapi//", "https://gw.example.com/rlapi"},
		{"http://[::1]:8080", "http://[::1]:8080"},
	}
	for _, tt := range good {
		c, err := New(tt.in, Options{})
		if err != nil {
			t.Errorf("New(%q): %v", tt.in, err)
			continue
		}
		if c.BaseURL() != tt.want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", tt.in, c.BaseURL(), tt.want)
		}
	}
	bad := []string{"", "localhost:8080", "ftp://example.com", "http://", "/api", "http://h/?x=1", "http://h/#frag", "http://h\x7f"}
	for _, in := range bad {
		if _, err := New(in, Options{}); err == nil {
			t.Errorf("New(%q) succeeded, want an error", in)
		}
	}
}

// oddIDs reach the server intact, each in exactly one path segment.
var oddIDs = []string{
	"target:a2a_agent:/booking-agent:60",
	"target:mcp_tool:srv/tools/search:x:60",
	"caller:group:100%:60",
	"caller:group:%2F:60",
	"caller:group:a b:60",
	"caller:group:café:60",
	"caller:group:what?x=1:60",
	"caller:group:#frag:60",
	"caller:group:a;b,c&d=e+f:60",
	"caller:group:..:60",
	"caller:group:日本:60",
}

func TestOddIDsTravelInOneSegment(t *testing.T) {
	t.Parallel()
	type seen struct{ value, escaped, query string }
	var (
		mu   sync.Mutex
		got  = map[string]seen{}
		note = func(route string, r *http.Request, value string) {
			mu.Lock()
			defer mu.Unlock()
			got[route+" "+value] = seen{value, r.URL.EscapedPath(), r.URL.RawQuery}
		}
	)
	mux := http.NewServeMux()
	// The server's own patterns: a wildcard matches exactly one segment.
	mux.HandleFunc("GET /prefix/api/rate-limits/{id}", func(w http.ResponseWriter, r *http.Request) {
		note("get", r, r.PathValue("id"))
		writeJSON(t, w, http.StatusOK, ratelimit.Definition{ID: r.PathValue("id")})
	})
	mux.HandleFunc("DELETE /prefix/api/rate-limits/{id}", func(w http.ResponseWriter, r *http.Request) {
		note("delete", r, r.PathValue("id"))
		writeJSON(t, w, http.StatusOK, map[string]any{"deleted": true, "id": r.PathValue("id")})
	})
	mux.HandleFunc("PUT /prefix/api/rate-limit-memberships/{id}", func(w http.ResponseWriter, r *http.Request) {
		note("membership", r, r.PathValue("id"))
		writeJSON(t, w, http.StatusOK, ratelimit.Membership{ID: r.PathValue("id")})
	})
	mux.HandleFunc("POST /prefix/api/rate-limit-quarantine/{id}", func(w http.ResponseWriter, r *http.Request) {
		note("quarantine", r, r.PathValue("id"))
		writeJSON(t, w, http.StatusCreated, QuarantineEntry{ID: r.PathValue("id")})
	})
	mux.HandleFunc("DELETE /prefix/api/tokens/{name}", func(w http.ResponseWriter, r *http.Request) {
		note("token", r, r.PathValue("name"))
		writeJSON(t, w, http.StatusOK, map[string]any{"revoked": true})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unrouted request %s %s", r.Method, r.URL.EscapedPath())
		http.NotFound(w, r)
	})
	srv := newServer(t, mux)
	c, _ := newClientFor(t, srv+"/prefix/", Options{Retries: -1})
	ctx := context.Background()

	for _, id := range oddIDs {
		d, err := c.GetDefinition(ctx, id)
		if err != nil {
			t.Errorf("GetDefinition(%q): %v", id, err)
		} else if d.ID != id {
			t.Errorf("GetDefinition(%q) answered for %q", id, d.ID)
		}
		if _, err := c.DeleteDefinition(ctx, id, WriteOptions{}); err != nil {
			t.Errorf("DeleteDefinition(%q): %v", id, err)
		}
		subject := strings.TrimPrefix(id, "caller:group:")
		if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: subject}, WriteOptions{}); err != nil {
			t.Errorf("PutMembership(%q): %v", subject, err)
		}
		if _, err := c.Quarantine(ctx, "user", subject, QuarantineRequest{}, WriteOptions{}); err != nil {
			t.Errorf("Quarantine(%q): %v", subject, err)
		}
		if err := c.RevokeToken(ctx, subject); err != nil {
			t.Errorf("RevokeToken(%q): %v", subject, err)
		}
	}

	check := func(route, value, prefix string) {
		t.Helper()
		s, ok := got[route+" "+value]
		if !ok {
			t.Errorf("%s: server never saw %q", route, value)
			return
		}
		rest, ok := strings.CutPrefix(s.escaped, prefix)
		if !ok || strings.Contains(rest, "/") {
			t.Errorf("%s %q: escaped path %q is not %s<one segment>", route, value, s.escaped, prefix)
		}
		if strings.Contains(value, "/") && !strings.Contains(rest, "%2F") {
			t.Errorf("%s %q: escaped path %q lost the %%2F", route, value, s.escaped)
		}
		if s.query != "" {
			t.Errorf("%s %q: part of the id became the query %q", route, value, s.query)
		}
	}
	for _, id := range oddIDs {
		subject := strings.TrimPrefix(id, "caller:group:")
		check("get", id, "/prefix/api/rate-limits/")
		check("delete", id, "/prefix/api/rate-limits/")
		check("membership", "user:"+subject, "/prefix/api/rate-limit-memberships/")
		check("quarantine", "user:"+subject, "/prefix/api/rate-limit-quarantine/")
		check("token", subject, "/prefix/api/tokens/")
	}
}

func TestPutDefinitionUsesKeyAsID(t *testing.T) {
	t.Parallel()
	var path string
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.EscapedPath()
		writeJSON(t, w, http.StatusOK, validDefinition())
	}), Options{})
	d := validDefinition()
	d.Name = "a/b c"
	d.ID = "stale:id"

	if _, err := c.PutDefinition(context.Background(), d, WriteOptions{}); err != nil {
		t.Fatalf("PutDefinition: %v", err)
	}
	if want := "/api/rate-limits/caller:group:a%2Fb%20c:60"; path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
}

func TestUnsendableIDsAreRefused(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request sent for %s", r.URL.EscapedPath())
	}), Options{})
	for _, name := range []string{"", ".", ".."} {
		if err := c.RevokeToken(context.Background(), name); err == nil {
			t.Errorf("RevokeToken(%q) succeeded", name)
		}
	}
	if _, err := c.GetDefinition(context.Background(), ""); err == nil {
		t.Errorf("GetDefinition(\"\") succeeded")
	}
}

func TestWriteOptionsAreSent(t *testing.T) {
	t.Parallel()
	type seen struct{ ifMatch, dryRun string }
	var (
		mu   sync.Mutex
		reqs []seen
	)
	report := `{"dry_run": true, "action": "create", "resource_type": "definition",
		"id": "caller:group:developers:60", "before": null,
		"after": {"id": "caller:group:developers:60", "axis": "caller", "user_max_requests": 100},
		"changes": [{"field": "user_max_requests", "from": null, "to": 100}]}`
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.Header.Get("If-Match"), r.URL.Query().Get("dry_run")})
		mu.Unlock()
		if r.URL.Query().Get("dry_run") == "true" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, report)
			return
		}
		writeJSON(t, w, http.StatusOK, validDefinition())
	}), Options{})
	ctx := context.Background()

	res, err := c.PutDefinition(ctx, validDefinition(), WriteOptions{IfVersion: 7, DryRun: true})
	if err != nil {
		t.Fatalf("PutDefinition: %v", err)
	}
	rep := res.DryRun
	switch {
	case rep == nil:
		t.Fatal("DryRun report is nil")
	case !rep.DryRun || rep.Action != ActionCreate || rep.ResourceType != "definition" || rep.ID != "caller:group:developers:60":
		t.Errorf("report = %+v", rep)
	case rep.Before != nil:
		t.Errorf("Before = %s, want nil for null", rep.Before)
	case len(rep.Changes) != 1 || rep.Changes[0].Field != "user_max_requests" || rep.Changes[0].From != nil || rep.Changes[0].To != 100.0:
		t.Errorf("Changes = %+v", rep.Changes)
	case !res.Created || res.Value.UserMaxRequests == nil || *res.Value.UserMaxRequests != 100:
		t.Errorf("result = %+v, want Created and Value from the report's after", res)
	}

	if _, err := c.DeleteDefinition(ctx, "caller:group:developers:60", WriteOptions{IfVersion: 3}); err != nil {
		t.Fatalf("DeleteDefinition: %v", err)
	}
	if rep, err := c.DeleteMembership(ctx, "user:alice", WriteOptions{DryRun: true}); err != nil || rep == nil {
		t.Fatalf("DeleteMembership dry run = %v, %v; want a report", rep, err)
	}
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root"}, WriteOptions{}); err != nil {
		t.Fatalf("PutAdmin: %v", err)
	}

	want := []seen{{`"7"`, "true"}, {`"3"`, ""}, {"", "true"}, {"", ""}}
	if len(reqs) != len(want) {
		t.Fatalf("requests = %+v, want %+v", reqs, want)
	}
	for i := range want {
		if reqs[i] != want[i] {
			t.Errorf("request %d: If-Match %q dry_run %q, want %q %q", i, reqs[i].ifMatch, reqs[i].dryRun, want[i].ifMatch, want[i].dryRun)
		}
	}
}

func TestVersionFromETag(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"12"`)
		writeJSON(t, w, http.StatusOK, ratelimit.Membership{SubjectType: "user", Subject: "alice"})
	}), Options{})

	m, err := c.GetMembership(context.Background(), "user:alice")

	if err != nil || m.Version != 12 {
		t.Errorf("GetMembership = %+v, %v; want version 12 from the ETag", m, err)
	}
}

func TestPreconditionFailed(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusPreconditionFailed, "definition caller:group:developers:60 is at version 4, not 3")
	}), Options{})

	_, err := c.PutDefinition(context.Background(), validDefinition(), WriteOptions{IfVersion: 3})

	if !errors.Is(err, ErrPreconditionFailed) {
		t.Errorf("err = %v, want ErrPreconditionFailed", err)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]http.Header{}
	)
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/api/version":
			writeJSON(t, w, http.StatusOK, VersionInfo{Version: "v1.2.3", SchemaVersion: 4, SchemaLatest: 5})
		case "/healthz":
			_, _ = io.WriteString(w, "ok\n")
		default:
			writeJSON(t, w, http.StatusOK, map[string]any{"admins": []any{}})
		}
	}), Options{Token: "s3cret", UserAgent: "rlctl/1.0 (test)"})
	ctx := context.Background()

	if _, err := c.ListAdmins(ctx); err != nil {
		t.Fatalf("ListAdmins: %v", err)
	}
	v, err := c.Version(ctx)
	if err != nil || v != (VersionInfo{Version: "v1.2.3", SchemaVersion: 4, SchemaLatest: 5}) {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Fatalf("Healthz: %v", err)
	}

	h := seen["/api/rate-limit-admins"]
	if got := h.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization = %q", got)
	}
	if got, want := h.Get("User-Agent"), "rlctl-go/"+version.Version+" rlctl/1.0 (test)"; got != want {
		t.Errorf("User-Agent = %q, want %q", got, want)
	}
	for _, p := range []string{"/api/version", "/healthz"} {
		if got := seen[p].Get("Authorization"); got != "" {
			t.Errorf("%s carried Authorization %q; it needs none", p, got)
		}
	}
}

func TestDefaultUserAgent(t *testing.T) {
	t.Parallel()
	var ua string
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua = r.UserAgent()
	}), Options{})
	if err := c.Healthz(context.Background()); err != nil {
		t.Fatalf("Healthz: %v", err)
	}
	if want := "rlctl-go/" + version.Version; ua != want {
		t.Errorf("User-Agent = %q, want %q", ua, want)
	}
}

func TestReadyzReportsServerReason(t *testing.T) {
	t.Parallel()
	var n counter
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "database schema is behind: run rlapi migrate\n")
	}), Options{})

	err := c.Readyz(context.Background())

	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "database schema is behind: run rlapi migrate") {
		t.Errorf("err = %v, want ErrUnavailable with the server's reason", err)
	}
	if n.get() != 1 {
		t.Errorf("server saw %d probes, want 1", n.get())
	}
}

// syncBuffer is a bytes.Buffer safe for the client's concurrent debug writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDebugOutputHasNoToken(t *testing.T) {
	t.Parallel()
	const token = "rlk_s3cret-t0ken"
	var n counter
	var debug syncBuffer
	c, _, srv := newTestClient(t, flaky(&n, 1, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-ID", "req-7")
		writeJSON(t, w, http.StatusOK, map[string]any{"tokens": []any{}})
	}), Options{Token: token, Debug: &debug})

	if _, err := c.ListTokens(context.Background()); err != nil {
		t.Fatalf("ListTokens: %v", err)
	}

	out := debug.String()
	if strings.Contains(out, token) || strings.Contains(out, "s3cret") {
		t.Errorf("debug output leaks the token:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("debug output has %d lines, want request and response for 2 attempts:\n%s", len(lines), out)
	}
	for _, want := range []string{"> GET " + srv.URL + "/api/tokens", "< 503 GET", "attempt=2", "< 200 GET " + srv.URL + "/api/tokens", "request_id=req-7", "authorization=redacted"} {
		if !strings.Contains(out, want) {
			t.Errorf("debug output lacks %q:\n%s", want, out)
		}
	}
}

func TestListAllDefinitionsFollowsCursors(t *testing.T) {
	t.Parallel()
	pages := map[string]DefinitionPage{
		"":   {Definitions: []ratelimit.Definition{{Name: "a"}, {Name: "b"}}, NextCursor: "c1"},
		"c1": {Definitions: []ratelimit.Definition{{Name: "c"}}, NextCursor: "c2"},
		"c2": {Definitions: []ratelimit.Definition{{Name: "d"}}},
	}
	var (
		mu      sync.Mutex
		queries []url.Values
	)
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query())
		mu.Unlock()
		writeJSON(t, w, http.StatusOK, pages[r.URL.Query().Get("cursor")])
	}), Options{})

	defs, err := c.ListAllDefinitions(context.Background(), DefinitionFilter{Axis: "caller", Enabled: ptr(false)})

	if err != nil {
		t.Fatalf("ListAllDefinitions: %v", err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c,d" {
		t.Errorf("names = %s, want a,b,c,d", got)
	}
	if len(queries) != 3 {
		t.Fatalf("made %d requests, want 3", len(queries))
	}
	for i, q := range queries {
		if q.Get("limit") != "1000" || q.Get("axis") != "caller" || q.Get("enabled") != "false" {
			t.Errorf("request %d query = %v, want limit=1000 and the filter kept", i, q)
		}
	}
}

func TestListAllMembershipsKeepsLimitAndStopsOnRepeatedCursor(t *testing.T) {
	t.Parallel()
	var limits []string
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limits = append(limits, r.URL.Query().Get("limit"))
		writeJSON(t, w, http.StatusOK, MembershipPage{Memberships: []ratelimit.Membership{{Subject: "x"}}, NextCursor: "same"})
	}), Options{})

	_, err := c.ListAllMemberships(context.Background(), MembershipFilter{Group: "devs", Limit: 50})

	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("err = %v, want a repeated-cursor error", err)
	}
	if strings.Join(limits, ",") != "50,50" {
		t.Errorf("limits = %v, want 50,50", limits)
	}
}

func TestListQueries(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		call func(*Client) error
		want string
	}{
		{"definitions", func(c *Client) error {
			_, err := c.ListDefinitions(context.Background(), DefinitionFilter{EntityType: "mcp_server", Name: "a b", Group: "devs", Enabled: ptr(true), Limit: 10, Cursor: "xyz"})
			return err
		}, "/api/rate-limits?cursor=xyz&enabled=true&entity_type=mcp_server&group=devs&limit=10&name=a+b"},
		{"definitions unfiltered", func(c *Client) error {
			_, err := c.ListDefinitions(context.Background(), DefinitionFilter{})
			return err
		}, "/api/rate-limits"},
		{"memberships", func(c *Client) error {
			_, err := c.ListMemberships(context.Background(), MembershipFilter{SubjectType: "user"})
			return err
		}, "/api/rate-limit-memberships?subject_type=user"},
		{"audit", func(c *Client) error {
			_, err := c.ListAudit(context.Background(), AuditFilter{Since: since, Resource: "definition/caller:group:devs:60", Actor: "ci", Limit: 5, After: 42})
			return err
		}, "/api/audit?actor=ci&after=42&limit=5&resource=definition%2Fcaller%3Agroup%3Adevs%3A60&since=2026-03-01T11%3A00%3A00Z"},
		{"status", func(c *Client) error {
			_, err := c.Status(context.Background(), StatusQuery{Username: "alice", EntityType: "mcp_server", Name: "fs"})
			return err
		}, "/api/rate-limits-status?entity_type=mcp_server&name=fs&username=alice"},
		{"set enabled", func(c *Client) error {
			_, _, err := c.SetDefinitionEnabled(context.Background(), "caller:group:devs:60", false, WriteOptions{DryRun: true})
			return err
		}, "/api/rate-limits-enabled/caller:group:devs:60?dry_run=true&enabled=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got string
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.URL.RequestURI()
				writeJSON(t, w, http.StatusOK, map[string]any{"dry_run": true, "action": "update"})
			}), Options{})
			if err := tt.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			if got != tt.want {
				t.Errorf("request URI = %s\nwant          %s", got, tt.want)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	var body map[string]any
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			_ = json.NewDecoder(r.Body).Decode(&body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"user:mallory","subject_type":"user","subject":"mallory","reason":"abuse",
				"quarantined_at":"2026-03-01T12:00:00Z","expires_at":"2026-03-01T13:00:00Z","expired":false}`)
		case http.MethodDelete:
			writeJSON(t, w, http.StatusOK, map[string]bool{"removed": false})
		default:
			_, _ = io.WriteString(w, `{"callers":[{"id":"user:mallory","subject_type":"user","subject":"mallory","expired":true}],
				"targets":[],"callers_enabled":true,"targets_enabled":false}`)
		}
	}), Options{})
	ctx := context.Background()

	res, err := c.Quarantine(ctx, "user", "mallory", QuarantineRequest{Reason: "abuse", ExpiresInSeconds: 3600}, WriteOptions{})
	if err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if body["reason"] != "abuse" || body["expires_in_seconds"] != 3600.0 {
		t.Errorf("request body = %v", body)
	}
	if !res.Created || res.Entry.Subject != "mallory" || res.Entry.ExpiresAt == nil ||
		!res.Entry.ExpiresAt.Equal(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)) {
		t.Errorf("result = %+v", res)
	}

	removed, rep, err := c.Unquarantine(ctx, "user", "mallory", WriteOptions{})
	if err != nil || removed || rep != nil {
		t.Errorf("Unquarantine = %v, %v, %v; want false, nil, nil", removed, rep, err)
	}

	l, err := c.ListQuarantine(ctx)
	if err != nil {
		t.Fatalf("ListQuarantine: %v", err)
	}
	if len(l.Callers) != 1 || !l.Callers[0].Expired || !l.CallersEnabled || l.TargetsEnabled {
		t.Errorf("list = %+v", l)
	}
}

func TestCreateTokenReturnsSecret(t *testing.T) {
	t.Parallel()
	var body CreateTokenRequest
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"name":"ci","role":"viewer","created_at":"2026-03-01T12:00:00Z","token":"rlk_abc"}`)
	}), Options{})

	tok, err := c.CreateToken(context.Background(), CreateTokenRequest{Name: "ci", Role: ratelimit.RoleViewer, ExpiresInSeconds: 60})

	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if tok.Name != "ci" || tok.Role != "viewer" || tok.Secret != "rlk_abc" || tok.CreatedAt.IsZero() {
		t.Errorf("token = %+v", tok)
	}
	if body != (CreateTokenRequest{Name: "ci", Role: "viewer", ExpiresInSeconds: 60}) {
		t.Errorf("request body = %+v", body)
	}
}

func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	_, _, srv := newTestClient(t, h, Options{})
	return srv.URL
}
