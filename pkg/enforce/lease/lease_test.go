package lease_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// noGiveBack is the in-memory store declaring it cannot give back, as a
// store of a gateway's own may.
type noGiveBack struct{ *memory.Store }

func (noGiveBack) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{Reset: true}
}

func (noGiveBack) ReturnUnused(context.Context, []enforce.Return, time.Time) error {
	return fmt.Errorf("no give back: %w", enforce.ErrNotImplemented)
}

func (noGiveBack) BackendName() string { return "lacking" }

// New refuses a store that cannot give back, naming the capability and
// the store, instead of leasing blocks it could never return; over one
// that can it starts, declaring the inner store's capabilities and Local,
// under the inner store's backend name.
func TestNewNeedsGiveBack(t *testing.T) {
	t.Parallel()
	_, err := lease.New(noGiveBack{memory.New()}, lease.Options{})
	if err == nil {
		t.Fatal("New over a store without GiveBack started; want a refusal")
	}
	for _, w := range []string{"GiveBack", "lacking"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("New: %v; want it to name %q", err, w)
		}
	}
	l, err := lease.New(memory.New(), lease.Options{})
	if err != nil {
		t.Fatalf("New over the memory store: %v", err)
	}
	defer l.Close()
	if got, want := l.Capabilities(), (enforce.CounterCapabilities{GiveBack: true, Reset: true, Local: true}); got != want {
		t.Errorf("Capabilities %+v, want %+v", got, want)
	}
	if got := l.BackendName(); got != "memory" {
		t.Errorf("BackendName %q, want the inner store's, memory", got)
	}
}

// The layer is a counter store like any other: the conformance suite
// passes over it (Take passes through; TakeLocal decides as Take does,
// checked by the suite's capabilities case since the layer declares
// Local).
func TestCounterStore(t *testing.T) {
	t.Parallel()
	enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore {
		l, err := lease.New(memory.New(), lease.Options{All: true, Time: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	})
}

// The layer's metrics count what its leases did, and the Enforcer's
// series count the calls it decided from blocks like any other: checks
// and gate checks count every one of them.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	high := 1_000_000
	tgt := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: 3600, MaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce}
	tgt.ID = tgt.Key()
	layer, err := lease.New(memory.New(), lease.Options{All: true, Time: time.Hour, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(layer.Close)
	e, err := enforce.New(context.Background(), enforce.Options{Counters: layer, Registerer: reg, SweepInterval: -1,
		Source: enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), tgt)})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	call := enforce.Call{Username: "carol", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	const n = 25
	for range n {
		if d, err := e.Check(context.Background(), call); err != nil || !d.Allowed {
			t.Fatalf("check: %+v, %v", d, err)
		}
	}
	want := map[string]float64{
		"rlctl_enforce_leases":                      1,
		"rlctl_enforce_lease_blocks_total":          1,
		"rlctl_enforce_lease_local_decisions_total": n, // the first call too: its refill took the block it was decided from
		"rlctl_enforce_lease_returned_units_total":  0,
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[mf.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[mf.GetName()] += m.GetGauge().GetValue()
			}
			if mf.GetName() == "rlctl_enforce_checks_total" && labelOf(m.GetLabel(), "outcome") == "allowed" {
				got["checks allowed"] += m.GetCounter().GetValue()
			}
			if mf.GetName() == "rlctl_enforce_gate_checks_total" && labelOf(m.GetLabel(), "outcome") == "allow" {
				got["gate checks allowed"] += m.GetCounter().GetValue()
			}
		}
	}
	want["checks allowed"], want["gate checks allowed"] = n, n
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
}

// labelOf is the value of the label name among labels.
func labelOf(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
