package validate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func callerGroup() ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "developers",
		WindowSeconds: 60, UserMaxRequests: ptr(100), AgentMaxRequests: ptr(50), Enabled: true,
	}
}

func targetServer() ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "mcpgw",
		WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true,
	}
}

func serverGroup() ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityServerGroup, Name: "fragile-backends",
		WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"airegistry-tools", "aws-kb"}, Enabled: true,
	}
}

func quarantineSentinel(name string) ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup, Name: name,
		WindowSeconds: 1, Enabled: true,
	}
}

// edited returns d after edit, so table rows read as "a valid X, except ...".
func edited(d ratelimit.Definition, edit func(*ratelimit.Definition)) ratelimit.Definition {
	edit(&d)
	return d
}

func TestDefinitionAccepts(t *testing.T) {
	t.Parallel()
	updated := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		in     ratelimit.Definition
		floors *Floors // nil means DefaultFloors
		want   ratelimit.Definition
	}{
		{
			name: "caller group with both limits",
			in:   callerGroup(),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode = "caller:group:developers:60", ratelimit.ModeEnforce
			}),
		},
		{
			name: "user limit equal to the floor",
			in:   edited(callerGroup(), func(d *ratelimit.Definition) { d.UserMaxRequests, d.AgentMaxRequests = ptr(20), nil }),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.UserMaxRequests, d.AgentMaxRequests = "caller:group:developers:60", ratelimit.ModeEnforce, ptr(20), nil
			}),
		},
		{
			name: "agent limit equal to the floor",
			in:   edited(callerGroup(), func(d *ratelimit.Definition) { d.UserMaxRequests, d.AgentMaxRequests = nil, ptr(10) }),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.UserMaxRequests, d.AgentMaxRequests = "caller:group:developers:60", ratelimit.ModeEnforce, nil, ptr(10)
			}),
		},
		{
			name: "window of 61 seconds is exempt from the floors",
			in: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = 61, ptr(1), ptr(1)
			}),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = "caller:group:developers:61", ratelimit.ModeEnforce, 61, ptr(1), ptr(1)
			}),
		},
		{
			name: "daily volume cap below the floor",
			in: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = 86400, ptr(5), nil
			}),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = "caller:group:developers:86400", ratelimit.ModeEnforce, 86400, ptr(5), nil
			}),
		},
		{
			name:   "zero floors disable the floor check",
			in:     edited(callerGroup(), func(d *ratelimit.Definition) { d.WindowSeconds, d.UserMaxRequests = 1, ptr(1) }),
			floors: &Floors{},
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.WindowSeconds, d.UserMaxRequests = "caller:group:developers:1", ratelimit.ModeEnforce, 1, ptr(1)
			}),
		},
		{
			name: "caller_target group",
			in:   edited(callerGroup(), func(d *ratelimit.Definition) { d.Axis = ratelimit.AxisCallerTarget }),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.Axis, d.ID, d.Mode = ratelimit.AxisCallerTarget, "caller_target:group:developers:60", ratelimit.ModeEnforce
			}),
		},
		{
			name: "group name trimmed, shadow mode kept, description trimmed with inner newline and tab",
			in: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.Name, d.Mode, d.Description = "  developers\t", ratelimit.ModeShadow, "  line one\n\tline two \n"
			}),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Description = "caller:group:developers:60", ratelimit.ModeShadow, "line one\n\tline two"
			}),
		},
		{
			name: "largest limit",
			in:   edited(targetServer(), func(d *ratelimit.Definition) { d.MaxRequests = ptr(1_000_000_000) }),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.MaxRequests = "target:mcp_server:mcpgw:60", ratelimit.ModeEnforce, ptr(1_000_000_000)
			}),
		},
		{
			name: "mcp_server keeps inner segments, loses outer slashes",
			in:   edited(targetServer(), func(d *ratelimit.Definition) { d.Name = "/peer/x/" }),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Name = "target:mcp_server:peer/x:60", ratelimit.ModeEnforce, "peer/x"
			}),
		},
		{
			name: "a2a_agent gains its leading slash",
			in: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.Name = ratelimit.EntityA2AAgent, "booking-agent"
			}),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.ID, d.Mode, d.Name = ratelimit.EntityA2AAgent, "target:a2a_agent:/booking-agent:60", ratelimit.ModeEnforce, "/booking-agent"
			}),
		},
		{
			name: "a2a_agent repeated outer slashes collapse",
			in: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.Name = ratelimit.EntityA2AAgent, "//a/b//"
			}),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.ID, d.Mode, d.Name = ratelimit.EntityA2AAgent, "target:a2a_agent:/a/b:60", ratelimit.ModeEnforce, "/a/b"
			}),
		},
		{
			name: "mcp_tool parent normalized as a server",
			in: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.Name = ratelimit.EntityMCPTool, "/mcpgw/: search "
			}),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.ID, d.Mode, d.Name = ratelimit.EntityMCPTool, "target:mcp_tool:mcpgw:search:60", ratelimit.ModeEnforce, "mcpgw:search"
			}),
		},
		{
			name: "a2a_skill parent normalized as an agent",
			in: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.Name = ratelimit.EntityA2ASkill, "booking-agent:find"
			}),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.EntityType, d.ID, d.Mode, d.Name = ratelimit.EntityA2ASkill, "target:a2a_skill:/booking-agent:find:60", ratelimit.ModeEnforce, "/booking-agent:find"
			}),
		},
		{
			name: "server_group members normalized, in their order",
			in: edited(serverGroup(), func(d *ratelimit.Definition) {
				d.Members = []string{"/aws-kb/", " /airegistry-tools "}
			}),
			want: edited(serverGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode = "target:server_group:fragile-backends:60", ratelimit.ModeEnforce
				d.Members = []string{"aws-kb", "airegistry-tools"}
			}),
		},
		{
			name: "empty members list on a non-group definition is dropped",
			in:   edited(targetServer(), func(d *ratelimit.Definition) { d.Members = []string{} }),
			want: edited(targetServer(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Members = "target:mcp_server:mcpgw:60", ratelimit.ModeEnforce, nil
			}),
		},
		{
			name: "quarantine-callers sentinel gets scope caller",
			in:   quarantineSentinel(ratelimit.GroupQuarantineCallers),
			want: edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Scope = ratelimit.SentinelCallers, ratelimit.ModeEnforce, "caller"
			}),
		},
		{
			name: "quarantine-targets sentinel with matching scope",
			in: edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *ratelimit.Definition) {
				d.Scope, d.FailClosed = "target", true
			}),
			want: edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Scope, d.FailClosed = ratelimit.SentinelTargets, ratelimit.ModeEnforce, "target", true
			}),
		},
		{
			name: "stale id replaced and read-only fields passed through",
			in: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Version, d.UpdatedAt, d.UpdatedBy = "caller:group:old:60", 7, &updated, "ci"
			}),
			want: edited(callerGroup(), func(d *ratelimit.Definition) {
				d.ID, d.Mode, d.Version, d.UpdatedAt, d.UpdatedBy = "caller:group:developers:60", ratelimit.ModeEnforce, 7, &updated, "ci"
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			floors := DefaultFloors()
			if tt.floors != nil {
				floors = *tt.floors
			}
			got, err := Definition(tt.in, floors)
			if err != nil {
				t.Fatalf("Definition: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			again, err := Definition(got, floors)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("normalizing the result again gave %+v, %v", again, err)
			}
			if id, err := DefinitionID(got.ID); err != nil || id != got.ID {
				t.Errorf("DefinitionID(%q) = %q, %v; want it unchanged", got.ID, id, err)
			}
		})
	}
}

func TestDefinitionRefuses(t *testing.T) {
	t.Parallel()
	type def = ratelimit.Definition
	tests := []struct {
		name    string
		in      def
		floors  *Floors // nil means DefaultFloors
		field   string
		message string
	}{
		// Axis and entity type.
		{
			name:    "unknown axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis = "foo" }),
			field:   "axis",
			message: `axis: must be one of caller, target, caller_target, quarantine (got "foo")`,
		},
		{
			name:    "missing axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis = "" }),
			field:   "axis",
			message: `axis: must be one of caller, target, caller_target, quarantine (got "")`,
		},
		{
			name:    "unknown entity type with unknown axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.EntityType = "foo", "user" }),
			field:   "entity_type",
			message: `entity_type: must be one of group, mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, descriptor (got "user")`,
		},
		{
			name:    "server on the caller axis",
			in:      edited(callerGroup(), func(d *def) { d.EntityType = ratelimit.EntityMCPServer }),
			field:   "entity_type",
			message: `entity_type: must be one of group, user, client, team on the caller axis (got "mcp_server")`,
		},
		{
			name:    "agent on the caller_target axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.EntityType = ratelimit.AxisCallerTarget, ratelimit.EntityA2AAgent }),
			field:   "entity_type",
			message: `entity_type: must be one of group, user, client, team on the caller_target axis (got "a2a_agent")`,
		},
		{
			name:    "group on the target axis",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityGroup, "developers" }),
			field:   "entity_type",
			message: `entity_type: must be one of mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, descriptor, route on the target axis (got "group")`,
		},
		{
			name:    "server on the quarantine axis",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *def) { d.EntityType = ratelimit.EntityMCPServer }),
			field:   "entity_type",
			message: `entity_type: must be group on the quarantine axis (got "mcp_server")`,
		},

		// Window.
		{
			name:    "window zero",
			in:      edited(callerGroup(), func(d *def) { d.WindowSeconds = 0 }),
			field:   "window_seconds",
			message: "window_seconds: must be between 1 and 86400 (got 0)",
		},
		{
			name:    "window negative",
			in:      edited(targetServer(), func(d *def) { d.WindowSeconds = -60 }),
			field:   "window_seconds",
			message: "window_seconds: must be between 1 and 86400 (got -60)",
		},
		{
			name:    "window longer than a day",
			in:      edited(callerGroup(), func(d *def) { d.WindowSeconds = 86401 }),
			field:   "window_seconds",
			message: "window_seconds: must be between 1 and 86400 (got 86401)",
		},
		{
			name:    "quarantine window other than 1",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *def) { d.WindowSeconds = 60 }),
			field:   "window_seconds",
			message: "window_seconds: must be 1 on the quarantine axis (got 60)",
		},

		// Required and ranged limits.
		{
			name:    "caller group with no limit",
			in:      edited(callerGroup(), func(d *def) { d.UserMaxRequests, d.AgentMaxRequests = nil, nil }),
			field:   "user_max_requests",
			message: "user_max_requests: required unless agent_max_requests is set; the caller axis needs at least one of them",
		},
		{
			name:    "caller_target group with no limit",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.UserMaxRequests, d.AgentMaxRequests = ratelimit.AxisCallerTarget, nil, nil }),
			field:   "user_max_requests",
			message: "user_max_requests: required unless agent_max_requests is set; the caller_target axis needs at least one of them",
		},
		{
			name:    "target with no max_requests",
			in:      edited(targetServer(), func(d *def) { d.MaxRequests = nil }),
			field:   "max_requests",
			message: "max_requests: required on the target axis",
		},
		{
			name:    "user limit zero",
			in:      edited(callerGroup(), func(d *def) { d.UserMaxRequests = ptr(0) }),
			field:   "user_max_requests",
			message: "user_max_requests: must be >= 1 (got 0)",
		},
		{
			name:    "agent limit negative on a long window",
			in:      edited(callerGroup(), func(d *def) { d.WindowSeconds, d.AgentMaxRequests = 3600, ptr(-1) }),
			field:   "agent_max_requests",
			message: "agent_max_requests: must be >= 1 (got -1)",
		},
		{
			name:    "user limit above a billion",
			in:      edited(callerGroup(), func(d *def) { d.UserMaxRequests = ptr(1_000_000_001) }),
			field:   "user_max_requests",
			message: "user_max_requests: must be <= 1000000000 (got 1000000001)",
		},
		{
			name:    "max_requests zero",
			in:      edited(targetServer(), func(d *def) { d.MaxRequests = ptr(0) }),
			field:   "max_requests",
			message: "max_requests: must be >= 1 (got 0)",
		},
		{
			name:    "max_requests above a billion",
			in:      edited(serverGroup(), func(d *def) { d.MaxRequests = ptr(2_000_000_000) }),
			field:   "max_requests",
			message: "max_requests: must be <= 1000000000 (got 2000000000)",
		},

		// Floors.
		{
			name:    "user limit below the floor",
			in:      edited(callerGroup(), func(d *def) { d.UserMaxRequests = ptr(3) }),
			field:   "user_max_requests",
			message: "user_max_requests 3 is below the user floor of 20/min for windows <= 60s; raise it to at least 20 or use a window longer than 60s",
		},
		{
			name:    "agent limit below the floor",
			in:      edited(callerGroup(), func(d *def) { d.AgentMaxRequests = ptr(5) }),
			field:   "agent_max_requests",
			message: "agent_max_requests 5 is below the agent floor of 10/min for windows <= 60s; raise it to at least 10 or use a window longer than 60s",
		},
		{
			name:    "user limit one below the floor on a 1s window",
			in:      edited(callerGroup(), func(d *def) { d.WindowSeconds, d.UserMaxRequests = 1, ptr(19) }),
			field:   "user_max_requests",
			message: "user_max_requests 19 is below the user floor of 20/min for windows <= 60s; raise it to at least 20 or use a window longer than 60s",
		},
		{
			name:    "floor applies on caller_target",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.AgentMaxRequests = ratelimit.AxisCallerTarget, ptr(9) }),
			field:   "agent_max_requests",
			message: "agent_max_requests 9 is below the agent floor of 10/min for windows <= 60s; raise it to at least 10 or use a window longer than 60s",
		},
		{
			name:    "configured floor is the one reported",
			in:      edited(callerGroup(), func(d *def) { d.UserMaxRequests = ptr(25) }),
			floors:  &Floors{User: 30, Agent: 10},
			field:   "user_max_requests",
			message: "user_max_requests 25 is below the user floor of 30/min for windows <= 60s; raise it to at least 30 or use a window longer than 60s",
		},

		// Fields that do not belong to the axis.
		{
			name:    "max_requests on the caller axis",
			in:      edited(callerGroup(), func(d *def) { d.MaxRequests = ptr(100) }),
			field:   "max_requests",
			message: "max_requests: not allowed on the caller axis; use user_max_requests and/or agent_max_requests",
		},
		{
			name:    "max_requests on the caller_target axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.MaxRequests = ratelimit.AxisCallerTarget, ptr(100) }),
			field:   "max_requests",
			message: "max_requests: not allowed on the caller_target axis; use user_max_requests and/or agent_max_requests",
		},
		{
			name:    "user_max_requests on the target axis",
			in:      edited(targetServer(), func(d *def) { d.UserMaxRequests = ptr(100) }),
			field:   "user_max_requests",
			message: "user_max_requests: not allowed on the target axis; use max_requests",
		},
		{
			name:    "agent_max_requests on the target axis",
			in:      edited(serverGroup(), func(d *def) { d.AgentMaxRequests = ptr(100) }),
			field:   "agent_max_requests",
			message: "agent_max_requests: not allowed on the target axis; use max_requests",
		},
		{
			name:    "max_requests on the quarantine axis",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *def) { d.MaxRequests = ptr(1) }),
			field:   "max_requests",
			message: "max_requests: not allowed on the quarantine axis; quarantine blocks outright and carries no rate",
		},
		{
			name:    "user_max_requests on the quarantine axis",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *def) { d.UserMaxRequests = ptr(20) }),
			field:   "user_max_requests",
			message: "user_max_requests: not allowed on the quarantine axis; quarantine blocks outright and carries no rate",
		},
		{
			name:    "agent_max_requests on the quarantine axis",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *def) { d.AgentMaxRequests = ptr(10) }),
			field:   "agent_max_requests",
			message: "agent_max_requests: not allowed on the quarantine axis; quarantine blocks outright and carries no rate",
		},
		{
			name:    "members on the caller axis",
			in:      edited(callerGroup(), func(d *def) { d.Members = []string{"mcpgw"} }),
			field:   "members",
			message: `members: allowed only on target server_group definitions (entity_type is "group")`,
		},
		{
			name:    "members on the caller_target axis",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.Members = ratelimit.AxisCallerTarget, []string{"mcpgw"} }),
			field:   "members",
			message: `members: allowed only on target server_group definitions (entity_type is "group")`,
		},
		{
			name:    "members on an mcp_server target",
			in:      edited(targetServer(), func(d *def) { d.Members = []string{"mcpgw"} }),
			field:   "members",
			message: `members: allowed only on target server_group definitions (entity_type is "mcp_server")`,
		},
		{
			name:    "members on the quarantine axis",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *def) { d.Members = []string{"mcpgw"} }),
			field:   "members",
			message: `members: allowed only on target server_group definitions (entity_type is "group")`,
		},
		{
			name:    "scope on the caller axis",
			in:      edited(callerGroup(), func(d *def) { d.Scope = "caller" }),
			field:   "scope",
			message: `scope: allowed only on the quarantine axis (got "caller")`,
		},
		{
			name:    "scope on the target axis",
			in:      edited(targetServer(), func(d *def) { d.Scope = "target" }),
			field:   "scope",
			message: `scope: allowed only on the quarantine axis (got "target")`,
		},
		{
			name:    "scope contradicting quarantine-callers",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *def) { d.Scope = "target" }),
			field:   "scope",
			message: `scope: must be "caller" for quarantine-callers (got "target")`,
		},
		{
			name:    "scope contradicting quarantine-targets",
			in:      edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *def) { d.Scope = "caller" }),
			field:   "scope",
			message: `scope: must be "target" for quarantine-targets (got "caller")`,
		},

		// server_group members.
		{
			name:    "server_group without members",
			in:      edited(serverGroup(), func(d *def) { d.Members = nil }),
			field:   "members",
			message: "members: must list at least one server for a server_group",
		},
		{
			name:    "server_group member empty",
			in:      edited(serverGroup(), func(d *def) { d.Members = []string{"mcpgw", "  "} }),
			field:   "members[1]",
			message: "members[1]: must not be empty",
		},
		{
			name:    "server_group member only slashes",
			in:      edited(serverGroup(), func(d *def) { d.Members = []string{"mcpgw", "aws-kb", "//"} }),
			field:   "members[2]",
			message: `members[2]: must name a path, not only slashes (got "//")`,
		},
		{
			name:    "server_group member twice after normalization",
			in:      edited(serverGroup(), func(d *def) { d.Members = []string{"aws-kb", "mcpgw", "/aws-kb"} }),
			field:   "members[2]",
			message: `members[2]: "/aws-kb" is server "aws-kb" again (members[0] is "aws-kb"): list each server once`,
		},
		{
			name:    "server_group member with a control character",
			in:      edited(serverGroup(), func(d *def) { d.Members = []string{"mcp\x00gw"} }),
			field:   "members[0]",
			message: `members[0]: must not contain control characters (got "mcp\x00gw")`,
		},

		// Reserved and sentinel names.
		{
			name:    "quarantine-callers as a caller group",
			in:      edited(callerGroup(), func(d *def) { d.Name = ratelimit.GroupQuarantineCallers }),
			field:   "name",
			message: `name: "quarantine-callers" is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject`,
		},
		{
			name:    "quarantine-targets as a caller_target group",
			in:      edited(callerGroup(), func(d *def) { d.Axis, d.Name = ratelimit.AxisCallerTarget, " quarantine-targets " }),
			field:   "name",
			message: `name: "quarantine-targets" is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject`,
		},
		{
			name:    "quarantine-targets as a server_group",
			in:      edited(serverGroup(), func(d *def) { d.Name = ratelimit.GroupQuarantineTargets }),
			field:   "name",
			message: `name: "quarantine-targets" is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject`,
		},
		{
			name:    "quarantine-callers as a server name",
			in:      edited(targetServer(), func(d *def) { d.Name = "/quarantine-callers/" }),
			field:   "name",
			message: `name: "quarantine-callers" is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject`,
		},
		{
			name:    "ordinary group on the quarantine axis",
			in:      quarantineSentinel("developers"),
			field:   "name",
			message: `name: must be quarantine-callers or quarantine-targets on the quarantine axis (got "developers")`,
		},

		// Names.
		{
			name:    "empty name",
			in:      edited(callerGroup(), func(d *def) { d.Name = "" }),
			field:   "name",
			message: "name: must not be empty",
		},
		{
			name:    "whitespace-only name",
			in:      edited(targetServer(), func(d *def) { d.Name = " \t " }),
			field:   "name",
			message: "name: must not be empty",
		},
		{
			name:    "group name with a space",
			in:      edited(callerGroup(), func(d *def) { d.Name = "power users" }),
			field:   "name",
			message: `name: must not contain whitespace (got "power users"): names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters`,
		},
		{
			name:    "group name with a non-ASCII letter",
			in:      edited(callerGroup(), func(d *def) { d.Name = "développeurs" }),
			field:   "name",
			message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "développeurs")`,
		},
		{
			name:    "server_group name with a slash",
			in:      edited(serverGroup(), func(d *def) { d.Name = "tier/1" }),
			field:   "name",
			message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "tier/1")`,
		},
		{
			name:    "name longer than 256 bytes",
			in:      edited(callerGroup(), func(d *def) { d.Name = strings.Repeat("a", 257) }),
			field:   "name",
			message: "name: must be at most 256 bytes (got 257)",
		},
		{
			name:    "agent path longer than 256 bytes once its slash is added",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityA2AAgent, strings.Repeat("a", 256) }),
			field:   "name",
			message: "name: must be at most 256 bytes (got 257)",
		},
		{
			name:    "server name with a control character",
			in:      edited(targetServer(), func(d *def) { d.Name = "mcp\ngw" }),
			field:   "name",
			message: `name: must not contain control characters (got "mcp\ngw")`,
		},
		{
			name:    "server name that is not UTF-8",
			in:      edited(targetServer(), func(d *def) { d.Name = "mcp\xffgw" }),
			field:   "name",
			message: `name: must be valid UTF-8 (got "mcp\xffgw")`,
		},
		{
			name:    "agent path that is only a slash",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityA2AAgent, "/" }),
			field:   "name",
			message: `name: must name a path, not only slashes (got "/")`,
		},
		{
			name:    "tool name without a colon",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityMCPTool, "search" }),
			field:   "name",
			message: `name: must be <server>:<tool> (got "search")`,
		},
		{
			name:    "tool name without a server",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityMCPTool, "/:search" }),
			field:   "name",
			message: `name: must be <server>:<tool> with a name before the last ':' (got "/:search")`,
		},
		{
			name:    "tool name without a tool",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityMCPTool, "mcpgw: " }),
			field:   "name",
			message: `name: must be <server>:<tool> with a tool after the last ':' (got "mcpgw:")`,
		},
		{
			name:    "skill name with a slash in the skill",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityA2ASkill, "booking:find/all" }),
			field:   "name",
			message: `name: the skill "find/all" must not contain '/'`,
		},
		{
			name:    "skill name without an agent",
			in:      edited(targetServer(), func(d *def) { d.EntityType, d.Name = ratelimit.EntityA2ASkill, ":find" }),
			field:   "name",
			message: `name: must be <agent>:<skill> with a name before the last ':' (got ":find")`,
		},

		// Mode and description.
		{
			name:    "unknown mode",
			in:      edited(callerGroup(), func(d *def) { d.Mode = "block" }),
			field:   "mode",
			message: `mode: must be one of enforce, shadow (got "block")`,
		},
		{
			name:    "description longer than 1024 bytes",
			in:      edited(callerGroup(), func(d *def) { d.Description = strings.Repeat("é", 513) }),
			field:   "description",
			message: "description: must be at most 1024 bytes (got 1026)",
		},
		{
			name:    "description with a carriage return",
			in:      edited(callerGroup(), func(d *def) { d.Description = "one\r\ntwo" }),
			field:   "description",
			message: "description: must not contain control characters other than newline and tab",
		},
		{
			name:    "description with an escape sequence",
			in:      edited(callerGroup(), func(d *def) { d.Description = "\x1b[31mred" }),
			field:   "description",
			message: "description: must not contain control characters other than newline and tab",
		},
		{
			name:    "description that is not UTF-8",
			in:      edited(callerGroup(), func(d *def) { d.Description = "caf\xe9" }),
			field:   "description",
			message: "description: must be valid UTF-8",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			floors := DefaultFloors()
			if tt.floors != nil {
				floors = *tt.floors
			}
			got, err := Definition(tt.in, floors)
			wantProblem(t, err, tt.field, tt.message)
			if !reflect.DeepEqual(got, ratelimit.Definition{}) {
				t.Errorf("got %+v alongside the error, want the zero Definition", got)
			}
		})
	}
}

// TestDefinitionReportsEveryProblem checks that one call reports all the
// problems, in field order, so a user fixes them in one round trip.
func TestDefinitionReportsEveryProblem(t *testing.T) {
	t.Parallel()
	d := ratelimit.Definition{
		Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "quarantine-callers",
		WindowSeconds: 30, MaxRequests: ptr(5), UserMaxRequests: ptr(3), AgentMaxRequests: ptr(0),
		Members: []string{"mcpgw"}, Scope: "caller", Mode: "loud", Description: "bad\x00",
	}
	_, err := Definition(d, DefaultFloors())
	var fields []string
	for _, fe := range problemsOf(t, err) {
		fields = append(fields, fe.Field)
	}
	want := []string{"name", "max_requests", "user_max_requests", "agent_max_requests", "members", "scope", "mode", "description"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("got problems with %q\nwant %q\n(%v)", fields, want, err)
	}
}

func TestDefinitionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      string
		want    string // canonical id; empty when refused
		field   string
		message string
	}{
		{name: "caller group", id: "caller:group:developers:60", want: "caller:group:developers:60"},
		{name: "daily window", id: "caller_target:group:developers:86400", want: "caller_target:group:developers:86400"},
		{name: "server name normalized", id: "target:mcp_server:/peer/x/:60", want: "target:mcp_server:peer/x:60"},
		{name: "agent path normalized", id: "target:a2a_agent:booking-agent:60", want: "target:a2a_agent:/booking-agent:60"},
		{name: "tool with colons in its server", id: "target:mcp_tool:peer:x/:search:60", want: "target:mcp_tool:peer:x:search:60"},
		{name: "skill", id: "target:a2a_skill://booking//:find:1", want: "target:a2a_skill:/booking:find:1"},
		{name: "server_group", id: "target:server_group:fragile-backends:60", want: "target:server_group:fragile-backends:60"},
		{name: "callers sentinel", id: ratelimit.SentinelCallers, want: ratelimit.SentinelCallers},
		{name: "targets sentinel", id: ratelimit.SentinelTargets, want: ratelimit.SentinelTargets},
		{
			name: "too few parts", id: "caller:group",
			field: "id", message: `id: definition id "caller:group": want <axis>:<entity_type>:<name>:<window_seconds>`,
		},
		{
			name: "window with a leading zero", id: "caller:group:developers:060",
			field: "id", message: `id: definition id "caller:group:developers:060": window "060": not a canonical positive integer`,
		},
		{
			name: "unknown axis", id: "foo:group:developers:60",
			field: "axis", message: `axis: must be one of caller, target, caller_target, quarantine (got "foo")`,
		},
		{
			name: "unknown entity type", id: "target:tool:mcpgw:search:60",
			field: "entity_type", message: `entity_type: must be one of mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, descriptor, route on the target axis (got "tool")`,
		},
		{
			name: "entity type of another axis", id: "caller:mcp_server:mcpgw:60",
			field: "entity_type", message: `entity_type: must be one of group, user, client, team on the caller axis (got "mcp_server")`,
		},
		{
			name: "window zero", id: "caller:group:developers:0",
			field: "window_seconds", message: "window_seconds: must be between 1 and 86400 (got 0)",
		},
		{
			name: "window too long", id: "caller:group:developers:86401",
			field: "window_seconds", message: "window_seconds: must be between 1 and 86400 (got 86401)",
		},
		{
			name: "reserved name off the quarantine axis", id: "caller:group:quarantine-callers:60",
			field: "name", message: `name: "quarantine-callers" is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject`,
		},
		{
			name: "sentinel with another window", id: "quarantine:group:quarantine-callers:60",
			field: "window_seconds", message: "window_seconds: must be 1 on the quarantine axis (got 60)",
		},
		{
			name: "empty name", id: "caller:group::60",
			field: "name", message: "name: must not be empty",
		},
		{
			name: "group name with a colon", id: "caller:group:a:b:60",
			field: "name", message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "a:b")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DefinitionID(tt.id)
			if tt.want == "" {
				wantProblem(t, err, tt.field, tt.message)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("DefinitionID(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
			}
		})
	}
}

func TestDefaultFloors(t *testing.T) {
	t.Parallel()
	if got, want := DefaultFloors(), (Floors{User: 20, Agent: 10}); got != want {
		t.Errorf("DefaultFloors() = %+v, want %+v", got, want)
	}
}
