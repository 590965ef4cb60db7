package api_test

// The algorithm fields of a definition through the real
// listener: what PUT, GET, list, status and apply store and show, and the
// bad input they refuse.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDefinitionAlgorithmShownByDefault: a definition that names no
// algorithm is a fixed window, and every response says so.
func TestDefinitionAlgorithmShownByDefault(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	put, err := c.PutDefinition(ctx, group("developers", 60, 100, 0), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if put.Value.Algorithm != ratelimit.AlgorithmFixedWindow {
		t.Errorf("PUT answered algorithm %q, want fixed_window", put.Value.Algorithm)
	}
	got, err := c.GetDefinition(ctx, "caller:group:developers:60")
	if err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != ratelimit.AlgorithmFixedWindow {
		t.Errorf("GET answered algorithm %q, want fixed_window", got.Algorithm)
	}
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs { // the quarantine sentinels too
		if d.Algorithm != ratelimit.AlgorithmFixedWindow {
			t.Errorf("list shows %s with algorithm %q, want fixed_window", d.ID, d.Algorithm)
		}
	}
	st, err := c.Status(ctx, client.StatusQuery{Identity: "developers"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Definitions {
		if d.Algorithm != ratelimit.AlgorithmFixedWindow {
			t.Errorf("status shows %s with algorithm %q, want fixed_window", d.ID, d.Algorithm)
		}
	}
	dis, _, err := c.SetDefinitionEnabled(ctx, "caller:group:developers:60", false, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dis.Algorithm != ratelimit.AlgorithmFixedWindow {
		t.Errorf("disable answered algorithm %q, want fixed_window", dis.Algorithm)
	}
}

// TestDefinitionAlgorithmRoundTrip: the algorithm and bursts are stored
// and shown as sent, an algorithm change keeps the definition's id, and a
// definition sent without them goes back to a fixed window without bursts.
func TestDefinitionAlgorithmRoundTrip(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()

	bucket := targetLimit(ratelimit.EntityMCPServer, "aws-kb", 60, 600)
	bucket.Algorithm, bucket.Burst = ratelimit.AlgorithmTokenBucket, ptr(50)
	callers := group("developers", 60, 100, 40)
	callers.Algorithm, callers.UserBurst, callers.AgentBurst = ratelimit.AlgorithmTokenBucket, ptr(200), ptr(10)
	sliding := group("partners", 10, 30, 0)
	sliding.Algorithm = ratelimit.AlgorithmSlidingWindow
	for _, d := range []ratelimit.Definition{bucket, callers, sliding} {
		put, err := c.PutDefinition(ctx, d, client.WriteOptions{})
		if err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
		if !put.Created {
			t.Errorf("put %s did not create", d.Key())
		}
	}
	wantAlgorithm := func(id, algorithm string, burst, user, agent *int) {
		t.Helper()
		got, err := c.GetDefinition(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Algorithm != algorithm || !sameInt(got.Burst, burst) || !sameInt(got.UserBurst, user) || !sameInt(got.AgentBurst, agent) {
			t.Errorf("%s: algorithm %q burst %v user_burst %v agent_burst %v; want %q %v %v %v", id, got.Algorithm,
				show(got.Burst), show(got.UserBurst), show(got.AgentBurst), algorithm, show(burst), show(user), show(agent))
		}
	}
	wantAlgorithm("target:mcp_server:aws-kb:60", "token_bucket", ptr(50), nil, nil)
	wantAlgorithm("caller:group:developers:60", "token_bucket", nil, ptr(200), ptr(10))
	wantAlgorithm("caller:group:partners:10", "sliding_window", nil, nil, nil)

	// The algorithm is not part of the id: changing it updates in place.
	bucket.Algorithm, bucket.Burst = ratelimit.AlgorithmSlidingWindow, nil
	put, err := c.PutDefinition(ctx, bucket, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if put.Created || put.Value.Version != 2 || put.Value.ID != "target:mcp_server:aws-kb:60" {
		t.Errorf("algorithm change: created %v version %d id %s, want an update to version 2 of the same id", put.Created, put.Value.Version, put.Value.ID)
	}
	wantAlgorithm("target:mcp_server:aws-kb:60", "sliding_window", nil, nil, nil)

	// Sent without the fields, it is a fixed window again.
	callers.Algorithm, callers.UserBurst, callers.AgentBurst = "", nil, nil
	if _, err := c.PutDefinition(ctx, callers, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAlgorithm("caller:group:developers:60", "fixed_window", nil, nil, nil)

	// The list shows what GET shows.
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{Name: "partners"})
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Algorithm != "sliding_window" {
		t.Errorf("list of partners: %+v, want one sliding_window definition", defs)
	}
}

// TestApplyAlgorithmRoundTrip: apply stores the fields; applying the same
// file again, or one that leaves out algorithm over a stored fixed
// window, changes nothing.
func TestApplyAlgorithmRoundTrip(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()

	bucket := targetLimit(ratelimit.EntityMCPServer, "aws-kb", 60, 600)
	bucket.Algorithm, bucket.Burst = ratelimit.AlgorithmTokenBucket, ptr(50)
	plain := group("developers", 60, 100, 0)
	state := client.State{Definitions: []ratelimit.Definition{bucket, plain}}
	res := mustApply(t, c, state, client.ApplyOptions{})
	if res.Created != 2 {
		t.Fatalf("first apply: %s, want 2 created", applyCounts(res))
	}
	got, err := c.GetDefinition(ctx, bucket.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != "token_bucket" || !sameInt(got.Burst, ptr(50)) {
		t.Errorf("applied bucket: algorithm %q burst %v, want token_bucket 50", got.Algorithm, show(got.Burst))
	}
	res = mustApply(t, c, state, client.ApplyOptions{})
	if res.Unchanged != 2 || len(res.Changes) != 0 {
		t.Errorf("second apply: %s %+v, want 2 unchanged", applyCounts(res), res.Changes)
	}
	explicit := plain
	explicit.Algorithm = ratelimit.AlgorithmFixedWindow
	res = mustApply(t, c, client.State{Definitions: []ratelimit.Definition{explicit}}, client.ApplyOptions{})
	if res.Unchanged != 1 {
		t.Errorf("apply naming fixed_window over the same definition: %s %+v, want 1 unchanged", applyCounts(res), res.Changes)
	}
	bucket.Burst = ptr(60)
	res = mustApply(t, c, client.State{Definitions: []ratelimit.Definition{bucket}}, client.ApplyOptions{})
	if res.Updated != 1 || len(res.Changes) != 1 || len(res.Changes[0].Fields) != 1 || res.Changes[0].Fields[0].Field != "burst" {
		t.Errorf("burst change: %s %+v, want one update of burst", applyCounts(res), res.Changes)
	}
}

// algorithmBadInput is what every write path refuses: the definition, the
// field the 400 names, and a word of the rule its message gives.
func algorithmBadInput() []struct {
	name  string
	def   ratelimit.Definition
	field string
} {
	target := func(mut func(*ratelimit.Definition)) ratelimit.Definition {
		d := targetLimit(ratelimit.EntityMCPServer, "aws-kb", 60, 600)
		mut(&d)
		return d
	}
	caller := func(mut func(*ratelimit.Definition)) ratelimit.Definition {
		d := group("developers", 60, 100, 0)
		mut(&d)
		return d
	}
	return []struct {
		name  string
		def   ratelimit.Definition
		field string
	}{
		{"unknown algorithm", target(func(d *ratelimit.Definition) { d.Algorithm = "leaky_bucket" }), "algorithm"},
		{"burst zero", target(func(d *ratelimit.Definition) { d.Algorithm, d.Burst = "token_bucket", ptr(0) }), "burst"},
		{"burst negative", target(func(d *ratelimit.Definition) { d.Algorithm, d.Burst = "token_bucket", ptr(-3) }), "burst"},
		{"user_burst below 1", caller(func(d *ratelimit.Definition) { d.Algorithm, d.UserBurst = "token_bucket", ptr(0) }), "user_burst"},
		{"burst on the caller axis", caller(func(d *ratelimit.Definition) { d.Algorithm, d.Burst = "token_bucket", ptr(5) }), "burst"},
		{"user_burst on the target axis", target(func(d *ratelimit.Definition) { d.Algorithm, d.UserBurst = "token_bucket", ptr(5) }), "user_burst"},
		{"agent_burst without agent_max_requests", caller(func(d *ratelimit.Definition) { d.Algorithm, d.AgentBurst = "token_bucket", ptr(5) }), "agent_burst"},
		{"burst on a fixed window", target(func(d *ratelimit.Definition) { d.Burst = ptr(5) }), "burst"},
		{"burst on a named fixed window", target(func(d *ratelimit.Definition) { d.Algorithm, d.Burst = "fixed_window", ptr(5) }), "burst"},
		{"user_burst on a sliding window", caller(func(d *ratelimit.Definition) { d.Algorithm, d.UserBurst = "sliding_window", ptr(5) }), "user_burst"},
	}
}

// TestDefinitionAlgorithmBadInput: each is a 400 naming the field, and
// nothing is stored.
func TestDefinitionAlgorithmBadInput(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	for _, tt := range algorithmBadInput() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.PutDefinition(ctx, tt.def, client.WriteOptions{})
			var pe *client.APIError
			if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
				t.Fatalf("put: %v, want a 400", err)
			}
			if !problemNames(pe, tt.field) {
				t.Errorf("the 400 names %+v, want field %q with a message about it", pe.Errors, tt.field)
			}
			if _, err := c.GetDefinition(ctx, tt.def.Key()); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("after the refused put, get: %v, want not found", err)
			}
		})
	}
	if n := auditCount(t, env); n != 0 {
		t.Errorf("%d audit rows after refused writes", n)
	}
}

// TestApplyAlgorithmBadInput: one bad definition refuses the whole apply,
// naming definitions[i].<field>; nothing changes.
func TestApplyAlgorithmBadInput(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	mustApply(t, c, client.State{Definitions: []ratelimit.Definition{group("existing", 60, 100, 0)}}, client.ApplyOptions{})
	before := takeStateSnapshot(t, c, env)
	for _, tt := range algorithmBadInput() {
		t.Run(tt.name, func(t *testing.T) {
			good := targetLimit(ratelimit.EntityMCPServer, "fine", 60, 10)
			changed := group("existing", 60, 200, 0)
			_, err := c.Apply(ctx, client.State{Definitions: []ratelimit.Definition{good, changed, tt.def}}, client.ApplyOptions{})
			var pe *client.APIError
			if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
				t.Fatalf("apply: %v, want a 400", err)
			}
			if !problemNames(pe, "definitions[2]."+tt.field) {
				t.Errorf("the 400 names %+v, want field definitions[2].%s", pe.Errors, tt.field)
			}
		})
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("refused applies changed the state:\n%s", d)
	}
}

// problemNames reports whether the problem lists field with a message
// that names it.
func problemNames(pe *client.APIError, field string) bool {
	for _, fe := range pe.Errors {
		if fe.Field == field && strings.Contains(fe.Message, field[strings.LastIndex(field, ".")+1:]) {
			return true
		}
	}
	return false
}

func sameInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func show(v *int) any {
	if v == nil {
		return nil
	}
	return *v
}
