package enforce_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
)

func TestCallNormalize(t *testing.T) {
	t.Parallel()
	type fe = enforce.FieldError
	tests := []struct {
		name   string
		in     enforce.Call
		want   enforce.Call
		fields []fe
	}{
		{"control plane", enforce.Call{Username: "alice"}, enforce.Call{Username: "alice"}, nil},
		{"target name canonical", enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "/Srv/", Cost: 2},
			enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "srv", Cost: 2}, nil},
		{"a2a agent", enforce.Call{ClientID: "bot", TargetType: "a2a_agent", TargetName: "Planner", Tool: "plan"},
			enforce.Call{ClientID: "bot", TargetType: "a2a_agent", TargetName: "/planner", Tool: "plan"}, nil},
		{"largest cost", enforce.Call{TargetType: "mcp_server", TargetName: "s", Cost: enforce.MaxCost},
			enforce.Call{TargetType: "mcp_server", TargetName: "s", Cost: enforce.MaxCost}, nil},
		{"name without a type", enforce.Call{TargetName: "srv"}, enforce.Call{TargetName: "srv"},
			[]fe{{"target_name", "target_name: needs target_type (mcp_server or a2a_agent); without a target the call is control plane"}}},
		{"unknown type", enforce.Call{TargetType: "mcp_tool", TargetName: "s:t"}, enforce.Call{TargetType: "mcp_tool", TargetName: "s:t"},
			[]fe{{"target_type", `target_type: must be mcp_server, a2a_agent or empty (got "mcp_tool")`}}},
		{"negative cost", enforce.Call{TargetType: "mcp_server", TargetName: "s", Cost: -1},
			enforce.Call{TargetType: "mcp_server", TargetName: "s", Cost: -1}, []fe{{"cost", "cost: must not be negative (got -1)"}}},
		{"huge cost", enforce.Call{Cost: 10_000_000}, enforce.Call{Cost: 10_000_000},
			[]fe{{"cost", "cost: must be at most 1000000 (got 10000000)"}}},
		// An invalid name is kept as given, so a caller that decides
		// anyway decides on what Check would.
		{"empty name and bad cost", enforce.Call{TargetType: "mcp_server", TargetName: "/", Cost: -2},
			enforce.Call{TargetType: "mcp_server", TargetName: "/", Cost: -2},
			[]fe{{"target_name", `target_name: must name a path, not only slashes (got "/")`}, {"cost", "cost: must not be negative (got -2)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.Normalize()
			if got != tt.want {
				t.Errorf("Normalize() = %+v, want %+v", got, tt.want)
			}
			var ce *enforce.CallError
			switch {
			case tt.fields == nil && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.fields != nil && !errors.As(err, &ce):
				t.Errorf("err = %v, want a *CallError", err)
			case tt.fields != nil && !slices.Equal(ce.Fields, tt.fields):
				t.Errorf("fields = %q, want %q", ce.Fields, tt.fields)
			}
		})
	}
	_, err := enforce.Call{TargetName: "x", Cost: -1}.Normalize()
	if want := "target_name: needs target_type (mcp_server or a2a_agent); without a target the call is control plane; cost: must not be negative (got -1)"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
