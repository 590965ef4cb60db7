package enforce

import (
	"context"
	"time"
)

// LeasePath decides a call of cost 1 on gates (as a Decision returned
// them) through e's leases alone, as a Check whose gates are all leased
// does after building them: for BenchmarkLeaseLocalPath, which measures
// the lease layer without the rest of the Enforcer's work per call.
func (e *Enforcer) LeasePath(gates []Gate, now time.Time) (Decision, bool) {
	d, _, ok := e.takeLeased(context.Background(), Call{}, gates, nil, 1, true, now)
	return d, ok
}

// ReapLeases runs one pass of e's lease reaper at now, as its background
// loop does.
func (e *Enforcer) ReapLeases(now time.Time) { e.leases.reap(now) }
