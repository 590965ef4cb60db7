package validate

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// An mcp_tool definition may name MCP resources by URI (MCP's resources
// are named by URI: file:///x, ui://widget/y, and globs over them) when it
// covers resources and completions only (MCP completes a resource
// template by its URI); every other name keeps the tool rule (no
// '/'), and a URI on a definition of other kinds is a 400 naming name.
func TestResourceURINames(t *testing.T) {
	t.Parallel()
	def := func(name string, kinds ...string) ratelimit.Definition {
		return ratelimit.Definition{Axis: "target", EntityType: ratelimit.EntityMCPTool, Name: name, WindowSeconds: 60,
			MaxRequests: ptr(5), Kinds: kinds, Enabled: true}
	}
	for _, c := range []struct{ in, want string }{
		{"github:file:///etc/hosts", "github:file:///etc/hosts"},
		{" GitHub:ui://widget/Chart ", "github:ui://widget/Chart"}, // the server folded, the URI kept
		{"peer:8080:file:///x", "peer:8080:file:///x"},             // a server with ':' keeps it
		{"docs:file:///docs/*", "docs:file:///docs/*"},
		{"*:ui://widget/*", "*:ui://widget/*"},
		{"srv:https://example.com:8443/a?b=c", "srv:https://example.com:8443/a?b=c"},
		{"cloudg:cloudg://assets/{+ref}", "cloudg:cloudg://assets/{+ref}"}, // a resource template, completed
	} {
		got, err := Definition(def(c.in, "Resource", "completion"), Floors{})
		if err != nil || got.Name != c.want || got.ID != "target:mcp_tool:"+c.want+":60" {
			t.Errorf("%q with kinds [resource]: %q %q, %v; want %q", c.in, got.Name, got.ID, err, c.want)
			continue
		}
		if id, err := DefinitionID(got.ID); err != nil || id != got.ID {
			t.Errorf("DefinitionID(%q) = %q, %v", got.ID, id, err)
		}
		if n, err := TargetName(ratelimit.EntityMCPTool, got.Name); err != nil || n != got.Name {
			t.Errorf("TargetName(%q) = %q, %v", got.Name, n, err)
		}
	}
	onlyResources := func(kinds string) string {
		return `name: the resource URI "file:///x" is allowed only with kinds resource and/or completion (got kinds ` + kinds + `): a tool's or prompt's name must not contain '/'`
	}
	for _, c := range []struct {
		d              ratelimit.Definition
		field, message string
	}{
		{def("github:file:///x"), "name", onlyResources("[]")},
		{def("github:file:///x", "tool"), "name", onlyResources("[tool]")},
		{def("github:file:///x", "resource", "prompt"), "name", onlyResources("[resource prompt]")},
		{def("github:a/b", "resource"), "name", `name: the tool "a/b" must not contain '/'`}, // not a URI
		{def("github:/x", "resource"), "name", `name: the tool "/x" must not contain '/'`},
		{def("github:1x://y", "resource"), "name", `name: the tool "//y" must not contain '/'`}, // not a scheme
		{def(":file:///x", "resource"), "name", `name: must be <server>:<uri> with a server before the resource URI (got ":file:///x")`},
		{def("github:file:///a|b", "resource"), "name", `name: the resource URI "file:///a|b" must not contain '|' (write it %7C)`},
		{ratelimit.Definition{Axis: "target", EntityType: ratelimit.EntityA2ASkill, Name: "/agent:file:///x", WindowSeconds: 60,
			MaxRequests: ptr(5), Kinds: []string{"resource"}}, "name", `name: the skill "///x" must not contain '/'`},
		{ratelimit.Definition{Axis: "target", EntityType: ratelimit.EntityMCPServer, Name: "file:///x", WindowSeconds: 60,
			MaxRequests: ptr(5)}, "", ""}, // server names are what they were
	} {
		_, err := Definition(c.d, Floors{})
		if c.field == "" {
			if err != nil {
				t.Errorf("%s %q: %v, want it stored as before", c.d.EntityType, c.d.Name, err)
			}
			continue
		}
		wantProblem(t, err, c.field, c.message)
	}
	// A tool name that reads as <server>:<tool> stays one, whatever "://"
	// its server holds.
	if got, err := Definition(def("srv:a://b:tool", "tool"), Floors{}); err != nil || got.Name != "srv:a://b:tool" {
		t.Errorf("srv:a://b:tool: %q, %v", got.Name, err)
	}
}
