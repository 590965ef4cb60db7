package enforce_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// Reference 004's lockout on a controllable clock: 5 violations within 5
// minutes lock the caller for 15 minutes, answered locked-out with
// Retry-After and the remaining time; it ends exactly on time. Violations
// spread wider than the window do not add up.
func TestEscalationLockoutSeed004(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lockouts []enforce.Lockout
	f := newFixture(t, enforce.Options{Escalation: &enforce.EscalationOptions{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute},
		OnLockout: func(l enforce.Lockout) { mu.Lock(); lockouts = append(lockouts, l); mu.Unlock() }})
	f.def(callerGroup("hourly", 3600, ptr(1), nil))
	f.member("user", "alice", "hourly")
	f.member("user", "carol", "hourly")
	alice := user("alice", "mcpgw")

	if d := f.check(alice); !d.Allowed {
		t.Fatalf("first call: %+v", d)
	}
	for i := 1; i <= 4; i++ {
		if d := f.check(alice); d.Reason != enforce.ReasonThrottled {
			t.Fatalf("violation %d: %s, want throttled", i, d.Reason)
		}
		f.clock.Advance(time.Minute)
	}
	d := f.check(alice)
	if d.Reason != enforce.ReasonLockedOut || d.RetryAfter != 15*time.Minute || d.LockoutRemaining != 15*time.Minute {
		t.Fatalf("5th violation within 5 minutes: %+v, want locked-out for 15m", d)
	}
	mu.Lock()
	if len(lockouts) != 1 || lockouts[0].Subject != "alice" || lockouts[0].Count != 5 || lockouts[0].Definition != "caller:group:hourly:3600" ||
		!strings.HasPrefix(lockouts[0].Reason, enforce.LockoutReasonPrefix) {
		t.Errorf("lockouts reported: %+v", lockouts)
	}
	mu.Unlock()
	f.refresh()
	f.clock.Advance(15*time.Minute - time.Second)
	if d := f.check(alice); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != time.Second {
		t.Fatalf("1 s before the end: %+v, want locked-out for 1s more", d)
	}
	f.clock.Advance(time.Second)
	if d := f.check(alice); d.Reason != enforce.ReasonThrottled {
		t.Fatalf("at the end: %+v, want throttled again (the hour's limit is used), not locked out", d)
	}

	// carol's violations are 9 minutes apart: no lockout.
	f.check(user("carol", "mcpgw"))
	for range 4 {
		f.check(user("carol", "mcpgw"))
	}
	f.clock.Advance(9 * time.Minute)
	if d := f.check(user("carol", "mcpgw")); d.Reason != enforce.ReasonThrottled {
		t.Fatalf("violations spread over 9 minutes: %+v, want throttled", d)
	}
}

func TestCheckEscalation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    enforce.EscalationOptions
		want string
	}{
		{enforce.EscalationOptions{After: 0, Within: time.Minute, Lockout: time.Minute}, "after:"},
		{enforce.EscalationOptions{After: 5, Within: -time.Minute, Lockout: time.Minute}, "within:"},
		{enforce.EscalationOptions{After: 5, Within: time.Minute, Lockout: -time.Minute}, "lockout:"},
		{enforce.EscalationOptions{After: 5, Within: 1500 * time.Millisecond, Lockout: time.Minute}, "within:"},
	} {
		if err := enforce.CheckEscalation(c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("CheckEscalation(%+v) = %v, want an error naming %s", c.o, err, c.want)
		}
	}
}
