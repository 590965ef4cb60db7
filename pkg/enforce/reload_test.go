package enforce_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestListenerReconnectReloadsEverything: notifications sent while the
// change listener is disconnected are lost, so after it reconnects the
// Enforcer reloads everything, and a change written right after the
// connection dropped is enforced.
func TestListenerReconnectReloadsEverything(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{CacheTTL: time.Hour})
	ctx := context.Background()
	hang := time.Now().Add(30 * time.Second)
	// New's load, then the listener's once it is connected.
	for f.E.ReloadStats().Full < 2 {
		if time.Now().After(hang) {
			t.Fatal("the listener never connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := f.E.ReloadStats()
	var killed int
	if err := f.Store.Pool().QueryRow(ctx, `select count(pg_terminate_backend(pid)) from pg_stat_activity
		where datname = current_database() and query = 'listen `+store.ChangeChannel+`'`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening connections, want 1", killed)
	}
	if err := f.Store.InTx(ctx, func(q *store.Queries) error {
		_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "mallory",
			Groups: []string{ratelimit.GroupQuarantineCallers}}, store.Write{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for {
		d, _ := f.E.Peek(ctx, user("mallory", "s"))
		if d.Reason == enforce.ReasonQuarantined && f.E.ReloadStats().Full > before.Full {
			break
		}
		if time.Now().After(hang) {
			t.Fatalf("after the listener's connection dropped: decision %+v, reloads %+v (before %+v)", d, f.E.ReloadStats(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
