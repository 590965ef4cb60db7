package enforce

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// quarantineCounter counts the subjects quarantined at now, for the gauge
// read at scrape time: the source counts when it declares it can
// (SourceCapabilities.CountQuarantined: the PostgreSQL source reads the
// database, the same on every replica), else the snapshot current returns
// (read at each scrape; nil before the first load) is counted.
func quarantineCounter(src Source, current func() *snapshot) metrics.CountQuarantined {
	return func(ctx context.Context, now time.Time) (callers, targets int64, err error) {
		if src.Capabilities().CountQuarantined {
			return src.CountQuarantined(ctx, now)
		}
		return countQuarantinedIn(current(), now)
	}
}

// countQuarantinedIn counts the quarantined subjects of s.
func countQuarantinedIn(s *snapshot, now time.Time) (callers, targets int64, err error) {
	if s == nil {
		return 0, 0, errors.New("no snapshot")
	}
	s.Members.Each(func(_ string, m plan.Member) bool {
		if !m.QuarantinedAt(now) {
			return true
		}
		for _, g := range m.Groups {
			switch g {
			case ratelimit.GroupQuarantineCallers:
				callers++
			case ratelimit.GroupQuarantineTargets:
				targets++
			}
		}
		return true
	})
	s.Networks.Each(func(_ netip.Prefix, m plan.Member) bool {
		if m.QuarantinedAt(now) {
			callers++
		}
		return true
	})
	return callers, targets, nil
}
