package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ownRound marks the sweep rounds a test runs itself (the replicas'
// background rounds pass the hook by).
type ownRound struct{}

// The events sweeper and the expired-lockout sweep run one replica at a
// time: while replica a runs a round (its hook, under the round's lock),
// replica b's round of the same sweep does not run and deletes nothing,
// and a's round then deletes every row due, once. The rows are written
// inside a's round, so no background round can take them first.
func TestSweepRoundsOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	a := apitest.Start(t, api.Config{})
	b := apitest.StartReplica(t, a, api.Config{})
	ctx := context.WithValue(t.Context(), ownRound{}, true)
	now := time.Now().UTC()
	old := now.Add(-8 * 24 * time.Hour).Truncate(time.Minute)
	const oldRows = 7
	countEvents := func() int {
		t.Helper()
		evs, err := a.Store.ListEvents(t.Context(), store.EventFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	lockout := func(subjectType, subject string, expired time.Duration, groups ...string) ratelimit.Membership {
		until, at := now.Add(-expired), now.Add(-expired-15*time.Minute)
		return ratelimit.Membership{SubjectType: subjectType, Subject: subject, Groups: append(groups, ratelimit.GroupQuarantineCallers),
			QuarantineReason: "lockout: 5 violations of caller:group:anon:60 within 5m0s; locked out for 15m0s",
			QuarantinedAt:    &at, QuarantineExpiresAt: &until}
	}

	var inner []api.SweepResult
	a.Server.OnSweepLocked(func(rctx context.Context, lock string) {
		if rctx.Value(ownRound{}) == nil {
			return
		}
		switch lock {
		case store.EventsSweepLock:
			var evs []ratelimit.Event
			for i := range oldRows {
				m := old.Add(time.Duration(i) * time.Minute)
				evs = append(evs, ratelimit.Event{Minute: m, Kind: ratelimit.EventRateLimitExceeded, Severity: "warn",
					Subject: "user:old", Count: 1, FirstSeen: m, LastSeen: m})
			}
			if err := a.Store.UpsertEvents(rctx, evs); err != nil {
				t.Error(err)
				return
			}
			r := b.Server.SweepEvents(ctx)
			inner = append(inner, r)
			if n := countEvents(); n != oldRows {
				t.Errorf("after b's events round inside a's: %d rows, want %d", n, oldRows)
			}
		case store.LockoutsSweepLock:
			err := a.Store.InTx(rctx, func(q *store.Queries) error {
				for _, m := range []ratelimit.Membership{
					lockout("network", "203.0.113.7/32", 48*time.Hour),  // due
					lockout("network", "2001:db8:9::/64", 25*time.Hour), // due
					lockout("user", "carol", 48*time.Hour),              // due: nothing else held
					lockout("user", "dave", 48*time.Hour, "hourly"),     // kept: has a group
					lockout("network", "203.0.113.8/32", time.Hour),     // kept: ended an hour ago
				} {
					if _, err := q.PutMembership(rctx, m, store.Write{}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			inner = append(inner, b.Server.SweepLockouts(ctx))
		}
	})
	// A replica's own first rounds, as it starts, may hold a lock yet:
	// run a's round until it gets it (the deadline only bounds a hang).
	until := func(round func(context.Context) api.SweepResult) api.SweepResult {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if r := round(ctx); r.Ran || time.Now().After(deadline) {
				return r
			}
		}
	}
	ev := until(a.Server.SweepEvents)
	lo := until(a.Server.SweepLockouts)
	a.Server.OnSweepLocked(nil)

	if len(inner) != 2 || inner[0].Ran || inner[0].Removed != 0 || inner[1].Ran || inner[1].Removed != 0 {
		t.Errorf("b's rounds inside a's: %+v, want two that did not run and removed nothing", inner)
	}
	if !ev.Ran || ev.Removed != oldRows || countEvents() != 0 {
		t.Errorf("a's events round: %+v, %d rows left; want it ran and removed %d", ev, countEvents(), oldRows)
	}
	if !lo.Ran || lo.Removed != 3 {
		t.Errorf("a's lockouts round: %+v, want it ran and removed 3", lo)
	}
	var left []string
	err := a.Store.EachMembership(t.Context(), store.MembershipFilter{}, func(m ratelimit.Membership) error {
		left = append(left, m.Key())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != "network:203.0.113.8/32" || left[1] != "user:dave" {
		t.Errorf("memberships left: %v, want network:203.0.113.8/32 and user:dave", left)
	}
	audit, err := clientFor(t, a, a.AdminToken).ListAudit(t.Context(), client.AuditFilter{Actor: store.LockoutActor})
	if err != nil || len(audit.Entries) != 3 || audit.Entries[0].Action != "lockout-expired" {
		t.Errorf("audit: %+v, %v; want three lockout-expired entries", audit.Entries, err)
	}
	// Once a's round is over, b's runs.
	if r := until(b.Server.SweepEvents); !r.Ran || r.Removed != 0 {
		t.Errorf("b's events round afterwards: %+v, want it ran (nothing left to remove)", r)
	}
}
