package enforce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// newLeasedFixture is a memory fixture whose Enforcer counts through a
// lease layer (opts) over the fixture's recorder, on its clock; the layer
// closes after the Enforcer when the test ends.
func newLeasedFixture(t *testing.T, opts lease.Options, defs ...ratelimit.Definition) (*memFixture, *lease.Store) {
	t.Helper()
	var layer *lease.Store
	f := newMemFixtureOver(t, enforce.Options{}, func(inner enforce.CounterStore) enforce.CounterStore {
		var err error
		if layer, err = lease.New(inner, opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(layer.Close)
		return layer
	}, defs...)
	return f, layer
}

// The gate builder tells a store layer each gate's lease mode
// (CounterGate.Lease), the greatest of a shared bucket's definitions.
func TestGatesCarryTheirLeaseMode(t *testing.T) {
	t.Parallel()
	low := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "low",
		WindowSeconds: 3600, UserMaxRequests: ptr(1000), Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true, Lease: ratelimit.LeaseAlways}
	high := low
	high.Name, high.UserMaxRequests, high.Lease = "high", ptr(2000), ratelimit.LeaseNever
	tgt := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "srv",
		WindowSeconds: 3600, MaxRequests: ptr(1000), Enabled: true, Mode: ratelimit.ModeEnforce, Lease: ratelimit.LeaseAlways}
	f := newMemFixtureOpts(t, enforce.Options{}, low, high, tgt)
	if d := f.Check(enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "srv"}); !d.Allowed {
		t.Fatalf("call: %+v", d)
	}
	got := map[string]enforce.LeaseMode{}
	for _, g := range f.rec.gates() {
		got[g.Key] = g.Lease
	}
	if len(got) != 2 {
		t.Fatalf("the store was given %d gates, want 2 (the shared caller bucket and the target): %+v", len(got), got)
	}
	for key, mode := range got {
		want := enforce.LeaseNever // never wins over always on the shared bucket
		if strings.Contains(key, "srv") && !strings.Contains(key, "alice") {
			want = enforce.LeaseAlways
		}
		if mode != want {
			t.Errorf("gate %s carries lease mode %d, want %d", key, mode, want)
		}
	}
}

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
		all          bool   // lease.Options.All; otherwise hot keys only, never reached
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
			f, layer := newLeasedFixture(t, lease.Options{All: tc.all, HotRate: 1000, Time: time.Hour}, wide, narrow)
			var takes int
			for range 5 {
				d := f.Check(call)
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
			st := layer.Stats()
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
			f, layer := newLeasedFixture(t, lease.Options{All: true, Time: time.Hour}, d)
			call := enforce.Call{Username: "alice", Descriptors: &enforce.DescriptorRequest{Domain: "edge",
				Descriptors: []enforce.Descriptor{{Entries: d.Descriptor}}}}
			for range 3 {
				if got := f.Check(call); !got.Allowed || len(got.Gates) != 1 || got.Gates[0].DefinitionID != d.Key() {
					t.Fatalf("call: %+v, want allowed by the descriptor definition's gate", got)
				}
			}
			if st := layer.Stats(); (st.Leases == 1 && st.Refills == 1) != tc.leased || (!tc.leased && st.Refills != 0) {
				t.Fatalf("3 calls on a descriptor definition with lease %q: %+v, want leased %v", tc.lease, st, tc.leased)
			}
		})
	}
}
