package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeLeases: with RLAPI_LEASE_TIME and RLAPI_LEASE_KEYS=all, POST
// /api/check decides from leased blocks and still admits exactly the
// limit (one replica: nobody else holds a block), and the start-up log
// says leases are on.
func TestServeLeases(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	limit := 100
	srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "hot", WindowSeconds: 3600,
		MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce}, map[string]string{"RLAPI_LEASE_TIME": "30m", "RLAPI_LEASE_KEYS": "all"})
	allowed := 0
	for range 120 {
		if _, m := srv.do(t, "POST", "/api/check", `{"username": "alice", "target_type": "mcp_server", "target_name": "hot"}`); m["allowed"] == true {
			allowed++
		}
	}
	if allowed != limit {
		t.Errorf("admitted %d of 120 calls on a limit of %d with leases on: want exactly the limit", allowed, limit)
	}
	srv.stop()
	if !strings.Contains(srv.stderr.String(), "leases for hot keys on") {
		t.Errorf("the start-up log does not say leases are on:\n%s", srv.stderr.String())
	}
}

// TestServeRefusesBadLeaseFlags: a lease setting rlapi cannot use is a
// usage error naming the flag and its variable.
func TestServeRefusesBadLeaseFlags(t *testing.T) {
	t.Parallel()
	for k, v := range map[string]string{"RLAPI_LEASE_TIME": "-1s", "RLAPI_LEASE_REPLICAS": "0",
		"RLAPI_LEASE_HOT_RATE": "0", "RLAPI_LEASE_KEYS": "some"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve"}, env(map[string]string{k: v}), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), k) {
			t.Errorf("%s=%s: exit %d, %q; want a usage error naming %s", k, v, code, errOut.String(), k)
		}
	}
}

// TestServeLeaseNeverAndAlways: with every key leased (RLAPI_LEASE_KEYS
// all), a definition with lease never is counted call by call on the
// shared counter while an auto one takes a block; with hot keys only and
// a hot rate no test reaches, a definition with lease always takes a block
// on its first call.
func TestServeLeaseNeverAndAlways(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keys  string
		lease string
		want  int64 // the shared counter after 5 calls
	}{
		{"all", ratelimit.LeaseNever, 5},
		{"all", ratelimit.LeaseAuto, 50}, // a block: 100 × 30 min / 1 h, at most 100 / 2
		{"hot", ratelimit.LeaseAlways, 50},
		{"hot", ratelimit.LeaseAuto, 5},
	} {
		t.Run(tc.keys+" "+tc.lease, func(t *testing.T) {
			t.Parallel()
			dsn := pgtest.NewMigratedDatabase(t)
			ctx := context.Background()
			limit := 100
			srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "billing", WindowSeconds: 3600,
				MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Lease: tc.lease},
				// A backend timeout no loaded test machine reaches: a call
				// the fail-open policy admitted would count nothing.
				map[string]string{"RLAPI_LEASE_TIME": "30m", "RLAPI_LEASE_KEYS": tc.keys, "RLAPI_LEASE_HOT_RATE": "1000000",
					"RLAPI_BACKEND_TIMEOUT": "1m"})
			for i := range 5 {
				if _, m := srv.do(t, "POST", "/api/check", `{"username": "alice", "target_type": "mcp_server", "target_name": "billing"}`); m["allowed"] != true || m["reason"] != "allowed" {
					t.Fatalf("call %d: %v, want allowed by the limit (not fail-open)", i+1, m)
				}
			}
			var count int64
			if err := srv.st.Pool().QueryRow(ctx, `select coalesce(sum(count), 0) from rl_counters where key like '%billing%'`).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if count != tc.want {
				t.Errorf("after 5 calls the shared counter holds %d, want %d", count, tc.want)
			}
		})
	}
}
