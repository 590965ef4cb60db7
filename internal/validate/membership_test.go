package validate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestMembershipAccepts(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	expires := at.Add(time.Hour)
	tests := []struct {
		name string
		in   ratelimit.Membership
		want ratelimit.Membership
	}{
		{
			name: "user with an email subject, groups trimmed and de-duplicated",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: " alice@example.com ",
				Groups: []string{" developers ", "power-users", "developers", "power-users "}},
			want: ratelimit.Membership{ID: "user:alice@example.com", SubjectType: ratelimit.SubjectUser,
				Subject: "alice@example.com", Groups: []string{"developers", "power-users"}},
		},
		{
			name: "client id with colons and slashes kept verbatim",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectClient, Subject: "urn:client/ci:7",
				Groups: []string{"agents"}},
			want: ratelimit.Membership{ID: "client:urn:client/ci:7", SubjectType: ratelimit.SubjectClient,
				Subject: "urn:client/ci:7", Groups: []string{"agents"}},
		},
		{
			name: "quarantined user keeps reason and times",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "mallory",
				Groups:           []string{"developers", ratelimit.GroupQuarantineCallers},
				QuarantineReason: "  leaked token ", QuarantinedAt: &at, QuarantineExpiresAt: &expires, Version: 3},
			want: ratelimit.Membership{ID: "user:mallory", SubjectType: ratelimit.SubjectUser, Subject: "mallory",
				Groups:           []string{"developers", ratelimit.GroupQuarantineCallers},
				QuarantineReason: "leaked token", QuarantinedAt: &at, QuarantineExpiresAt: &expires, Version: 3},
		},
		{
			name: "client in quarantine-callers",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectClient, Subject: "bot-7",
				Groups: []string{ratelimit.GroupQuarantineCallers}},
			want: ratelimit.Membership{ID: "client:bot-7", SubjectType: ratelimit.SubjectClient, Subject: "bot-7",
				Groups: []string{ratelimit.GroupQuarantineCallers}},
		},
		{
			name: "server subject normalized like an mcp_server name",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectServer, Subject: "/peer/mcpgw/",
				Groups: []string{ratelimit.GroupQuarantineTargets, " quarantine-targets"}},
			want: ratelimit.Membership{ID: "server:peer/mcpgw", SubjectType: ratelimit.SubjectServer, Subject: "peer/mcpgw",
				Groups: []string{ratelimit.GroupQuarantineTargets}},
		},
		{
			name: "agent subject normalized like an a2a_agent path",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectAgent, Subject: "booking-agent//",
				Groups: []string{ratelimit.GroupQuarantineTargets}},
			want: ratelimit.Membership{ID: "agent:/booking-agent", SubjectType: ratelimit.SubjectAgent, Subject: "/booking-agent",
				Groups: []string{ratelimit.GroupQuarantineTargets}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Membership(tt.in)
			if err != nil {
				t.Fatalf("Membership: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			again, err := Membership(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("normalizing the result again gave %+v, %v", again, err)
			}
			if id, err := MembershipID(got.ID); err != nil || id != got.ID {
				t.Errorf("MembershipID(%q) = %q, %v; want it unchanged", got.ID, id, err)
			}
		})
	}
}

func TestMembershipRefuses(t *testing.T) {
	t.Parallel()
	user := func(groups ...string) ratelimit.Membership {
		return ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: groups}
	}
	tests := []struct {
		name    string
		in      ratelimit.Membership
		field   string
		message string
	}{
		{
			name:    "unknown subject type",
			in:      ratelimit.Membership{SubjectType: "group", Subject: "developers", Groups: []string{"x"}},
			field:   "subject_type",
			message: `subject_type: must be one of user, client, server, agent, network, team (got "group")`,
		},
		{
			name:    "missing subject type",
			in:      ratelimit.Membership{Subject: "alice", Groups: []string{"developers"}},
			field:   "subject_type",
			message: `subject_type: must be one of user, client, server, agent, network, team (got "")`,
		},
		{
			name:    "empty subject",
			in:      ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "  ", Groups: []string{"developers"}},
			field:   "subject",
			message: "subject: must not be empty",
		},
		{
			name:    "subject with a control character",
			in:      ratelimit.Membership{SubjectType: ratelimit.SubjectClient, Subject: "bot\x7f", Groups: []string{"developers"}},
			field:   "subject",
			message: `subject: must not contain control characters (got "bot\x7f")`,
		},
		{
			name:    "subject longer than 256 bytes",
			in:      ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: strings.Repeat("x", 257), Groups: []string{"developers"}},
			field:   "subject",
			message: "subject: must be at most 256 bytes (got 257)",
		},
		{
			name:    "agent subject that is only a slash",
			in:      ratelimit.Membership{SubjectType: ratelimit.SubjectAgent, Subject: "/", Groups: []string{ratelimit.GroupQuarantineTargets}},
			field:   "subject",
			message: `subject: must name a path, not only slashes (got "/")`,
		},
		{
			name:    "no groups",
			in:      user(),
			field:   "groups",
			message: "groups: must name at least one group; delete the membership instead",
		},
		{
			name:    "empty group list",
			in:      ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{}},
			field:   "groups",
			message: "groups: must name at least one group; delete the membership instead",
		},
		{
			name:    "empty group name",
			in:      user("developers", " "),
			field:   "groups[1]",
			message: "groups[1]: must not be empty",
		},
		{
			name:    "group name outside the charset",
			in:      user("developers", "ops", "power:users"),
			field:   "groups[2]",
			message: `groups[2]: must contain only ASCII letters, digits, '.', '_' and '-' (got "power:users")`,
		},
		{
			// One rule for subjects and names: a space inside is refused
			// in a username as in a group name, with the same message.
			name:    "user with a space inside",
			in:      ratelimit.Membership{SubjectType: "user", Subject: "Alice Smith", Groups: []string{"developers"}},
			field:   "subject",
			message: `subject: must not contain whitespace (got "Alice Smith"): names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters`,
		},
		{
			name:    "server with a space inside",
			in:      ratelimit.Membership{SubjectType: "server", Subject: "/my server/", Groups: []string{"quarantine-targets"}},
			field:   "subject",
			message: `subject: must not contain whitespace (got "my server"): names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters`,
		},
		{
			name:    "group name with a space: the rule subjects follow too",
			in:      user("developers", "power users"),
			field:   "groups[1]",
			message: `groups[1]: must not contain whitespace (got "power users"): names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters`,
		},
		{
			name:    "group name longer than 256 bytes",
			in:      user(strings.Repeat("g", 257)),
			field:   "groups[0]",
			message: "groups[0]: must be at most 256 bytes (got 257)",
		},
		{
			name:    "user in quarantine-targets",
			in:      user(ratelimit.GroupQuarantineTargets),
			field:   "groups[0]",
			message: "groups[0]: quarantine-targets holds servers and agents; use quarantine-callers to quarantine a user",
		},
		{
			name: "client in quarantine-targets",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectClient, Subject: "bot",
				Groups: []string{"agents", ratelimit.GroupQuarantineTargets}},
			field:   "groups[1]",
			message: "groups[1]: quarantine-targets holds servers and agents; use quarantine-callers to quarantine a client",
		},
		{
			name: "server in a caller group",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectServer, Subject: "mcpgw",
				Groups: []string{"developers"}},
			field:   "groups[0]",
			message: `groups[0]: server subjects can only be in quarantine-targets; rate-limit groups hold callers (users and clients) (got "developers")`,
		},
		{
			name: "agent in quarantine-callers",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectAgent, Subject: "/booking",
				Groups: []string{ratelimit.GroupQuarantineTargets, ratelimit.GroupQuarantineCallers}},
			field:   "groups[1]",
			message: `groups[1]: agent subjects can only be in quarantine-targets; rate-limit groups hold callers (users and clients) (got "quarantine-callers")`,
		},
		{
			name: "reason with a newline",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "alice",
				Groups: []string{ratelimit.GroupQuarantineCallers}, QuarantineReason: "line one\nline two"},
			field:   "quarantine_reason",
			message: "quarantine_reason: must not contain control characters",
		},
		{
			name: "reason longer than 1024 bytes",
			in: ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "alice",
				Groups: []string{ratelimit.GroupQuarantineCallers}, QuarantineReason: strings.Repeat("r", 1025)},
			field:   "quarantine_reason",
			message: "quarantine_reason: must be at most 1024 bytes (got 1025)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Membership(tt.in)
			wantProblem(t, err, tt.field, tt.message)
			if !reflect.DeepEqual(got, ratelimit.Membership{}) {
				t.Errorf("got %+v alongside the error, want the zero Membership", got)
			}
		})
	}
}

func TestMembershipReportsEveryProblem(t *testing.T) {
	t.Parallel()
	m := ratelimit.Membership{SubjectType: ratelimit.SubjectServer, Subject: "//",
		Groups: []string{"developers", "", ratelimit.GroupQuarantineTargets}, QuarantineReason: "\x00"}
	_, err := Membership(m)
	var fields []string
	for _, fe := range problemsOf(t, err) {
		fields = append(fields, fe.Field)
	}
	want := []string{"subject", "groups[0]", "groups[1]", "quarantine_reason"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("got problems with %q\nwant %q\n(%v)", fields, want, err)
	}
}

func TestMembershipID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      string
		want    string // canonical id; empty when refused
		field   string
		message string
	}{
		{name: "user", id: "user:alice@example.com", want: "user:alice@example.com"},
		{name: "subject with colons", id: "client:urn:client:7", want: "client:urn:client:7"},
		{name: "user subject trimmed", id: "user: alice ", want: "user:alice"},
		{name: "server normalized", id: "server:/peer/x/", want: "server:peer/x"},
		{name: "agent normalized", id: "agent:booking-agent", want: "agent:/booking-agent"},
		{
			name: "no colon", id: "alice",
			field: "id", message: `id: membership id "alice": want <subject_type>:<subject>`,
		},
		{
			name: "unknown subject type", id: "group:developers",
			field: "subject_type", message: `subject_type: must be one of user, client, server, agent, network, team (got "group")`,
		},
		{
			name: "empty subject", id: "user:",
			field: "subject", message: "subject: must not be empty",
		},
		{
			name: "agent path only slashes", id: "agent://",
			field: "subject", message: `subject: must name a path, not only slashes (got "//")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MembershipID(tt.id)
			if tt.want == "" {
				wantProblem(t, err, tt.field, tt.message)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("MembershipID(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
			}
		})
	}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      ratelimit.Admin
		want    ratelimit.Admin
		field   string // empty when accepted
		message string
	}{
		{
			name: "user trimmed, note trimmed with newline kept",
			in:   ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: " alice ", Note: " on call\nteam ", CreatedBy: "root"},
			want: ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "alice", Note: "on call\nteam", CreatedBy: "root"},
		},
		{
			name: "client with slashes",
			in:   ratelimit.Admin{SubjectType: ratelimit.SubjectClient, Subject: "ops/bot"},
			want: ratelimit.Admin{SubjectType: ratelimit.SubjectClient, Subject: "ops/bot"},
		},
		{
			name:    "server cannot be an admin",
			in:      ratelimit.Admin{SubjectType: ratelimit.SubjectServer, Subject: "mcpgw"},
			field:   "subject_type",
			message: `subject_type: must be one of user, client (got "server")`,
		},
		{
			name:    "agent cannot be an admin",
			in:      ratelimit.Admin{SubjectType: ratelimit.SubjectAgent, Subject: "/booking"},
			field:   "subject_type",
			message: `subject_type: must be one of user, client (got "agent")`,
		},
		{
			name:    "empty subject",
			in:      ratelimit.Admin{SubjectType: ratelimit.SubjectUser},
			field:   "subject",
			message: "subject: must not be empty",
		},
		{
			name:    "note longer than 1024 bytes",
			in:      ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "alice", Note: strings.Repeat("n", 1025)},
			field:   "note",
			message: "note: must be at most 1024 bytes (got 1025)",
		},
		{
			name:    "note with a control character",
			in:      ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "alice", Note: "bell\a"},
			field:   "note",
			message: "note: must not contain control characters other than newline and tab",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Admin(tt.in)
			if tt.field != "" {
				wantProblem(t, err, tt.field, tt.message)
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Admin(%+v) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}
