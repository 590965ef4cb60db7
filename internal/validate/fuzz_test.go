package validate

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The fuzz targets check the promise every normalizer makes: what it accepts
// it turns into a canonical form that it accepts unchanged, and every id it
// accepts survives a round trip through the ratelimit parser.

// nameSeeds are inputs that exercise trimming, slashes, colons, control
// characters, invalid UTF-8 and the length limit.
func nameSeeds() []string {
	return []string{
		"", " ", "/", "//", "mcpgw", "/mcpgw/", "/peer/x/", "//a/b//", " / a / ", "booking-agent",
		"mcpgw:search", " /peer/x/ : search ", "host:8080:search", ":", "a:", ":b", "a::b", "a:b/c",
		"developers", "quarantine-callers", "dev team", "a\x00b", "\xff", "\u0085a\u0085", "\u00a0x\u00a0",
		strings.Repeat("a", 256), strings.Repeat("a", 257), "/" + strings.Repeat("a", 255) + ":b",
	}
}

// checkCanonical fails unless s is the kind of string every normalizer
// promises to return.
func checkCanonical(t *testing.T, s string) {
	t.Helper()
	switch {
	case s == "":
		t.Errorf("accepted an empty result")
	case len(s) > maxNameBytes:
		t.Errorf("result %q is %d bytes, over %d", s, len(s), maxNameBytes)
	case !utf8.ValidString(s):
		t.Errorf("result %q is not UTF-8", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		t.Errorf("result %q contains control characters", s)
	case strings.TrimSpace(s) != s:
		t.Errorf("result %q has surrounding whitespace", s)
	}
}

func FuzzTargetName(f *testing.F) {
	for _, s := range nameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, entityType := range []string{ratelimit.EntityGroup, ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent,
			ratelimit.EntityMCPTool, ratelimit.EntityA2ASkill, ratelimit.EntityServerGroup} {
			got, err := TargetName(entityType, name)
			if err != nil {
				continue
			}
			checkCanonical(t, got)
			again, err := TargetName(entityType, got)
			if err != nil || again != got {
				t.Errorf("%s: TargetName(%q) = %q, but again gives %q, %v", entityType, name, got, again, err)
			}
		}
	})
}

func FuzzSubject(f *testing.F) {
	for _, s := range nameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		for _, subjectType := range []string{ratelimit.SubjectUser, ratelimit.SubjectClient, ratelimit.SubjectServer, ratelimit.SubjectAgent} {
			got, err := Subject(subjectType, subject)
			if err != nil {
				continue
			}
			checkCanonical(t, got)
			again, err := Subject(subjectType, got)
			if err != nil || again != got {
				t.Errorf("%s: Subject(%q) = %q, but again gives %q, %v", subjectType, subject, got, again, err)
			}
		}
	})
}

func FuzzGroupName(f *testing.F) {
	for _, s := range nameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := GroupName("name", name)
		if err != nil {
			return
		}
		checkCanonical(t, got)
		if strings.ContainsFunc(got, isNotGroupNameChar) {
			t.Errorf("GroupName(%q) = %q, outside the group charset", name, got)
		}
		if again, err := GroupName("name", got); err != nil || again != got {
			t.Errorf("GroupName(%q) = %q, but again gives %q, %v", name, got, again, err)
		}
	})
}

func FuzzTokenName(f *testing.F) {
	for _, s := range []string{"", " ci@build ", "a b", strings.Repeat("t", 64), strings.Repeat("t", 65), "zoë", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := TokenName(name)
		if err != nil {
			return
		}
		if got == "" || len(got) > maxTokenNameBytes || strings.ContainsFunc(got, isNotTokenNameChar) {
			t.Errorf("TokenName(%q) = %q, outside the rules", name, got)
		}
		if again, err := TokenName(got); err != nil || again != got {
			t.Errorf("TokenName(%q) = %q, but again gives %q, %v", name, got, again, err)
		}
	})
}

func FuzzDefinitionID(f *testing.F) {
	for _, s := range []string{
		"caller:group:developers:60", "caller_target:group:developers:86400",
		"target:mcp_server:/peer/x/:60", "target:a2a_agent:booking-agent:60", "target:a2a_agent://a/b//:1",
		"target:mcp_tool:peer:x/:search:60", "target:a2a_skill:/booking:find:1",
		"target:server_group:fragile-backends:60", ratelimit.SentinelCallers, ratelimit.SentinelTargets,
		"caller:group:quarantine-callers:60", "caller:group::60", "caller:group:a:b:60", "caller:group:dev:060",
		"caller:group:dev:0", "caller:group:dev:86401", "foo:group:dev:60", "target:mcp_server: / x / :60",
		"target:mcp_tool:a::b:60", ":::", "caller:group",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		canonical, err := DefinitionID(id)
		if err != nil {
			return
		}
		axis, entityType, name, window, err := ratelimit.ParseDefinitionID(canonical)
		if err != nil {
			t.Fatalf("DefinitionID(%q) = %q, which does not parse: %v", id, canonical, err)
		}
		if back := ratelimit.DefinitionID(axis, entityType, name, window); back != canonical {
			t.Errorf("DefinitionID(%q) = %q, which parses and formats back to %q", id, canonical, back)
		}
		checkCanonical(t, name)
		if again, err := DefinitionID(canonical); err != nil || again != canonical {
			t.Errorf("DefinitionID(%q) = %q, but again gives %q, %v", id, canonical, again, err)
		}
	})
}

func FuzzMembershipID(f *testing.F) {
	for _, s := range []string{
		"user:alice@example.com", "user: alice ", "client:urn:client:7", "server:/peer/x/", "agent:booking-agent",
		"agent://", "user:", "group:developers", "alice", ":", "server:a:b", "agent:/a:b/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		canonical, err := MembershipID(id)
		if err != nil {
			return
		}
		subjectType, subject, err := ratelimit.ParseMembershipID(canonical)
		if err != nil {
			t.Fatalf("MembershipID(%q) = %q, which does not parse: %v", id, canonical, err)
		}
		if back := ratelimit.MembershipID(subjectType, subject); back != canonical {
			t.Errorf("MembershipID(%q) = %q, which parses and formats back to %q", id, canonical, back)
		}
		checkCanonical(t, subject)
		if again, err := MembershipID(canonical); err != nil || again != canonical {
			t.Errorf("MembershipID(%q) = %q, but again gives %q, %v", id, canonical, again, err)
		}
	})
}
