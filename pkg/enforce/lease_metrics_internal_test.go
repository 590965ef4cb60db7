package enforce

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A decision taken from a lease that is retired before it adds its
// counts is still counted: retiring flushed the lease's counts already,
// and nothing walks a retired lease again, so the decision flushes them
// itself.
func TestLeaseRetiredMidDecisionStillCounted(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	m, err := newMetrics(nil, nil, func() time.Time { return now }, "memory")
	if err != nil {
		t.Fatal(err)
	}
	l := newLeaser(LeaseOptions{All: true, Time: time.Minute}, keepStore{}, time.Second, func() time.Time { return now }, m)
	e := &Enforcer{metrics: m, leases: l}
	g := Gate{Axis: "target", EntityType: "mcp_server", Algorithm: AlgorithmFixedWindow, WindowSeconds: 3600, Limit: 1000, key: "k"}
	ls := l.get(&g, g.counterGate(), 1, now, m)
	if ls == nil {
		t.Fatal("not leased")
	}
	ls.view.Store(&leaseView{until: now.Add(time.Minute).UnixNano(), taken: now, block: ls.block})
	ls.units.Store(ls.block)
	if !ls.tryTake(1, now) {
		t.Fatal("tryTake")
	}
	l.retire(ls) // between the take and the decision's counts
	e.localDecision([]Gate{g}, []*lease{ls}, 1, now)
	l.flushMetrics()
	l.reap(now.Add(time.Hour))
	if got := counterValue(t, m.checks.WithLabelValues("allowed")); got != 1 {
		t.Errorf("checks{allowed} = %v, want 1", got)
	}
	if got := counterValue(t, m.gateChecks.WithLabelValues(axisLabel("target"), "mcp_server", "allow")); got != 1 {
		t.Errorf("gate_checks{allow} = %v, want 1", got)
	}
}

// keepStore is a counter store that is never asked to count and keeps
// what is given back (the test decides from a lease it sets up itself).
type keepStore struct{}

func (keepStore) Take(context.Context, []TakeRequest, time.Time) ([]TakeResult, error) {
	return nil, errors.New("keepStore: not asked to count")
}
func (keepStore) ReturnUnused(context.Context, []Return, time.Time) error { return nil }
func (keepStore) Reset(context.Context, []CounterGate, time.Time, time.Time) error {
	return nil
}
func (keepStore) Sweep(context.Context, time.Time) (int64, error) { return 0, nil }
func (keepStore) BackendName() string                             { return "keep" }
func (keepStore) Capabilities() CounterCapabilities {
	return CounterCapabilities{GiveBack: true, Reset: true}
}
