package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestApplySendsAbsentAndEmptySectionsApart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		state State
		opts  ApplyOptions
		body  string
		query string
	}{
		{"nil sections are left out", State{}, ApplyOptions{}, `{"prune":false}`, ""},
		{"empty sections are sent empty", State{Definitions: []ratelimit.Definition{}, Admins: []ratelimit.Admin{}},
			ApplyOptions{Prune: true}, `{"definitions":[],"admins":[],"prune":true}`, ""},
		{"dry run is a query parameter", State{Memberships: []ratelimit.Membership{{SubjectType: "user", Subject: "a", Groups: []string{"g"}}}},
			ApplyOptions{DryRun: true}, `{"memberships":[{"subject_type":"user","subject":"a","groups":["g"]}],"prune":false}`, "dry_run=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body, query string
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/apply" {
					t.Errorf("%s %s, want POST /api/apply", r.Method, r.URL.Path)
				}
				b, _ := io.ReadAll(r.Body)
				body, query = string(b), r.URL.RawQuery
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"dry_run":true,"created":1,"updated":1,"deleted":0,"unchanged":3,"changes":[
					{"action":"create","resource_type":"membership","id":"user:a"},
					{"action":"update","resource_type":"definition","id":"caller:group:g:60","fields":[{"field":"user_max_requests","from":20,"to":30}]}]}`)
			}), Options{Token: "t"})
			res, err := c.Apply(context.Background(), tt.state, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if body != tt.body || query != tt.query {
				t.Errorf("sent %s ?%s, want %s ?%s", body, query, tt.body, tt.query)
			}
			if !res.DryRun || res.Created != 1 || res.Unchanged != 3 || !res.Changed() || len(res.Changes) != 2 ||
				res.Changes[1].Fields[0].To != 30.0 || res.Changes[0].Fields != nil {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestApplyStateReadsAbsenceFromJSON(t *testing.T) {
	t.Parallel()
	var s State
	if err := json.Unmarshal([]byte(`{"definitions":[],"memberships":null}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Definitions == nil || s.Memberships != nil || s.Admins != nil {
		t.Errorf("state = %#v: want definitions empty and present, the rest absent", s)
	}
}

func TestApplyIsNeverRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, sl, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"type":"x","title":"Service unavailable","status":503,"detail":"the database did not answer in time"}`)
	}), Options{Retries: 5})
	_, err := c.Apply(context.Background(), State{}, ApplyOptions{})
	if !errors.Is(err, ErrUnavailable) || err.Error() != "the database did not answer in time" {
		t.Errorf("err = %v, want the server's 503", err)
	}
	if calls.Load() != 1 || len(sl.got()) != 0 {
		t.Errorf("%d calls, %d sleeps; want one call and no retry", calls.Load(), len(sl.got()))
	}
}

func TestApplyReturnsFieldErrors(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"https://rlctl.dev/problems/validation","title":"Invalid request","status":400,
			"detail":"definitions[3].window_seconds: must be between 1 and 86400 (got 0)",
			"errors":[{"field":"definitions[3].window_seconds","message":"definitions[3].window_seconds: must be between 1 and 86400 (got 0)"}]}`)
	}), Options{})
	_, err := c.Apply(context.Background(), State{}, ApplyOptions{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrBadRequest) || len(apiErr.Errors) != 1 || apiErr.Errors[0].Field != "definitions[3].window_seconds" {
		t.Errorf("err = %#v", err)
	}
}

func TestApplyTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), Options{Timeout: time.Millisecond})
	defer close(release)

	// Options.Timeout is for one-object calls; Apply allows at least
	// DefaultApplyTimeout unless told otherwise.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Apply(ctx, State{}, ApplyOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 150*time.Millisecond {
		t.Errorf("err = %v after %s, want the context's deadline (200ms), not Options.Timeout", err, time.Since(start))
	}
	_, err = c.Apply(context.Background(), State{}, ApplyOptions{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ApplyOptions.Timeout's deadline", err)
	}
}
