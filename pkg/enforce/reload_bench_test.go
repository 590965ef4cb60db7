package enforce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// BenchmarkReload measures one snapshot reload over 10,000 definitions and
// 100,000 memberships: whole (as at start and every CacheTTL, and as every
// change cost before reloads read only the changed rows), and after a
// change to one membership or one definition (the rows read by id, the
// snapshot copied where it changed).
//
//	go test ./pkg/enforce -run '^$' -bench BenchmarkReload -benchmem
func BenchmarkReload(b *testing.B) {
	st := pgtest.NewStore(b)
	ctx := context.Background()
	now := time.Now()
	defs := make([]ratelimit.Definition, 10_000)
	for i := range defs {
		d := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: fmt.Sprintf("team-%05d", i), WindowSeconds: 3600,
			UserMaxRequests: ptr(1000), Enabled: true}
		if i%2 == 1 {
			d = ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: fmt.Sprintf("server-%05d", i),
				WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true}
		}
		d.CreatedAt, d.UpdatedAt, d.UpdatedBy, d.Version = &now, &now, "bench", 1
		defs[i] = d
	}
	ms := make([]ratelimit.Membership, 100_000)
	for i := range ms {
		ms[i] = ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("user-%06d@example.com", i),
			Groups: []string{fmt.Sprintf("team-%05d", 2*(i%5000))}, CreatedAt: &now, UpdatedAt: &now, Version: 1}
	}
	if err := st.InTx(ctx, func(q *store.Queries) error {
		if err := q.InsertDefinitions(ctx, defs); err != nil {
			return err
		}
		return q.InsertMemberships(ctx, ms)
	}); err != nil {
		b.Fatal(err)
	}
	src := postgres.NewSource(st.Pool())
	whole, err := enforce.LoadSnapshot(ctx, src, now)
	if err != nil {
		b.Fatal(err)
	}
	one := func(table, id string) *enforce.Change {
		return &enforce.Change{Table: table, IDs: []string{id}}
	}
	for _, c := range []struct {
		name string
		ch   *enforce.Change
	}{
		{"whole", nil},
		{"one-membership", one(enforce.TableMemberships, ms[4242].Key())},
		{"one-definition", one(enforce.TableDefinitions, defs[4242].Key())},
		{"one-admin", one(enforce.TableAdmins, "user:root")},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				var err error
				if n, err = enforce.ReloadAfter(ctx, src, whole, c.ch, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rows/reload")
		})
	}
}
