package cli_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// TestReferenceWalkthrough is the reference guide's walk-through, with the
// flat commands exactly as the reference spells them (plus its global
// flags): a group with a minute and a daily window, a user and an agent in
// it, a quarantined client, listing, removing, deleting, and cleaning up to
// empty lists.
func TestReferenceWalkthrough(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	tokenFile := writeTokenFile(t, `{"access_token": "`+r.Token+`"}`)
	ref := func(args ...string) string {
		t.Helper()
		res := r.RunWith(clitest.Opts{Bare: true}, append(args, "--registry-url", r.Env.URL, "--token-file", tokenFile)...)
		if res.Code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], res.Code, res.ErrOut)
		}
		return res.Out
	}

	ref("rate-limit-set", "--axis", "caller", "--entity-type", "group", "--name", "developers",
		"--user-max-requests", "100", "--agent-max-requests", "100", "--window-seconds", "60")
	ref("rate-limit-set", "--axis", "caller", "--entity-type", "group", "--name", "developers",
		"--user-max-requests", "5000", "--agent-max-requests", "5000", "--window-seconds", "86400")
	ref("rate-limit-set", "--axis", "target", "--entity-type", "server_group", "--name", "fragile-backends",
		"--max-requests", "100", "--window-seconds", "60", "--members", "airegistry-tools,aws-kb")
	ref("rate-limit-member-set", "--subject-type", "user", "--subject", "alice", "--groups", "developers")
	ref("rate-limit-member-set", "--subject-type", "client", "--subject", "my-agent-client-id", "--groups", "developers")
	ref("rate-limit-quarantine-add", "--subject-type", "client", "--subject", "my-agent-client-id")

	list := ref("rate-limit-list")
	for _, id := range []string{"caller:group:developers:60", "caller:group:developers:86400", "target:server_group:fragile-backends:60"} {
		if !strings.Contains(list, id) {
			t.Errorf("rate-limit-list lacks %s:\n%s", id, list)
		}
	}
	if got := ref("rate-limit-get", "--id", "caller:group:developers:60"); !strings.Contains(got, "user=100 agent=100") {
		t.Errorf("rate-limit-get: %s", got)
	}
	members := ref("rate-limit-member-list")
	if !strings.Contains(members, "user:alice") || !strings.Contains(members, "developers,quarantine-callers") {
		t.Errorf("member list:\n%s", members)
	}
	if q := ref("rate-limit-quarantine-list"); !strings.Contains(q, "client:my-agent-client-id") {
		t.Errorf("quarantine list:\n%s", q)
	}
	status := ref("rate-limit-status", "--identity", "developers", "-o", "json")
	if !strings.Contains(status, `"caller:group:developers:86400"`) {
		t.Errorf("status: %s", status)
	}
	ref("rate-limit-disable", "--id", "caller:group:developers:60")
	if got := ref("rate-limit-get", "--id", "caller:group:developers:60"); !strings.Contains(got, "false") {
		t.Errorf("after disable: %s", got)
	}
	ref("rate-limit-enable", "--id", "caller:group:developers:60")

	// Clean up to empty lists.
	ref("rate-limit-quarantine-remove", "--subject-type", "client", "--subject", "my-agent-client-id")
	if q := ref("rate-limit-quarantine-list"); q != "SCOPE\tID\tREASON\tSINCE\tEXPIRES\tSTATE\n" {
		t.Errorf("quarantine list after removal:\n%s", q)
	}
	ref("rate-limit-member-delete", "--id", "user:alice")
	ref("rate-limit-member-delete", "--id", "client:my-agent-client-id")
	for _, id := range []string{"caller:group:developers:60", "caller:group:developers:86400", "target:server_group:fragile-backends:60"} {
		ref("rate-limit-delete", "--id", id)
	}
	if m := ref("rate-limit-member-list"); m != "ID\tSUBJECT-TYPE\tSUBJECT\tGROUPS\n" {
		t.Errorf("members after cleanup:\n%s", m)
	}
	// Only the two sentinels remain, and they cannot be deleted.
	rest := strings.Fields(ref("rate-limit-list", "-o", "name"))
	if len(rest) != 2 || !strings.Contains(rest[0], "quarantine-callers") {
		t.Errorf("definitions after cleanup: %v", rest)
	}
}

// TestGroupedWalkthrough does the same with the grouped verbs, which prompt
// before destructive changes.
func TestGroupedWalkthrough(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "devs",
		"--user-max-requests", "60", "--agent-max-requests", "30", "--window-seconds", "60")
	r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "devs")
	r.Must("member", "set", "--subject-type", "client", "--subject", "bot", "--groups", "devs")
	out := r.Must("quarantine", "add", "--subject-type", "client", "--subject", "bot", "--reason", "key leak", "--for", "2h", "--yes")
	if !strings.Contains(out, "client:bot quarantined until ") {
		t.Errorf("quarantine add said %q", out)
	}
	if got := r.Must("member", "get", "client:bot", "-o", "json"); !strings.Contains(got, `"quarantine_reason": "key leak"`) {
		t.Errorf("member get: %s", got)
	}
	r.Must("quarantine", "remove", "--subject-type", "client", "--subject", "bot", "--yes")
	if got := r.Must("quarantine", "remove", "--subject-type", "client", "--subject", "bot", "--yes"); !strings.Contains(got, "was not quarantined") {
		t.Errorf("second remove said %q", got)
	}
	r.Must("member", "delete", "user:alice", "--yes")
	r.Must("member", "delete", "client:bot", "--yes")
	r.Must("rate-limit", "delete", "caller:group:devs:60", "--yes")
	if got := r.Must("member", "list"); got != "ID\tSUBJECT-TYPE\tSUBJECT\tGROUPS\n" {
		t.Errorf("members left: %q", got)
	}
}
