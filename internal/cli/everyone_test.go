package cli_test

// rlctl's surface of definitions for everyone, per ip/team/shared buckets
// and team subjects.

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/enforce"
)

func TestSetEveryoneAndPer(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "per-ip", "--everyone", "--per", "ip",
		"--user-max-requests", "60", "--agent-max-requests", "60", "--window-seconds", "60")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "tenants", "--per", "team",
		"--user-max-requests", "1000", "--window-seconds", "3600")
	r.Must("member", "set", "--subject-type", "team", "--subject", "acme-corp", "--groups", "tenants")

	out := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list").Out
	for _, want := range []string{"user=60 agent=60 (everyone, per ip)", "user=1000 (per team)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if out := r.Must("rate-limit", "get", "caller:group:per-ip:60", "-o", "yaml"); !strings.Contains(out, "everyone: true\n") || !strings.Contains(out, "per: ip\n") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := r.Must("member", "list", "-o", "json"); !strings.Contains(out, `"id": "team:acme-corp"`) {
		t.Errorf("member list:\n%s", out)
	}
	// Why each definition applies to alice of acme-corp.
	st := r.Must("rate-limit", "status", "--username", "alice", "--team", "acme-corp", "-o", "json")
	for _, want := range []string{`"caller:group:per-ip:60": "everyone"`, `"caller:group:tenants:3600": "team:acme-corp"`} {
		if !strings.Contains(st, want) {
			t.Errorf("status -o json lacks %s:\n%s", want, st)
		}
	}
	table := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "status", "--username", "alice", "--team", "acme-corp").Out
	if !strings.Contains(table, "MATCHED-BY") || !strings.Contains(table, "team:acme-corp") || !strings.Contains(table, "everyone") {
		t.Errorf("status table:\n%s", table)
	}
	if out := r.Must("export"); !strings.Contains(out, "per: team") || !strings.Contains(out, "subject_type: team") {
		t.Errorf("export:\n%s", out)
	}
	// A team's bucket is listed by --caller team:<name>.
	if err := r.Env.Enforcer.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Env.Enforcer.Check(t.Context(), enforce.Call{Username: "zed", Team: "acme-corp", TargetType: "mcp_server", TargetName: "srv"}); err != nil || !d.Allowed {
		t.Fatalf("check: %+v, %v", d, err)
	}
	if out := r.Must("counters", "get", "--caller", "team:acme-corp", "-o", "json"); !strings.Contains(out, `"key": "p|caller:group:tenants:3600|team:acme-corp"`) ||
		!strings.Contains(out, `"definition_id": "caller:group:tenants:3600"`) {
		t.Errorf("counters get --caller team:acme-corp:\n%s", out)
	}
	res := r.Run("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "srv", "--per", "ip",
		"--max-requests", "10", "--window-seconds", "60")
	if res.Code == 0 || !strings.Contains(res.ErrOut, "per: not allowed on the target axis") {
		t.Errorf("--per ip on a target: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	if out := r.Must("__complete", "rate-limit", "set", "--per", ""); !strings.HasPrefix(out, "caller\nip\nteam\nshared\n") {
		t.Errorf("completion of --per:\n%s", out)
	}
	if out := r.Must("__complete", "member", "set", "--subject-type", ""); !strings.Contains(out, "team\n") {
		t.Errorf("completion of --subject-type:\n%s", out)
	}
}

// rate-limit status --client-ip explains an anonymous caller as a gateway
// decides it: its network's groups apply, and a caller outside the
// network meets none of them.
func TestStatusOfAnAnonymousCaller(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "lan",
		"--user-max-requests", "110", "--window-seconds", "60")
	r.Must("member", "set", "--subject-type", "network", "--subject", "10.0.0.0/8", "--groups", "lan")
	// A network is found by the address in the enforcer's snapshot, which
	// hears of the membership a moment after it is written.
	var inside string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		inside = r.Must("rate-limit", "status", "--client-ip", "10.1.2.3", "--entity-type", "mcp_server", "--name", "mcpgw", "-o", "json")
		if strings.Contains(inside, "caller:group:lan:60") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(inside, `"caller:group:lan:60": "network:10.0.0.0/8"`) {
		t.Errorf("status of 10.1.2.3 does not say the network's group applies:\n%s", inside)
	}
	outside := r.Must("rate-limit", "status", "--client-ip", "198.51.100.1", "--entity-type", "mcp_server", "--name", "mcpgw", "-o", "json")
	if strings.Contains(outside, "caller:group:lan:60") {
		t.Errorf("status of 198.51.100.1, outside 10.0.0.0/8, lists the network's group:\n%s", outside)
	}
}
