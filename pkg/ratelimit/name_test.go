package ratelimit_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Every name the normalizer accepts splits back into the parent and leaf
// it was written from, servers holding ':' and resource URIs included.
func TestSplitToolName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entityType, raw, parent, leaf string
	}{
		{ratelimit.EntityMCPTool, "mcpgw:search", "mcpgw", "search"},
		{ratelimit.EntityMCPTool, "peer:8080:search", "peer:8080", "search"},
		{ratelimit.EntityMCPTool, "mcpgw:file:///docs/*", "mcpgw", "file:///docs/*"},
		{ratelimit.EntityMCPTool, "peer:8080:ui://widget/y", "peer:8080", "ui://widget/y"},
		{ratelimit.EntityA2ASkill, "planner:summarize", "/planner", "summarize"}, // agents are paths,
	}
	for _, tt := range tests {
		name, ok, err := ratelimit.NormalizeTargetName(tt.entityType, tt.raw)
		if !ok || err != nil {
			t.Fatalf("NormalizeTargetName(%s, %q) = %q, %v, %v", tt.entityType, tt.raw, name, ok, err)
		}
		if parent, leaf := ratelimit.SplitToolName(name); parent != tt.parent || leaf != tt.leaf {
			t.Errorf("SplitToolName(%q) = %q, %q; want %q, %q", name, parent, leaf, tt.parent, tt.leaf)
		}
	}
	if parent, leaf := ratelimit.SplitToolName("mcpgw"); parent != "mcpgw" || leaf != "" {
		t.Errorf("SplitToolName(\"mcpgw\") = %q, %q; want all parent", parent, leaf)
	}
}
