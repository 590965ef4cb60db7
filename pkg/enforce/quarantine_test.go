package enforce_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestQuarantine(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Member("client", "leaked", "quarantine-callers")
	f.Member("user", "root", "quarantine-callers") // only possible behind the API's back
	f.Member("server", "compromised", "quarantine-targets")
	f.Member("agent", "/booking", "quarantine-targets")
	if _, err := f.Store.Pool().Exec(t.Context(), `insert into rl_admins (subject_type, subject) values ('user', 'root')`); err != nil {
		t.Fatal(err)
	}
	f.Refresh()

	cases := []struct {
		name  string
		call  enforce.Call
		scope string // "" means allowed
	}{
		{"quarantined caller", agent("leaked", "s"), "caller"},
		{"same name as a user is another identity", user("leaked", "s"), ""},
		{"quarantined target", user("alice", "/compromised/"), "target"},
		{"quarantined agent target", enforce.Call{Username: "alice", TargetType: "a2a_agent", TargetName: "booking"}, "target"},
		{"admin caller bypasses caller quarantine", user("root", "s"), ""},
		{"admin flag bypasses caller quarantine", enforce.Call{ClientID: "leaked", IsAdmin: true, TargetType: "mcp_server", TargetName: "s"}, ""},
		{"admin does not bypass target quarantine", enforce.Call{Username: "root", IsAdmin: true, TargetType: "mcp_server", TargetName: "compromised"}, "target"},
	}
	for _, c := range cases {
		d := f.Check(c.call)
		if c.scope == "" {
			if !d.Allowed {
				t.Errorf("%s: denied %+v", c.name, d)
			}
			continue
		}
		if d.Allowed || d.Reason != enforce.ReasonQuarantined || d.QuarantineScope != c.scope || d.Limit != 0 {
			t.Errorf("%s: %+v, want quarantined (%s) without rate fields", c.name, d, c.scope)
		}
	}
	if n := f.counter(""); n != 0 {
		t.Errorf("quarantine denials touched counters (%d)", n)
	}

	// The sentinels are the global switches.
	if _, err := f.Store.Pool().Exec(t.Context(), `update rl_definitions set enabled = false where id = $1`, ratelimit.SentinelCallers); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	if d := f.Check(agent("leaked", "s")); !d.Allowed {
		t.Errorf("caller quarantine switched off, still denied: %+v", d)
	}
	if d := f.Check(user("alice", "compromised")); d.Allowed {
		t.Errorf("target quarantine still on, but allowed")
	}
}

func TestExpiredQuarantineStopsApplying(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	expires := f.Clock.Now().Add(time.Hour)
	if _, err := f.Store.Pool().Exec(t.Context(), `insert into rl_memberships (subject_type, subject, groups, quarantine_expires_at)
		values ('client', 'temp', '{quarantine-callers}', $1)`, expires); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	if d := f.Check(agent("temp", "s")); d.Allowed {
		t.Fatal("quarantined within its hour, but allowed")
	}
	f.Clock.Advance(time.Hour)
	if d := f.Check(agent("temp", "s")); !d.Allowed {
		t.Errorf("quarantine expired, still denied: %+v", d)
	}
}

// TestQuarantineReadErrors: with no usable snapshot, quarantine follows one
// fail rule for callers and targets alike.
func TestQuarantineReadErrors(t *testing.T) {
	t.Parallel()
	for _, closed := range []bool{false, true} {
		f := newFixture(t, enforce.Options{QuarantineFailClosed: closed, CacheTTL: time.Minute})
		f.Member("client", "leaked", "quarantine-callers")
		// Reloads fail from now on, and the snapshot ages past its TTLs.
		if _, err := f.Store.Pool().Exec(context.Background(), `alter table rl_memberships rename to rl_memberships_gone`); err != nil {
			t.Fatal(err)
		}
		f.Clock.Advance(4 * time.Minute)
		_ = f.E.Refresh(context.Background())
		for _, c := range []enforce.Call{agent("leaked", "s"), user("anyone", "s")} {
			d, err := f.E.Check(context.Background(), c)
			if err == nil {
				t.Errorf("closed=%v: no error reported with no usable snapshot", closed)
			}
			want := enforce.ReasonFailOpen
			if closed {
				want = enforce.ReasonFailClosed
			}
			if d.Allowed == closed || d.Reason != want {
				t.Errorf("closed=%v: %+v, want %s", closed, d, want)
			}
		}
		if _, err := f.Store.Pool().Exec(context.Background(), `alter table rl_memberships_gone rename to rl_memberships`); err != nil {
			t.Fatal(err)
		}
		f.Refresh()
		if d := f.Check(agent("leaked", "s")); d.Allowed || d.Reason != enforce.ReasonQuarantined {
			t.Errorf("closed=%v: after recovery: %+v, want quarantined again", closed, d)
		}
	}
}

// TestOddTargetNamesDoNotBypassTheCaller: a target name no definition can
// carry (too long, control characters) still meets the caller's quarantine
// and limits.
func TestOddTargetNamesDoNotBypassTheCaller(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(2), nil))
	f.Member("user", "limited", "g")
	f.Member("user", "mallory", "quarantine-callers")
	long := "srv/" + strings.Repeat("a", 300)
	for _, name := range []string{long, "srv/\x01/x"} {
		if d := f.Check(user("mallory", name)); d.Reason != enforce.ReasonQuarantined {
			t.Errorf("quarantined caller on target %q: %+v", name[:8], d)
		}
	}
	if got := f.Burst(user("limited", long), 5); got != 2 {
		t.Errorf("caller limit of 2 on an odd target name allowed %d", got)
	}
}
