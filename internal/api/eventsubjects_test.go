package api_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestEventsFilterTakesEverySubjectTheRecordWrites: a subject of every
// type the record of violations writes (team:, route: and the rest) can
// be asked for, and client:<id> finds the agent:<id> rows, as
// memberships name that caller a client.
func TestEventsFilterTakesEverySubjectTheRecordWrites(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	ctx := context.Background()
	for _, typ := range violations.SubjectTypes() {
		if err := env.Violations.RecordEvent(ratelimit.Event{Kind: ratelimit.EventLockoutStarted, Subject: typ + ":x"}); err != nil {
			t.Fatal(err)
		}
	}
	env.Violations.Flush(ctx)
	c := clientFor(t, env, env.AdminToken)
	for _, typ := range violations.SubjectTypes() {
		page, err := c.ListEvents(ctx, client.EventFilter{Subject: typ + ":x"})
		if err != nil || len(page.Events) != 1 || page.Events[0].Subject != typ+":x" {
			t.Errorf("subject %s:x: %+v %v, want its one row", typ, page.Events, err)
		}
	}
	a := do(t, env.URL, call{method: "GET", path: "/api/rate-limit-events?subject=" + url.QueryEscape("client:x"), token: env.AdminToken})
	if a.status != 200 {
		t.Fatalf("subject client:x: %d %s", a.status, a.body)
	}
	if evs, _ := a.json(t)["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["subject"] != "agent:x" {
		t.Errorf("subject client:x: %s, want the agent:x row", a.body)
	}
}
