package escalation_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The lockout on a controllable clock: 5 violations within 5
// minutes lock the caller for 15 minutes, answered locked-out with
// Retry-After and the remaining time; it ends exactly on time. Violations
// spread wider than the window do not add up.
func TestEscalationLockoutSeed004(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lockouts []enforce.Lockout
	f := newFixture(t, escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute},
		escalation.Opts{OnLockout: func(l enforce.Lockout) { mu.Lock(); lockouts = append(lockouts, l); mu.Unlock() }})
	f.Def(callerGroup("hourly", 3600, ptr(1), nil))
	f.Member("user", "alice", "hourly")
	f.Member("user", "carol", "hourly")
	alice := user("alice", "mcpgw")

	if d := f.Check(alice); !d.Allowed {
		t.Fatalf("first call: %+v", d)
	}
	for i := 1; i <= 4; i++ {
		if d := f.Check(alice); d.Reason != enforce.ReasonThrottled {
			t.Fatalf("violation %d: %s, want throttled", i, d.Reason)
		}
		f.Clock.Advance(time.Minute)
	}
	d := f.Check(alice)
	if d.Reason != enforce.ReasonLockedOut || d.RetryAfter != 15*time.Minute || d.LockoutRemaining != 15*time.Minute {
		t.Fatalf("5th violation within 5 minutes: %+v, want locked-out for 15m", d)
	}
	mu.Lock()
	if len(lockouts) != 1 || lockouts[0].Subject != "alice" || lockouts[0].Count != 5 || lockouts[0].Definition != "caller:group:hourly:3600" ||
		!strings.HasPrefix(lockouts[0].Reason, enforce.LockoutReasonPrefix) {
		t.Errorf("lockouts reported: %+v", lockouts)
	}
	mu.Unlock()
	f.Refresh()
	f.Clock.Advance(15*time.Minute - time.Second)
	if d := f.Check(alice); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != time.Second {
		t.Fatalf("1 s before the end: %+v, want locked-out for 1s more", d)
	}
	f.Clock.Advance(time.Second)
	if d := f.Check(alice); d.Reason != enforce.ReasonThrottled {
		t.Fatalf("at the end: %+v, want throttled again (the hour's limit is used), not locked out", d)
	}

	// carol's violations are 9 minutes apart: no lockout.
	f.Check(user("carol", "mcpgw"))
	for range 4 {
		f.Check(user("carol", "mcpgw"))
	}
	f.Clock.Advance(9 * time.Minute)
	if d := f.Check(user("carol", "mcpgw")); d.Reason != enforce.ReasonThrottled {
		t.Fatalf("violations spread over 9 minutes: %+v, want throttled", d)
	}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    escalation.Policy
		want string
	}{
		{escalation.Policy{After: 0, Within: time.Minute, Lockout: time.Minute}, "after:"},
		{escalation.Policy{After: 5, Within: -time.Minute, Lockout: time.Minute}, "within:"},
		{escalation.Policy{After: 5, Within: time.Minute, Lockout: -time.Minute}, "lockout:"},
		{escalation.Policy{After: 5, Within: 1500 * time.Millisecond, Lockout: time.Minute}, "within:"},
	} {
		if err := c.o.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v.Check() = %v, want an error naming %s", c.o, err, c.want)
		}
	}
}

// An anonymous caller keyed by its address is escalation-locked too: its
// lockout is a quarantine of its network subject (the /32 of an IPv4
// address, the /64 of an IPv6 one), with an expiry, stored as the other
// lockouts are. It refuses the address's anonymous calls only (a user
// calling from it is not locked out; a second address of the same /64
// is); it never hides the groups of the operator's wider network holding
// the address, so once it ends the caller is limited as before.
func TestEscalationLockoutAnonymousIP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lockouts []enforce.Lockout
	f := newFixture(t, escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute},
		escalation.Opts{OnLockout: func(l enforce.Lockout) { mu.Lock(); lockouts = append(lockouts, l); mu.Unlock() }})
	f.Def(callerGroup("anon", 3600, ptr(1), nil))
	f.Member(ratelimit.SubjectNetwork, "198.51.100.0/24", "anon")
	f.Member(ratelimit.SubjectNetwork, "2001:db8::/32", "anon")
	f.Member(ratelimit.SubjectUser, "alice", "anon")

	lockOut := func(c enforce.Call) {
		t.Helper()
		if d := f.Check(c); !d.Allowed {
			t.Fatalf("first call of %s: %+v", c.ClientIP, d)
		}
		for i := 1; i <= 4; i++ {
			if d := f.Check(c); d.Reason != enforce.ReasonThrottled {
				t.Fatalf("%s violation %d: %+v, want throttled", c.ClientIP, i, d)
			}
		}
		if d := f.Check(c); d.Reason != enforce.ReasonLockedOut || d.RetryAfter != 15*time.Minute || d.LockoutRemaining != 15*time.Minute {
			t.Fatalf("%s 5th violation: %+v, want locked-out for 15m", c.ClientIP, d)
		}
	}
	v4 := anonymous("198.51.100.7")
	lockOut(v4)
	lockOut(anonymous("2001:db8:1:1::1"))
	mu.Lock()
	if len(lockouts) != 2 || lockouts[0].SubjectType != ratelimit.SubjectNetwork || lockouts[0].Subject != "198.51.100.7/32" ||
		lockouts[1].Subject != "2001:db8:1:1::/64" || lockouts[0].Definition != "caller:group:anon:3600" ||
		!strings.HasPrefix(lockouts[0].Reason, enforce.LockoutReasonPrefix) {
		t.Errorf("lockouts reported: %+v", lockouts)
	}
	mu.Unlock()
	m, err := f.Store.GetMembership(t.Context(), ratelimit.SubjectNetwork, "198.51.100.7/32")
	if err != nil || m.QuarantineExpiresAt == nil || !m.QuarantineExpiresAt.Equal(f.Clock.Now().Add(15*time.Minute)) ||
		!strings.HasPrefix(m.QuarantineReason, enforce.LockoutReasonPrefix) {
		t.Fatalf("stored lockout: %+v, %v; want network 198.51.100.7/32 quarantined for 15m", m, err)
	}

	f.Refresh()
	for _, c := range []enforce.Call{v4, anonymous("::ffff:198.51.100.7"), anonymous("2001:db8:1:1::1"), anonymous("2001:db8:1:1::2")} {
		if d := f.Check(c); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != 15*time.Minute {
			t.Errorf("%s after the lockout: %+v, want locked-out", c.ClientIP, d)
		}
	}
	// Another address of the /24 has its own bucket; a user calling from
	// the locked address is not the anonymous caller.
	if d := f.Check(anonymous("198.51.100.8")); !d.Allowed {
		t.Errorf("another address: %+v, want allowed", d)
	}
	alice := user("alice", "srv")
	alice.ClientIP = "198.51.100.7"
	if d := f.Check(alice); !d.Allowed {
		t.Errorf("alice from the locked address: %+v, want allowed", d)
	}

	f.Clock.Advance(15 * time.Minute)
	f.Refresh()
	// Ended on time; the /24's limit applies again (its hour is used up):
	// the expired lockout does not hide it.
	if d := f.Check(v4); d.Reason != enforce.ReasonThrottled {
		t.Errorf("after the lockout: %+v, want throttled by the /24's group", d)
	}
}

// Another caller's traffic cannot lock a caller out: a target's own limit,
// which every caller shares, throttles a victim without counting toward its
// lockout, however often. A definition can opt in (a target limit that
// counts) or out (a caller limit that does not).
func TestEscalationCountsOnlyTheCallersOwnLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}, escalation.Opts{})
	strict := target("mcp_server", "strict", 3600, 1)
	strict.CountsTowardLockout = ptr(true)
	lenient := callerGroup("lenient", 3600, ptr(1), nil)
	lenient.CountsTowardLockout = ptr(false)
	f.Def(target("mcp_server", "shared1", 3600, 10), strict, lenient)
	f.Member("user", "carol", "lenient")

	for range 10 {
		f.Check(user("attacker", "shared1"))
	}
	for i := range 6 {
		if d := f.Check(user("victim", "shared1")); d.Reason != enforce.ReasonThrottled {
			t.Fatalf("victim's call %d to the used-up target: %s, want throttled (not locked out)", i+1, d.Reason)
		}
	}
	if d := f.Check(user("victim", "mcpgw")); !d.Allowed {
		t.Errorf("the victim on an unrelated server: %+v, want allowed (another caller's traffic must not lock it out)", d)
	}

	// Opted in: the 5th throttle by the strict target locks bob out.
	f.Check(user("bob", "strict"))
	var d enforce.Decision
	for range 5 {
		d = f.Check(user("bob", "strict"))
	}
	if d.Reason != enforce.ReasonLockedOut {
		t.Errorf("5 throttles by a target that counts toward lockouts: %s, want locked-out", d.Reason)
	}
	// Opted out: carol's own caller limit throttles her, never locks her out.
	f.Check(user("carol", "mcpgw"))
	for range 6 {
		d = f.Check(user("carol", "mcpgw"))
	}
	if d.Reason != enforce.ReasonThrottled {
		t.Errorf("6 throttles by a caller limit that does not count: %s, want throttled", d.Reason)
	}
	if d := f.Check(user("carol", "other")); d.Reason != enforce.ReasonThrottled {
		t.Errorf("carol elsewhere: %s, want throttled by her own limit, not locked out", d.Reason)
	}
}

// The replica that locks a caller out refuses the caller's very next call,
// before its own change notice brings the lockout into its snapshot: with
// ten callers locked out in turn, none gets a call through to an unlimited
// server right after its lockout.
func TestEscalationLockoutRefusesTheNextCallAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, escalation.Policy{After: 2, Within: 5 * time.Minute, Lockout: 15 * time.Minute}, escalation.Opts{})
	// Per caller and target: the lockout is all that stops the call to
	// another server.
	perTarget := callerGroup("hourly", 3600, ptr(1), nil)
	perTarget.Axis = ratelimit.AxisCallerTarget
	f.Def(perTarget)
	for i := range 10 {
		name := "u" + strings.Repeat("x", i)
		f.Member("user", name, "hourly")
		f.Check(user(name, "mcpgw"))
		f.Check(user(name, "mcpgw"))
		if d := f.Check(user(name, "mcpgw")); d.Reason != enforce.ReasonLockedOut {
			t.Fatalf("%s's 2nd violation: %s, want locked-out", name, d.Reason)
		}
		if d := f.Check(user(name, "unlimited")); d.Allowed || d.Reason != enforce.ReasonLockedOut {
			t.Errorf("%s's next call, to a server without limits: allowed %v, reason %s; want locked-out at once", name, d.Allowed, d.Reason)
		}
	}
}

// What ratelimit.Definition.Lockout says (rlctl's LOCKOUT column) is what
// the Enforcer does: with one violation enough, a definition whose
// throttles count locks its caller out at the first throttle, one whose
// throttles do not never does.
func TestDefinitionLockoutMatchesTheEnforcer(t *testing.T) {
	t.Parallel()
	perIP := callerGroup("everyone-ip", 3600, ptr(1), nil)
	perIP.Everyone, perIP.Per = true, ratelimit.PerIP
	perTeam := callerGroup("teams", 3600, ptr(1), nil)
	perTeam.Everyone, perTeam.Per = true, ratelimit.PerTeam
	shared := callerGroup("shared", 3600, ptr(1), nil)
	shared.Everyone, shared.Per = true, ratelimit.PerShared
	mine := callerGroup("mine", 3600, ptr(1), nil)
	mine.Everyone = true
	optedOut := callerGroup("mine-off", 3600, ptr(1), nil)
	optedOut.Everyone, optedOut.CountsTowardLockout = true, ptr(false)
	for _, c := range []struct {
		def  ratelimit.Definition
		call enforce.Call
	}{
		{mine, user("alice", "mcpgw")},
		{optedOut, user("alice", "mcpgw")},
		{perIP, enforce.Call{ClientIP: "203.0.113.9", TargetType: "mcp_server", TargetName: "mcpgw"}},
		// A user behind the address shares its bucket with everyone there.
		{perIP, enforce.Call{Username: "alice", ClientIP: "203.0.113.9", TargetType: "mcp_server", TargetName: "mcpgw"}},
		{perTeam, enforce.Call{Username: "alice", Team: "acme", TargetType: "mcp_server", TargetName: "mcpgw"}},
		{shared, user("alice", "mcpgw")},
		{target("mcp_server", "mcpgw", 3600, 1), user("alice", "mcpgw")},
		{toolDef("github:*", 3600, 1, ratelimit.ToolScopeGlobal), toolCall("alice", "search")},
		{toolDef("github:*", 3600, 1, ratelimit.ToolScopePrincipalTool), toolCall("alice", "search")},
	} {
		t.Run(c.def.Key()+"/"+c.call.Username, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, escalation.Policy{After: 1, Within: 5 * time.Minute, Lockout: 15 * time.Minute}, escalation.Opts{})
			f.Def(c.def)
			f.Check(c.call)
			d := f.Check(c.call)
			want := enforce.ReasonThrottled
			anonymous := c.call.Username == "" && c.call.ClientID == ""
			if l := c.def.Lockout(); l == ratelimit.LockoutCounts || (l == ratelimit.LockoutAnonymous && anonymous) {
				want = enforce.ReasonLockedOut
			}
			if d.Reason != want {
				t.Errorf("Lockout() says %q; the throttle was answered %s, want %s", c.def.Lockout(), d.Reason, want)
			}
		})
	}
}

// Escalation lockouts do not hang on the callers' quarantine sentinel:
// with quarantine-callers disabled (an operator's manual quarantines
// switched off), a caller's lockout, named and anonymous, still refuses it,
// while a manual caller quarantine no longer does.
func TestEscalationLockoutIndependentOfCallerSentinel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, escalation.Policy{After: 2, Within: 5 * time.Minute, Lockout: 15 * time.Minute}, escalation.Opts{})
	f.Def(callerGroup("hourly", 3600, ptr(1), nil))
	f.Member(ratelimit.SubjectUser, "alice", "hourly")
	f.Member(ratelimit.SubjectNetwork, "198.51.100.0/24", "hourly")
	f.Member(ratelimit.SubjectUser, "mallory", ratelimit.GroupQuarantineCallers)
	alice, anon := user("alice", "srv"), anonymous("198.51.100.7")
	for _, c := range []enforce.Call{alice, anon} {
		f.Check(c) // allowed: the hour's one call
		f.Check(c) // throttled: the first violation
		if d := f.Check(c); d.Reason != enforce.ReasonLockedOut {
			t.Fatalf("%+v 2nd violation: %+v, want locked-out", c, d)
		}
	}
	if _, err := f.Store.Pool().Exec(t.Context(), `update rl_definitions set enabled = false where id = $1`, ratelimit.SentinelCallers); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	for _, c := range []enforce.Call{alice, anon} {
		if d := f.Check(c); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != 15*time.Minute {
			t.Errorf("%+v with the callers' sentinel off: %+v, want still locked-out for 15m", c, d)
		}
	}
	if d := f.Check(user("mallory", "srv")); !d.Allowed {
		t.Errorf("manual caller quarantine with the sentinel off: %+v, want allowed", d)
	}
}
