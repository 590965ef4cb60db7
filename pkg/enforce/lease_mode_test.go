package enforce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Two tool definitions whose principal_tool buckets are one (the same
// caller, tool, window and algorithm: github:delete_repo matches both
// globs) share a gate, as caller definitions share a caller's bucket: never
// on either wins over always, always over auto (enforcetest.TestLeases
// checks the caller buckets over every store).
func TestLeaseModeOfASharedToolBucket(t *testing.T) {
	t.Parallel()
	call := toolCall("alice", "delete_repo", "")
	cases := []struct {
		name         string
		globs, deles string // lease of github:* and of *:delete_*
		all          bool   // LeaseOptions.All; otherwise hot keys only, never reached
		leased       bool
	}{
		{"never over always, every key leased", ratelimit.LeaseAlways, ratelimit.LeaseNever, true, false},
		{"never over auto, every key leased", "", ratelimit.LeaseNever, true, false},
		{"always over auto, hot keys only", ratelimit.LeaseAlways, "", false, true},
		{"auto, hot keys only", "", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wide := toolDef("github:*", 3600, 2000, ratelimit.ToolScopePrincipalTool)
			wide.Lease = tc.globs
			narrow := toolDef("*:delete_*", 3600, 1000, ratelimit.ToolScopePrincipalTool)
			narrow.Lease = tc.deles
			f := newMemFixtureOpts(t, enforce.Options{Leases: &enforce.LeaseOptions{All: tc.all, HotRate: 1000, Time: time.Hour}}, wide, narrow)
			var takes int
			for range 5 {
				d := f.check(call)
				if !d.Allowed || len(d.Gates) != 1 || d.Gates[0].DefinitionID != "target:mcp_tool:*:delete_*:3600" {
					t.Fatalf("call: %+v, want allowed by one gate, *:delete_*'s (the lower limit)", d)
				}
				if g := f.rec.gates(); len(g) == 1 && strings.Contains(g[0].Key, "alice") {
					takes++
				}
				f.rec.mu.Lock()
				f.rec.last = nil
				f.rec.mu.Unlock()
			}
			st := f.e.LeaseStats()
			if tc.leased && (st.Leases != 1 || st.Refills != 1 || takes != 1) {
				t.Fatalf("5 calls: %+v and %d takes of the gate from the store, want it leased on the first call (1 lease, 1 block, 1 take)", st, takes)
			}
			if !tc.leased && (st.Leases != 0 || st.Refills != 0 || takes != 5) {
				t.Fatalf("5 calls: %+v and %d takes of the gate from the store, want no lease and 5 takes", st, takes)
			}
		})
	}
}

// Leases apply to descriptor definitions (Envoy's protocol decides through
// the same gates), so their lease does too: with every key leased, a
// descriptor definition with lease never is not leased, an auto one is.
func TestLeaseModeOfADescriptorDefinition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lease  string
		leased bool
	}{{ratelimit.LeaseNever, false}, {ratelimit.LeaseAuto, true}} {
		t.Run("lease "+tc.lease, func(t *testing.T) {
			t.Parallel()
			d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 3600,
				MaxRequests: ptr(1000), Enabled: true, Lease: tc.lease}
			d.Domain, d.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: "tenant", Value: "acme"}}
			d.Name = ratelimit.DescriptorName(d.Domain, d.Descriptor)
			f := newMemFixtureOpts(t, enforce.Options{Leases: &enforce.LeaseOptions{All: true, Time: time.Hour}}, d)
			call := enforce.Call{Username: "alice", Descriptors: &enforce.DescriptorRequest{Domain: "edge",
				Descriptors: []enforce.Descriptor{{Entries: d.Descriptor}}}}
			for range 3 {
				if got := f.check(call); !got.Allowed || len(got.Gates) != 1 || got.Gates[0].DefinitionID != d.Key() {
					t.Fatalf("call: %+v, want allowed by the descriptor definition's gate", got)
				}
			}
			if st := f.e.LeaseStats(); (st.Leases == 1 && st.Refills == 1) != tc.leased || (!tc.leased && st.Refills != 0) {
				t.Fatalf("3 calls on a descriptor definition with lease %q: %+v, want leased %v", tc.lease, st, tc.leased)
			}
		})
	}
}
