package validate

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// normalizeCase is one row of a normalizer table: either want is the
// canonical form, or field and message describe the refusal.
type normalizeCase struct {
	name    string
	kind    string // entity type or subject type, where the function takes one
	in      string
	want    string
	field   string
	message string
}

func runNormalizeCases(t *testing.T, tests []normalizeCase, normalize func(kind, in string) (string, error)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := normalize(tt.kind, tt.in)
			if tt.field != "" {
				wantProblem(t, err, tt.field, tt.message)
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if again, err := normalize(tt.kind, got); err != nil || again != got {
				t.Errorf("normalizing %q again gave %q, %v", got, again, err)
			}
		})
	}
}

func TestTargetName(t *testing.T) {
	t.Parallel()
	runNormalizeCases(t, []normalizeCase{
		{name: "server plain", kind: ratelimit.EntityMCPServer, in: "mcpgw", want: "mcpgw"},
		{name: "server outer slashes dropped", kind: ratelimit.EntityMCPServer, in: "/mcpgw/", want: "mcpgw"},
		{name: "federated server keeps its path", kind: ratelimit.EntityMCPServer, in: "/peer/x/", want: "peer/x"},
		{name: "server inner double slash kept", kind: ratelimit.EntityMCPServer, in: "a//b", want: "a//b"},
		{name: "server whitespace inside slashes", kind: ratelimit.EntityMCPServer, in: " / mcpgw / ", want: "mcpgw"},
		{name: "server with a colon", kind: ratelimit.EntityMCPServer, in: "host:8080", want: "host:8080"},
		{name: "server lower-cased", kind: ratelimit.EntityMCPServer, in: "/SrvLim/", want: "srvlim"},
		{name: "agent lower-cased", kind: ratelimit.EntityA2AAgent, in: "/AGX", want: "/agx"},
		{name: "tool keeps its case, server lower-cased", kind: ratelimit.EntityMCPTool, in: "MCPGW:Search", want: "mcpgw:Search"},
		{name: "agent gains a slash", kind: ratelimit.EntityA2AAgent, in: "booking-agent", want: "/booking-agent"},
		{name: "agent repeated slashes collapse", kind: ratelimit.EntityA2AAgent, in: "//a/b//", want: "/a/b"},
		{name: "agent already canonical", kind: ratelimit.EntityA2AAgent, in: "/booking-agent", want: "/booking-agent"},
		{name: "tool", kind: ratelimit.EntityMCPTool, in: "mcpgw:search", want: "mcpgw:search"},
		{name: "tool parent normalized", kind: ratelimit.EntityMCPTool, in: " /peer/x/ : search ", want: "peer/x:search"},
		{name: "tool split at the last colon", kind: ratelimit.EntityMCPTool, in: "host:8080:search", want: "host:8080:search"},
		{name: "skill parent gains a slash", kind: ratelimit.EntityA2ASkill, in: "booking-agent:find", want: "/booking-agent:find"},
		{name: "group trimmed", kind: ratelimit.EntityGroup, in: " developers ", want: "developers"},
		{name: "server_group name", kind: ratelimit.EntityServerGroup, in: "tier-1.backends_v2", want: "tier-1.backends_v2"},
		{name: "group may be a quarantine group", kind: ratelimit.EntityGroup, in: "quarantine-callers", want: "quarantine-callers"},

		{
			name: "unknown entity type", kind: "mcp", in: "mcpgw",
			field: "entity_type", message: `entity_type: must be one of group, mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, descriptor (got "mcp")`,
		},
		{
			name: "server empty", kind: ratelimit.EntityMCPServer, in: "",
			field: "name", message: "name: must not be empty",
		},
		{
			name: "server only slashes", kind: ratelimit.EntityMCPServer, in: " /// ",
			field: "name", message: `name: must name a path, not only slashes (got "///")`,
		},
		{
			name: "agent only slash", kind: ratelimit.EntityA2AAgent, in: "/",
			field: "name", message: `name: must name a path, not only slashes (got "/")`,
		},
		{
			name: "agent with a tab inside", kind: ratelimit.EntityA2AAgent, in: "book\ting",
			field: "name", message: `name: must not contain control characters (got "/book\ting")`,
		},
		{
			name: "server exactly 257 bytes", kind: ratelimit.EntityMCPServer, in: strings.Repeat("s", 257),
			field: "name", message: "name: must be at most 256 bytes (got 257)",
		},
		{
			name: "tool without a colon", kind: ratelimit.EntityMCPTool, in: "mcpgw",
			field: "name", message: `name: must be <server>:<tool> (got "mcpgw")`,
		},
		{
			name: "tool with an empty tool", kind: ratelimit.EntityMCPTool, in: "mcpgw:",
			field: "name", message: `name: must be <server>:<tool> with a tool after the last ':' (got "mcpgw:")`,
		},
		{
			name: "tool with an empty server", kind: ratelimit.EntityMCPTool, in: " : search",
			field: "name", message: `name: must be <server>:<tool> with a name before the last ':' (got ": search")`,
		},
		{
			name: "tool with a slash in the tool", kind: ratelimit.EntityMCPTool, in: "mcpgw:a/b",
			field: "name", message: `name: the tool "a/b" must not contain '/'`,
		},
		{
			name: "skill without a colon", kind: ratelimit.EntityA2ASkill, in: "/booking",
			field: "name", message: `name: must be <agent>:<skill> (got "/booking")`,
		},
		{
			name: "skill with an empty skill", kind: ratelimit.EntityA2ASkill, in: "/booking: ",
			field: "name", message: `name: must be <agent>:<skill> with a skill after the last ':' (got "/booking:")`,
		},
		{
			name: "tool 257 bytes in all", kind: ratelimit.EntityMCPTool, in: strings.Repeat("s", 200) + ":" + strings.Repeat("t", 56),
			field: "name", message: "name: must be at most 256 bytes (got 257)",
		},
		{
			name: "group with a colon", kind: ratelimit.EntityGroup, in: "a:b",
			field: "name", message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "a:b")`,
		},
	}, TargetName)
}

func TestSubject(t *testing.T) {
	t.Parallel()
	runNormalizeCases(t, []normalizeCase{
		{name: "user email", kind: ratelimit.SubjectUser, in: " alice@example.com ", want: "alice@example.com"},
		{name: "user non-ASCII", kind: ratelimit.SubjectUser, in: "zoë", want: "zoë"},
		{name: "client with colons and slashes", kind: ratelimit.SubjectClient, in: "urn:x/y:z/", want: "urn:x/y:z/"},
		{name: "server normalized", kind: ratelimit.SubjectServer, in: "/mcpgw/", want: "mcpgw"},
		{name: "agent normalized", kind: ratelimit.SubjectAgent, in: "booking-agent", want: "/booking-agent"},

		{
			name: "unknown subject type", kind: "group", in: "developers",
			field: "subject_type", message: `subject_type: must be one of user, client, server, agent, network, team (got "group")`,
		},
		// Lookups find a subject stored before the whitespace rule;
		// Membership and Admin refuse to store one.
		{name: "user with spaces inside, looked up", kind: ratelimit.SubjectUser, in: "Alice Smith", want: "Alice Smith"},
		{
			name: "user whitespace only", kind: ratelimit.SubjectUser, in: "\t \n",
			field: "subject", message: "subject: must not be empty",
		},
		{
			name: "client with a NUL", kind: ratelimit.SubjectClient, in: "a\x00b",
			field: "subject", message: `subject: must not contain control characters (got "a\x00b")`,
		},
		{
			name: "user with a C1 control", kind: ratelimit.SubjectUser, in: "a\u0085b",
			field: "subject", message: `subject: must not contain control characters (got "a\u0085b")`,
		},
		{
			name: "user not UTF-8", kind: ratelimit.SubjectUser, in: "\xc3",
			field: "subject", message: `subject: must be valid UTF-8 (got "\xc3")`,
		},
		{
			name: "user 257 bytes", kind: ratelimit.SubjectUser, in: strings.Repeat("é", 128) + "x",
			field: "subject", message: "subject: must be at most 256 bytes (got 257)",
		},
		{
			name: "server only slashes", kind: ratelimit.SubjectServer, in: "/",
			field: "subject", message: `subject: must name a path, not only slashes (got "/")`,
		},
	}, Subject)
}

func TestGroupName(t *testing.T) {
	t.Parallel()
	runNormalizeCases(t, []normalizeCase{
		{name: "all allowed characters", kind: "groups[0]", in: "Az09._-", want: "Az09._-"},
		{name: "trimmed", kind: "name", in: "\tdevelopers ", want: "developers"},
		{name: "exactly 256 bytes", kind: "name", in: strings.Repeat("g", 256), want: strings.Repeat("g", 256)},
		{name: "reserved name is a valid group name", kind: "groups[0]", in: "quarantine-targets", want: "quarantine-targets"},

		{
			name: "empty, reported under the given field", kind: "groups[3]", in: "",
			field: "groups[3]", message: "groups[3]: must not be empty",
		},
		{
			name: "slash", kind: "name", in: "a/b",
			field: "name", message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "a/b")`,
		},
		{
			name: "at sign", kind: "name", in: "a@b",
			field: "name", message: `name: must contain only ASCII letters, digits, '.', '_' and '-' (got "a@b")`,
		},
		{
			name: "control character", kind: "name", in: "a\x01b",
			field: "name", message: `name: must not contain control characters (got "a\x01b")`,
		},
		{
			name: "257 bytes", kind: "name", in: strings.Repeat("g", 257),
			field: "name", message: "name: must be at most 256 bytes (got 257)",
		},
	}, GroupName)
}
