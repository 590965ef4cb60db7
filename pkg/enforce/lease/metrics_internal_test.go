package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// gathered is the value of the one series of the metric name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series of %s", name)
	return 0
}

// A decision taken from a lease that is retired before it adds its
// count is still counted: retiring flushed the lease's counts already,
// and nothing walks a retired lease again, so the decision flushes them
// itself.
func TestLeaseRetiredMidDecisionStillCounted(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	l, err := New(keepStore{}, Options{All: true, Time: time.Minute, Now: func() time.Time { return now }, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	g := enforce.CounterGate{Key: "k", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: 1000, Enforce: true}
	ls := l.get(g, 1, now)
	if ls == nil {
		t.Fatal("not leased")
	}
	ls.view.Store(&leaseView{until: now.Add(time.Minute).UnixNano(), taken: now, block: ls.block})
	ls.units.Store(ls.block)
	if !ls.tryTake(1, now) {
		t.Fatal("tryTake")
	}
	l.retire(ls) // between the take and the decision's count
	l.countLocal(ls)
	l.flushMetrics()
	l.reap(now.Add(time.Hour))
	if got := l.decided.Load(); got != 1 {
		t.Errorf("local decisions = %v, want 1", got)
	}
	if got := gathered(t, reg, "rlctl_enforce_lease_local_decisions_total"); got != 1 {
		t.Errorf("rlctl_enforce_lease_local_decisions_total = %v, want 1", got)
	}
}

// keepStore is a counter store that is never asked to count and keeps
// what is given back (the test decides from a lease it sets up itself).
type keepStore struct{}

func (keepStore) Take(context.Context, []enforce.TakeRequest, time.Time) ([]enforce.TakeResult, error) {
	return nil, errors.New("keepStore: not asked to count")
}
func (keepStore) ReturnUnused(context.Context, []enforce.Return, time.Time) error { return nil }
func (keepStore) Reset(context.Context, []enforce.CounterGate, time.Time, time.Time) error {
	return nil
}
func (keepStore) TakeLocal(context.Context, enforce.TakeRequest, enforce.TakeResult, enforce.TakeFunc) (enforce.TakeResult, error) {
	return enforce.TakeResult{}, enforce.ErrNotImplemented
}
func (keepStore) Sweep(context.Context, time.Time) (int64, error) { return 0, nil }
func (keepStore) BackendName() string                             { return "keep" }
func (keepStore) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: true}
}
