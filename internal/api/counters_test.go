package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// countsByKey sums a list's counts per key. A run that straddles a window
// boundary splits a key's calls over two windows, both live; the sum is what
// the enforcer counted either way.
func countsByKey(cs []client.Counter) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cs {
		out[c.Key] += c.Count
	}
	return out
}

func listCounters(t *testing.T, c *client.Client, sel client.CounterSelector) []client.Counter {
	t.Helper()
	cs, err := countersOf(c.ListCounters(context.Background(), sel, 0))
	if err != nil {
		t.Fatalf("list counters %s: %v", sel, err)
	}
	return cs
}

func wantCounts(t *testing.T, what string, got []client.Counter, want map[string]int64) {
	t.Helper()
	if g := countsByKey(got); !mapsEqual(g, want) {
		t.Errorf("%s: counts = %v, want %v", what, g, want)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// countersFixture makes real counters with the real Enforcer: a caller
// group with caller, caller_target and shadow definitions, a target limit
// and a server group on mcpgw, and calls by alice (3), al (1), bob (2) and
// the agent bot (1, to /booking).
func countersFixture(t *testing.T) (*client.Client, *apitest.Env) {
	t.Helper()
	c, env := newClient(t)
	ctx := context.Background()
	for _, d := range []ratelimit.Definition{
		group("developers", 60, 100, 50),
		{Axis: "caller_target", EntityType: "group", Name: "developers", WindowSeconds: 60, UserMaxRequests: ptr(100), AgentMaxRequests: ptr(50), Enabled: true},
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 3600, UserMaxRequests: ptr(1000), AgentMaxRequests: ptr(500), Mode: "shadow", Enabled: true},
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true},
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"mcpgw"}, Enabled: true},
	} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	for _, m := range []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}},
		{SubjectType: "user", Subject: "al", Groups: []string{"developers"}},
		{SubjectType: "user", Subject: "bob", Groups: []string{"developers"}},
		{SubjectType: "client", Subject: "bot", Groups: []string{"developers"}},
	} {
		if _, err := c.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatalf("put membership %s: %v", m.Key(), err)
		}
	}
	if err := env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		c enforce.Call
		n int
	}{
		{enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"}, 3},
		{enforce.Call{Username: "al", TargetType: "mcp_server", TargetName: "mcpgw"}, 1},
		{enforce.Call{Username: "bob", TargetType: "mcp_server", TargetName: "/mcpgw/"}, 2},
		{enforce.Call{ClientID: "bot", TargetType: "a2a_agent", TargetName: "booking"}, 1},
	} {
		for range call.n {
			d, err := env.Enforcer.Check(ctx, call.c)
			if err != nil || !d.Allowed || len(d.Gates) == 0 {
				t.Fatalf("check %+v = %+v, %v; want allowed with gates", call.c, d, err)
			}
		}
	}
	return c, env
}

// The counters the fixture's calls leave, per selector.
var (
	aliceCounts = map[string]int64{
		callerKey("user:alice"):                                     3,
		callerTargetKey("user:alice", "mcp_server:mcpgw"):           3,
		shadowKey("caller:group:developers:3600", "user:alice", ""): 3,
	}
	alCounts = map[string]int64{
		callerKey("user:al"):                                     1,
		callerTargetKey("user:al", "mcp_server:mcpgw"):           1,
		shadowKey("caller:group:developers:3600", "user:al", ""): 1,
	}
	mcpgwCounts = map[string]int64{
		callerTargetKey("user:alice", "mcp_server:mcpgw"):    3,
		callerTargetKey("user:al", "mcp_server:mcpgw"):       1,
		callerTargetKey("user:bob", "mcp_server:mcpgw"):      2,
		targetKey("target:mcp_server:mcpgw:60", ""):          6,
		targetKey("target:server_group:fragile:60", "mcpgw"): 6,
	}
)

func TestCountersFromTheEnforcer(t *testing.T) {
	t.Parallel()
	c, _ := countersFixture(t)

	tests := []struct {
		name string
		sel  client.CounterSelector
		want map[string]int64
	}{
		{"caller", client.CounterSelector{Caller: "user:alice"}, aliceCounts},
		{"caller is exact, not a prefix", client.CounterSelector{Caller: "user:al"}, alCounts},
		{"agent caller", client.CounterSelector{Caller: "agent:bot"}, map[string]int64{
			callerKey("agent:bot"): 1, callerTargetKey("agent:bot", "a2a_agent:/booking"): 1, shadowKey("caller:group:developers:3600", "agent:bot", ""): 1}},
		{"client spelling of an agent", client.CounterSelector{Caller: "client:bot"}, map[string]int64{
			callerKey("agent:bot"): 1, callerTargetKey("agent:bot", "a2a_agent:/booking"): 1, shadowKey("caller:group:developers:3600", "agent:bot", ""): 1}},
		{"unknown caller", client.CounterSelector{Caller: "user:carol"}, map[string]int64{}},
		{"target", client.CounterSelector{Target: "mcp_server:mcpgw"}, mcpgwCounts},
		{"target name is normalized", client.CounterSelector{Target: "mcp_server:/mcpgw/"}, mcpgwCounts},
		{"agent target", client.CounterSelector{Target: "a2a_agent:booking"}, map[string]int64{callerTargetKey("agent:bot", "a2a_agent:/booking"): 1}},
		{"target definition", client.CounterSelector{Definition: "target:mcp_server:mcpgw:60"}, map[string]int64{targetKey("target:mcp_server:mcpgw:60", ""): 6}},
		{"server group definition", client.CounterSelector{Definition: "target:server_group:fragile:60"}, map[string]int64{targetKey("target:server_group:fragile:60", "mcpgw"): 6}},
		{"shadow definition", client.CounterSelector{Definition: "caller:group:developers:3600"}, map[string]int64{
			shadowKey("caller:group:developers:3600", "user:alice", ""): 3, shadowKey("caller:group:developers:3600", "user:al", ""): 1,
			shadowKey("caller:group:developers:3600", "user:bob", ""): 2, shadowKey("caller:group:developers:3600", "agent:bot", ""): 1}},
		// An enforce caller definition shows the buckets of its window of
		// every caller in its group (shared with their other definitions
		// of that window): what --caller shows for each of them.
		{"enforce caller definition", client.CounterSelector{Definition: "caller:group:developers:60"}, map[string]int64{
			callerKey("user:alice"): 3, callerKey("user:al"): 1, callerKey("user:bob"): 2, callerKey("agent:bot"): 1}},
		{"enforce caller_target definition", client.CounterSelector{Definition: "caller_target:group:developers:60"}, map[string]int64{
			callerTargetKey("user:alice", "mcp_server:mcpgw"): 3, callerTargetKey("user:al", "mcp_server:mcpgw"): 1, callerTargetKey("user:bob", "mcp_server:mcpgw"): 2,
			callerTargetKey("agent:bot", "a2a_agent:/booking"): 1}},
		{"caller definition of another window", client.CounterSelector{Definition: "caller:group:developers:120"}, map[string]int64{}},
		{"caller definition of a group without members", client.CounterSelector{Definition: "caller:group:nobody:60"}, map[string]int64{}},
	}
	// The subtests run at once, not in parallel: a parallel subtest waits
	// for a free slot among the package's parallel tests, on a loaded
	// machine longer than a 60 s window's counters live (two windows).
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCounts(t, tt.sel.String(), listCounters(t, c, tt.sel), tt.want)
		})
	}

	t.Run("fields", func(t *testing.T) {
		now := time.Now()
		for _, ct := range listCounters(t, c, client.CounterSelector{Target: "mcp_server:mcpgw"}) {
			if ct.WindowSeconds != 60 || ct.WindowIndex <= 0 ||
				!ct.WindowStart.Equal(time.Unix(ct.WindowIndex*60, 0)) ||
				!ct.ExpiresAt.Equal(ct.WindowStart.Add(120*time.Second)) || !ct.ExpiresAt.After(now) ||
				ct.WindowStart.After(now) {
				t.Errorf("counter %+v: want a 60 s window containing or just before now, expiring a window after it ends", ct)
			}
			wantDef := ""
			switch {
			case ct.Key == targetKey("target:mcp_server:mcpgw:60", ""):
				wantDef = "target:mcp_server:mcpgw:60"
			case strings.HasPrefix(ct.Key, "t|target:server_group:fragile:60|"):
				wantDef = "target:server_group:fragile:60"
			}
			if ct.DefinitionID != wantDef {
				t.Errorf("counter %s: definition_id %q, want %q", ct.Key, ct.DefinitionID, wantDef)
			}
		}
		for _, ct := range listCounters(t, c, client.CounterSelector{Definition: "caller:group:developers:3600"}) {
			if ct.WindowSeconds != 3600 || ct.DefinitionID != "caller:group:developers:3600" {
				t.Errorf("shadow counter %+v: want window 3600 and its definition", ct)
			}
		}
	})
}

func TestResetCounters(t *testing.T) {
	t.Parallel()
	c, env := countersFixture(t)
	ctx := context.Background()
	bob := client.CounterSelector{Caller: "user:bob"}
	bobCounts := countsByKey(listCounters(t, c, bob))

	// A dry run reports and changes nothing, and writes no audit row.
	audits := auditCount(t, env)
	n, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Caller: "user:al"}, client.WriteOptions{DryRun: true}))
	if err != nil || n != int64(len(listCounters(t, c, client.CounterSelector{Caller: "user:al"}))) || n < 3 {
		t.Fatalf("dry run = %d, %v; want the number of al's counters (at least 3)", n, err)
	}
	wantCounts(t, "al after a dry run", listCounters(t, c, client.CounterSelector{Caller: "user:al"}), alCounts)
	if got := auditCount(t, env); got != audits {
		t.Errorf("a dry run wrote %d audit rows", got-audits)
	}

	// Reset al: its counters go; alice's (whose name al prefixes), bob's
	// and the target's stay.
	removed, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Caller: "user:al"}, client.WriteOptions{}))
	if err != nil || removed != n {
		t.Fatalf("reset = %d, %v; want %d", removed, err, n)
	}
	wantCounts(t, "al after the reset", listCounters(t, c, client.CounterSelector{Caller: "user:al"}), map[string]int64{})
	wantCounts(t, "alice after al's reset", listCounters(t, c, client.CounterSelector{Caller: "user:alice"}), aliceCounts)
	wantCounts(t, "bob after al's reset", listCounters(t, c, bob), bobCounts)
	wantMcpgw := map[string]int64{}
	for k, v := range mcpgwCounts {
		if k != callerTargetKey("user:al", "mcp_server:mcpgw") {
			wantMcpgw[k] = v
		}
	}
	wantCounts(t, "mcpgw after al's reset", listCounters(t, c, client.CounterSelector{Target: "mcp_server:mcpgw"}), wantMcpgw)

	// One audit row, filed under the selector, listing what was reset.
	page, err := c.ListAudit(ctx, client.AuditFilter{Resource: "counters/caller=user:al"})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("audit for counters/caller=user:al = %+v, %v; want one entry", page, err)
	}
	e := page.Entries[0]
	var before struct {
		Counters []client.Counter `json:"counters"`
	}
	if err := json.Unmarshal(e.Before, &before); err != nil {
		t.Fatal(err)
	}
	if e.Action != "reset" || e.ResourceType != "counters" || e.Actor != "test-admin" || e.After != nil ||
		!mapsEqual(countsByKey(before.Counters), alCounts) {
		t.Errorf("audit entry = %+v, before %+v; want a reset by test-admin with al's counters before", e, before)
	}

	// Nothing left to reset: unchanged, no audit row.
	audits = auditCount(t, env)
	if removed, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Caller: "user:al"}, client.WriteOptions{})); err != nil || removed != 0 {
		t.Errorf("second reset = %d, %v; want 0", removed, err)
	}
	if got := auditCount(t, env); got != audits {
		t.Errorf("an empty reset wrote %d audit rows", got-audits)
	}

	// al's windows start afresh.
	d, err := env.Enforcer.Check(ctx, enforce.Call{Username: "al", TargetType: "mcp_server", TargetName: "mcpgw"})
	if err != nil || !d.Allowed {
		t.Fatalf("check after reset = %+v, %v", d, err)
	}
	wantCounts(t, "al after one more call", listCounters(t, c, client.CounterSelector{Caller: "user:al"}), alCounts)

	// Resetting a target leaves the callers' own buckets alone.
	if _, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Target: "mcp_server:mcpgw"}, client.WriteOptions{})); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, "mcpgw after its reset", listCounters(t, c, client.CounterSelector{Target: "mcp_server:mcpgw"}), map[string]int64{})
	wantCounts(t, "bob after mcpgw's reset", listCounters(t, c, bob), map[string]int64{
		callerKey("user:bob"): 2, shadowKey("caller:group:developers:3600", "user:bob", ""): 2})
}

func TestCountersPermissions(t *testing.T) {
	t.Parallel()
	c, env := countersFixture(t)
	ctx := context.Background()
	viewer := clientFor(t, env, env.Token(t, "grafana", "viewer"))
	if cs, err := countersOf(viewer.ListCounters(ctx, client.CounterSelector{Caller: "user:alice"}, 0)); err != nil || len(cs) < 3 {
		t.Errorf("viewer list = %d counters, %v; want alice's", len(cs), err)
	}
	_, err := removedOf(viewer.ResetCounters(ctx, client.CounterSelector{Caller: "user:alice"}, client.WriteOptions{}))
	wantStatus(t, err, client.ErrForbidden, "")
	_, err = removedOf(viewer.ResetCounters(ctx, client.CounterSelector{Caller: "user:alice"}, client.WriteOptions{DryRun: true}))
	wantStatus(t, err, client.ErrForbidden, "")
	wantCounts(t, "alice after the viewer's attempts", listCounters(t, c, client.CounterSelector{Caller: "user:alice"}), aliceCounts)
}

func TestCounterSelectorsAreRefused(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	hc := contractHTTPClient(t)
	tests := []struct {
		name, query, detail string
	}{
		{"no selector", "", "exactly one of caller"},
		{"two selectors", "caller=user:alice&target=mcp_server:mcpgw", "got caller and target"},
		{"a selector twice", "caller=user:alice&caller=user:bob", "caller: given more than once"},
		{"empty caller", "caller=", "caller: must be user:<name>"},
		{"caller without a type", "caller=alice", "caller: must be user:<name>"},
		{"caller of a target type", "caller=server:mcpgw", "caller: must be user:<name>"},
		{"caller without a name", "caller=user:", "must not be empty"},
		{"target without a type", "target=mcpgw", "target: must be <entity_type>:<name>"},
		{"target of a definition type", "target=server_group:fragile", "target: must be <entity_type>:<name>"},
		{"target without a name", "target=mcp_server:", "target:"},
		{"malformed definition", "definition=nope", "definition:"},
		{"definition with a bad window", "definition=target:mcp_server:mcpgw:0", "definition:"},
		{"bad limit", "caller=user:alice&limit=0", "limit"},
		{"bad dry_run", "caller=user:alice&dry_run=maybe", "dry_run"},
	}
	for _, tt := range tests {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			if tt.name == "bad limit" && method == http.MethodDelete || tt.name == "bad dry_run" && method == http.MethodGet {
				continue
			}
			t.Run(method+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				req, err := http.NewRequest(method, env.URL+"/api/rate-limit-counters?"+tt.query, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+env.AdminToken)
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var p api.Problem
				if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.Detail, tt.detail) {
					t.Errorf("?%s: %d %q; want 400 containing %q", tt.query, resp.StatusCode, p.Detail, tt.detail)
				}
			})
		}
	}
	// The SDK refuses a selector that is not exactly one subject before
	// sending anything.
	c := clientFor(t, env, env.AdminToken)
	for _, sel := range []client.CounterSelector{{}, {Caller: "user:a", Definition: "target:mcp_server:x:60"}} {
		if _, err := countersOf(c.ListCounters(context.Background(), sel, 0)); err == nil || errors.Is(err, client.ErrBadRequest) {
			t.Errorf("ListCounters(%+v) = %v; want a local error", sel, err)
		}
	}
}

// TestCounterSelectorsAreExact plants keys whose identities hold the
// characters that could make a selector spill over: LIKE wildcards, '|'
// (the key separator, legal in user names and server names) and ':'.
func TestCounterSelectorsAreExact(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	keys := []string{
		callerKey("user:alice"),
		callerKey("user:al"),
		callerKey("user:al%"),
		callerKey("user:a_"),
		callerKey("user:x|user:alice"),                      // caller "x|user:alice"
		callerTargetKey("user:alice|x", "mcp_server:mcpgw"), // caller "alice|x" on mcpgw
		callerTargetKey("user:alice", "mcp_server:mcpgw"),
		callerTargetKey("user:bob", "mcp_server:mcpgw:x"),
		shadowKey("caller:group:g:60", "user:alice", ""),
		shadowKey("caller_target:group:g:60", "user:alice", "mcp_server:mcpgw"),
		shadowKey("caller_target:group:g:60", "user:alice|x", "a2a_agent:/b"), // caller "alice|x"
		targetKey("target:mcp_server:mcpgw:60", ""),
		targetKey("target:mcp_server:mcpgw:x:60", ""), // server "mcpgw:x"
		targetKey("target:mcp_tool:mcpgw:search:60", ""),
		targetKey("target:server_group:fragile:60", "mcpgw"),
		targetKey("target:server_group:fragile:60", "mcpgw:x"),
		targetKey("target:server_group:fragile:60", "mcpgwx"),
	}
	now := time.Now()
	for _, k := range keys {
		_, err := env.Store.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ($1, $2, 1, $3)`,
			k, now.Unix()/60, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
	}
	// An expired counter and one at zero are not live.
	for _, row := range []struct {
		window, count int64
		expires       time.Time
	}{{now.Unix()/60 - 5, 5, now.Add(-time.Second)}, {now.Unix()/60 - 1, 0, now.Add(time.Minute)}} {
		if _, err := env.Store.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ('c|60|user:alice', $1, $2, $3)`,
			row.window, row.count, row.expires); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		sel  client.CounterSelector
		want []string
	}{
		{client.CounterSelector{Caller: "user:alice"}, []string{
			callerKey("user:alice"), callerTargetKey("user:alice", "mcp_server:mcpgw"),
			shadowKey("caller:group:g:60", "user:alice", ""), shadowKey("caller_target:group:g:60", "user:alice", "mcp_server:mcpgw")}},
		{client.CounterSelector{Caller: "user:al"}, []string{callerKey("user:al")}},
		{client.CounterSelector{Caller: "user:al%"}, []string{callerKey("user:al%")}},
		{client.CounterSelector{Caller: "user:a_"}, []string{callerKey("user:a_")}},
		{client.CounterSelector{Caller: "user:x|user:alice"}, []string{callerKey("user:x|user:alice")}},
		{client.CounterSelector{Caller: "user:alice|x"}, []string{
			callerTargetKey("user:alice|x", "mcp_server:mcpgw"), shadowKey("caller_target:group:g:60", "user:alice|x", "a2a_agent:/b")}},
		{client.CounterSelector{Target: "mcp_server:mcpgw"}, []string{
			callerTargetKey("user:alice", "mcp_server:mcpgw"), callerTargetKey("user:alice|x", "mcp_server:mcpgw"),
			shadowKey("caller_target:group:g:60", "user:alice", "mcp_server:mcpgw"),
			targetKey("target:mcp_server:mcpgw:60", ""), targetKey("target:server_group:fragile:60", "mcpgw")}},
		{client.CounterSelector{Target: "mcp_server:mcpgw:x"}, []string{
			callerTargetKey("user:bob", "mcp_server:mcpgw:x"), targetKey("target:mcp_server:mcpgw:x:60", ""), targetKey("target:server_group:fragile:60", "mcpgw:x")}},
		{client.CounterSelector{Target: "mcp_tool:mcpgw:search"}, []string{targetKey("target:mcp_tool:mcpgw:search:60", "")}},
		{client.CounterSelector{Target: "mcp_server:mcpg"}, nil},
		{client.CounterSelector{Definition: "target:server_group:fragile:60"}, []string{
			targetKey("target:server_group:fragile:60", "mcpgw"), targetKey("target:server_group:fragile:60", "mcpgw:x"), targetKey("target:server_group:fragile:60", "mcpgwx")}},
		{client.CounterSelector{Definition: "target:mcp_server:mcpgw:60"}, []string{targetKey("target:mcp_server:mcpgw:60", "")}},
		{client.CounterSelector{Definition: "caller_target:group:g:60"}, []string{
			shadowKey("caller_target:group:g:60", "user:alice", "mcp_server:mcpgw"), shadowKey("caller_target:group:g:60", "user:alice|x", "a2a_agent:/b")}},
		{client.CounterSelector{Definition: "quarantine:group:quarantine-callers:1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sel.String(), func(t *testing.T) {
			var got []string
			for _, ct := range listCounters(t, c, tt.sel) {
				got = append(got, ct.Key)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("keys = %q\nwant   %q", got, want)
			}
		})
	}
	// limit cuts the list, sorted by key bytes, and says so.
	for _, tt := range []struct {
		limit     string
		n         int
		truncated bool
	}{{"1", 1, true}, {"4", 4, false}} {
		req, err := http.NewRequest(http.MethodGet, env.URL+"/api/rate-limit-counters?caller=user:alice&limit="+tt.limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		resp, err := contractHTTPClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Counters  []client.Counter `json:"counters"`
			Truncated bool             `json:"truncated"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || len(page.Counters) != tt.n || page.Truncated != tt.truncated || page.Counters[0].Key != callerTargetKey("user:alice", "mcp_server:mcpgw") {
			t.Errorf("limit %s: %d counters, truncated %v, %v; want %d, %v, first (in byte order) ct|60|user:alice|mcp_server:mcpgw",
				tt.limit, len(page.Counters), page.Truncated, err, tt.n, tt.truncated)
		}
	}

	// A reset touches exactly what the list shows.
	if n, err := removedOf(c.ResetCounters(ctx, client.CounterSelector{Caller: "user:al%"}, client.WriteOptions{})); err != nil || n != 1 {
		t.Fatalf("reset user:al%% = %d, %v; want 1", n, err)
	}
	var live int
	if err := env.Store.Pool().QueryRow(ctx, `select count(*) from rl_counters where count > 0 and expires_at > now()`).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != len(keys)-1 {
		t.Errorf("%d live counters after resetting one of %d", live, len(keys))
	}
}

// TestResetDuringDecisions resets a caller while gateways decide its calls
// (80 of them, under every limit of the fixture): no decision may fail (a reset that deleted rows could pull one from under
// rl_take; one that locked in another order could deadlock with it), and
// once the calls stop, a final reset leaves nothing behind.
func TestResetDuringDecisions(t *testing.T) {
	t.Parallel()
	c, env := countersFixture(t)
	ctx := context.Background()
	alice := client.CounterSelector{Caller: "user:alice"}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				d, err := env.Enforcer.Check(ctx, enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"})
				if err != nil || d.Reason != enforce.ReasonAllowed {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("goroutine %d: decision %s, %v", g, d.Reason, err))
					mu.Unlock()
				}
			}
		}()
	}
	for range 20 {
		if _, err := removedOf(c.ResetCounters(ctx, alice, client.WriteOptions{})); err != nil {
			t.Errorf("reset during decisions: %v", err)
		}
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	if _, err := removedOf(c.ResetCounters(ctx, alice, client.WriteOptions{})); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, "alice after the last reset", listCounters(t, c, alice), map[string]int64{})
}

// Selector values travel as query parameters, escaped.
func TestCounterSelectorEscaping(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	odd := "user:a&b=c?d #e"
	if _, err := env.Store.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ($1, 1, 4, now() + interval '1 minute')`,
		callerKey(odd)); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, odd, listCounters(t, c, client.CounterSelector{Caller: odd}), map[string]int64{callerKey(odd): 4})
}

// The keys of the counters these tests expect, built by the key type
// (windows of 60 s for the caller buckets).
func callerKey(caller string) string { return counterkey.Caller(60, caller).String() }

func callerTargetKey(caller, target string) string {
	return counterkey.CallerTarget(60, caller, target).String()
}

func shadowKey(id, caller, target string) string {
	return counterkey.Shadow(ratelimit.Definition{ID: id}, caller, target).String()
}

func targetKey(id, server string) string {
	return counterkey.Target(ratelimit.Definition{ID: id}, server).String()
}

// countersOf is a whole list's counters; a list the server says it did not
// finish is an error here (these tests' lists are far below every bound).
func countersOf(l client.CounterList, err error) ([]client.Counter, error) {
	if err == nil && l.Truncated {
		err = fmt.Errorf("a list of %d counters says it is truncated", len(l.Counters))
	}
	return l.Counters, err
}

// removedOf is how many counters a whole reset reset; one the server says
// it did not finish is an error here, as in countersOf.
func removedOf(r client.CountersReset, err error) (int64, error) {
	if err == nil && r.Truncated {
		err = fmt.Errorf("a reset of %d counters says it is truncated", r.Removed)
	}
	return r.Removed, err
}
