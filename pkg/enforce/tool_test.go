package enforce_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func toolDef(name string, window, max int, scope string, kinds ...string) ratelimit.Definition {
	d := target("mcp_tool", name, window, max)
	d.ToolScope, d.Kinds = scope, kinds
	return d
}

func toolCall(user, tool, kind string) enforce.Call {
	return enforce.Call{Username: user, TargetType: "mcp_server", TargetName: "github", Tool: tool, Kind: kind}
}

// Reference 003's scopes with a glob and kinds: a principal limit of 5
// over every github tool, and 1 per caller on the hot tool; a call refused
// by one bucket costs nothing in the others, so one hot call and three
// refused ones leave four calls for other tools. A limit naming kinds
// applies only to calls of those kinds.
func TestToolGlobsScopesAndKinds(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t,
		toolDef("github:*", 3600, 5, ratelimit.ToolScopePrincipal),
		toolDef("github:hot", 3600, 1, ratelimit.ToolScopePrincipalTool),
		toolDef("*:delete_*", 3600, 1, ratelimit.ToolScopeTool),
		toolDef("github:complete", 3600, 1, "", ratelimit.KindCompletion))

	if d := f.Check(toolCall("alice", "hot", "")); !d.Allowed || len(d.Gates) != 2 {
		t.Fatalf("first hot call: %+v", d)
	}
	for i := range 3 {
		d := f.Check(toolCall("alice", "hot", ""))
		if d.Allowed || len(d.Denied) != 1 || d.Denied[0].DefinitionID != "target:mcp_tool:github:hot:3600" ||
			d.Denied[0].Dimension != ratelimit.ToolScopePrincipalTool || d.Denied[0].Matched != "github:hot" {
			t.Fatalf("hot call %d: %+v, want refused by github:hot's principal_tool bucket", i+2, d)
		}
	}
	// bob has his own buckets.
	if d := f.Check(toolCall("bob", "hot", "")); !d.Allowed {
		t.Fatalf("bob's hot call: %+v", d)
	}
	allowed := 0
	for range 10 {
		if f.Check(toolCall("alice", "search", "")).Allowed {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("alice's other tools after one hot call: %d allowed, want 4", allowed)
	}
	d := f.Check(toolCall("alice", "search", ""))
	if d.Allowed || d.Denied[0].Matched != "github:*" || d.Denied[0].Dimension != ratelimit.ToolScopePrincipal {
		t.Errorf("alice over the principal limit: %+v", d)
	}
	// *:delete_* per tool: every caller shares a tool's bucket, tools
	// are apart.
	if d := f.Check(toolCall("carol", "delete_repo", "")); !d.Allowed {
		t.Errorf("carol delete_repo: %+v", d)
	}
	if d := f.Check(toolCall("dave", "delete_repo", "")); d.Allowed || d.Denied[0].Dimension != ratelimit.ToolScopeTool {
		t.Errorf("dave delete_repo after carol: %+v, want refused by the per-tool bucket", d)
	}
	if d := f.Check(enforce.Call{Username: "dave", TargetType: "mcp_server", TargetName: "gitlab", Tool: "delete_branch"}); !d.Allowed {
		t.Errorf("dave gitlab:delete_branch: %+v", d)
	}
	// Kinds: github:complete covers completions only.
	for i := range 3 {
		if d := f.Check(toolCall("erin", "complete", ratelimit.KindTool)); !d.Allowed {
			t.Fatalf("tool call %d named complete: %+v, want the completion limit not to apply", i, d)
		}
	}
	if d := f.Check(toolCall("frank", "complete", ratelimit.KindCompletion)); !d.Allowed {
		t.Fatalf("first completion: %+v", d)
	}
	if d := f.Check(toolCall("gina", "complete", ratelimit.KindCompletion)); d.Allowed {
		t.Errorf("second completion: %+v, want refused", d)
	}
}

// downStore is a counter store that is down.
type downStore struct{}

func (downStore) Take(context.Context, []enforce.TakeRequest, time.Time) ([]enforce.TakeResult, error) {
	return nil, errors.New("counters down")
}

func (downStore) ReturnUnused(context.Context, []enforce.Return, time.Time) error {
	return errors.New("counters down")
}

func (downStore) Reset(context.Context, []enforce.CounterGate, time.Time, time.Time) error {
	return errors.New("counters down")
}

func (downStore) TakeLocal(context.Context, enforce.TakeRequest, enforce.TakeResult, enforce.TakeFunc) (enforce.TakeResult, error) {
	return enforce.TakeResult{}, enforce.ErrNotImplemented
}

func (downStore) Sweep(context.Context, time.Time) (int64, error) { return 0, nil }

func (downStore) BackendName() string { return "down" }

func (downStore) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: true}
}

// Two tool definitions sharing one bucket: the lower limit applies, and
// the bucket fails closed if either definition does, whichever limit is
// lower (as caller definitions sharing a bucket do).
func TestSharedToolBucketKeepsFailClosed(t *testing.T) {
	t.Parallel()
	for _, closedOnWide := range []bool{true, false} {
		wide := toolDef("github:*", 3600, 2000, ratelimit.ToolScopePrincipalTool)
		narrow := toolDef("*:delete_*", 3600, 1000, ratelimit.ToolScopePrincipalTool)
		wide.FailClosed, narrow.FailClosed = closedOnWide, !closedOnWide
		st := enforce.State{Definitions: append(enforcetest.Sentinels(), withID(wide), withID(narrow))}
		e, err := enforce.New(context.Background(), enforce.Options{Counters: downStore{}, Source: enforcetest.StaticSource(st),
			SweepInterval: -1, BackendTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := e.Check(context.Background(), toolCall("alice", "delete_repo", ""))
		e.Close()
		if d.Allowed || d.Reason != enforce.ReasonFailClosed {
			t.Errorf("fail_closed on the %s definition: %s (allowed %v), want %s", map[bool]string{true: "higher-limit", false: "lower-limit"}[closedOnWide],
				d.Reason, d.Allowed, enforce.ReasonFailClosed)
		}
	}
}
