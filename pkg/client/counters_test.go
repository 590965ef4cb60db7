package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestListCountersSendsOneSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sel   CounterSelector
		query string
	}{
		{CounterSelector{Caller: "user:alice"}, "caller=user%3Aalice"},
		{CounterSelector{Caller: "user:a&b=c #d|e"}, "caller=user%3Aa%26b%3Dc+%23d%7Ce"},
		{CounterSelector{Target: "a2a_agent:/booking"}, "target=a2a_agent%3A%2Fbooking"},
		{CounterSelector{Definition: "target:server_group:fragile:60"}, "definition=target%3Aserver_group%3Afragile%3A60"},
	}
	for _, tt := range tests {
		t.Run(tt.sel.String(), func(t *testing.T) {
			t.Parallel()
			var query string
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/api/rate-limit-counters" {
					t.Errorf("%s %s, want GET /api/rate-limit-counters", r.Method, r.URL.Path)
				}
				query = r.URL.RawQuery
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"counters":[
					{"key":"t|target:server_group:fragile:60|mcpgw","window_index":29513445,"window_seconds":60,
					 "window_start":"2026-02-11T10:45:00Z","count":7,"expires_at":"2026-02-11T10:47:00Z",
					 "definition_id":"target:server_group:fragile:60"},
					{"key":"x|odd","window_index":3,"count":1,"expires_at":"2026-02-11T10:47:00Z"}]}`)
			}), Options{Token: "t"})
			got, err := c.ListCounters(context.Background(), tt.sel, 0)
			if err != nil {
				t.Fatal(err)
			}
			if query != tt.query {
				t.Errorf("query %q, want %q", query, tt.query)
			}
			want := Counter{Key: "t|target:server_group:fragile:60|mcpgw", WindowIndex: 29513445, WindowSeconds: 60,
				WindowStart: time.Date(2026, 2, 11, 10, 45, 0, 0, time.UTC), Count: 7,
				ExpiresAt: time.Date(2026, 2, 11, 10, 47, 0, 0, time.UTC), DefinitionID: "target:server_group:fragile:60"}
			if len(got.Counters) != 2 || got.Counters[0] != want || got.Counters[1].WindowSeconds != 0 || !got.Counters[1].WindowStart.IsZero() {
				t.Errorf("counters = %+v, want [%+v, a key of unknown shape]", got.Counters, want)
			}
			if got.Truncated {
				t.Error("a whole list reads as truncated")
			}
		})
	}
}

func TestCounterSelectorMustNameOneSubject(t *testing.T) {
	t.Parallel()
	calls := &counter{}
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.inc()
		writeJSON(t, w, http.StatusOK, map[string]any{"counters": []any{}})
	}), Options{Token: "t"})
	for _, sel := range []CounterSelector{{}, {Caller: "user:a", Target: "mcp_server:b"}, {Target: "mcp_server:b", Definition: "target:mcp_server:b:60"}} {
		if _, err := c.ListCounters(context.Background(), sel, 0); err == nil {
			t.Errorf("ListCounters(%+v) succeeded", sel)
		}
		if _, err := c.ResetCounters(context.Background(), sel, WriteOptions{}); err == nil {
			t.Errorf("ResetCounters(%+v) succeeded", sel)
		}
	}
	if n := calls.get(); n != 0 {
		t.Errorf("%d requests sent for selectors that name no single subject", n)
	}
	// An empty list is empty, not nil.
	got, err := c.ListCounters(context.Background(), CounterSelector{Caller: "user:nobody"}, 0)
	if err != nil || got.Counters == nil || len(got.Counters) != 0 {
		t.Errorf("empty list = %#v, %v", got, err)
	}
}

// A list or reset the server could not finish says so: a caller that
// read it as the whole answer would miss counters (Redis's bounded scan).
func TestCountersSayTruncated(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			writeJSON(t, w, http.StatusOK, map[string]any{"counters": []any{map[string]any{"key": "c|60|user:a", "count": 1}}, "truncated": true})
		case r.URL.Query().Get("dry_run") == "true":
			writeJSON(t, w, http.StatusOK, map[string]any{"dry_run": true, "action": "reset", "resource_type": "counters", "id": "caller=user:a",
				"before": map[string]any{"counters": []any{map[string]any{"key": "c|60|user:a", "count": 1}}, "truncated": true}})
		default:
			writeJSON(t, w, http.StatusOK, map[string]any{"reset": true, "removed": 1, "truncated": true})
		}
	}), Options{Token: "t"})
	sel := CounterSelector{Caller: "user:a"}
	if list, err := c.ListCounters(context.Background(), sel, 0); err != nil || !list.Truncated || len(list.Counters) != 1 {
		t.Errorf("ListCounters = %+v, %v; want one counter, truncated", list, err)
	}
	for _, dry := range []bool{false, true} {
		if res, err := c.ResetCounters(context.Background(), sel, WriteOptions{DryRun: dry}); err != nil || !res.Truncated || res.Removed != 1 {
			t.Errorf("ResetCounters(dry run %v) = %+v, %v; want 1 removed, truncated", dry, res, err)
		}
	}
}

func TestResetCounters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  WriteOptions
		query string
		body  string
		want  int64
	}{
		{"reset", WriteOptions{}, "caller=user%3Aalice", `{"reset":true,"removed":3}`, 3},
		{"if-version is ignored", WriteOptions{IfVersion: 4}, "caller=user%3Aalice", `{"reset":true,"removed":2}`, 2},
		{"dry run counts the before-image", WriteOptions{DryRun: true}, "caller=user%3Aalice&dry_run=true",
			`{"dry_run":true,"action":"reset","resource_type":"counters","id":"caller=user:alice",
			  "before":{"counters":[{"key":"c|60|user:alice","window_index":1,"count":2,"expires_at":"2026-02-11T10:47:00Z"},
			                        {"key":"s|caller:group:g:60|user:alice","window_index":1,"count":2,"expires_at":"2026-02-11T10:47:00Z"}]},
			  "after":null,"changes":[]}`, 2},
		{"dry run with nothing to reset", WriteOptions{DryRun: true}, "caller=user%3Aalice&dry_run=true",
			`{"dry_run":true,"action":"unchanged","resource_type":"counters","id":"caller=user:alice","before":null,"after":null,"changes":[]}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var query, ifMatch string
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodDelete || r.URL.Path != "/api/rate-limit-counters" {
					t.Errorf("%s %s, want DELETE /api/rate-limit-counters", r.Method, r.URL.Path)
				}
				query, ifMatch = r.URL.RawQuery, r.Header.Get("If-Match")
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			}), Options{Token: "t"})
			got, err := c.ResetCounters(context.Background(), CounterSelector{Caller: "user:alice"}, tt.opts)
			if err != nil || got.Removed != tt.want || got.Truncated {
				t.Errorf("ResetCounters = %+v, %v; want %d removed, not truncated", got, err, tt.want)
			}
			if query != tt.query || ifMatch != "" {
				t.Errorf("sent ?%s If-Match %q, want ?%s and no If-Match", query, ifMatch, tt.query)
			}
		})
	}
}

func TestResetCountersForbidden(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusForbidden, "the viewer role may not do this")
	}), Options{Token: "t"})
	_, err := c.ResetCounters(context.Background(), CounterSelector{Target: "mcp_server:mcpgw"}, WriteOptions{})
	var apiErr *APIError
	if !errors.Is(err, ErrForbidden) || !errors.As(err, &apiErr) || err.Error() != "the viewer role may not do this" {
		t.Errorf("err = %v, want the server's 403 as is", err)
	}
}
