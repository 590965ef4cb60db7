package auththrottle_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// sink keeps the record of violations an Enforcer writes.
type sink struct {
	mu  sync.Mutex
	evs []ratelimit.Event
}

func (s *sink) WriteEvents(_ context.Context, evs []ratelimit.Event) error {
	s.mu.Lock()
	s.evs = append(s.evs, evs...)
	s.mu.Unlock()
	return nil
}

// syncBuffer is a log destination safe for the Enforcer's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// counterValue is the value of the series of name with label=value in
// reg (0 when it has none).
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// What an operator watches of the gateways' lockouts holds with the
// throttle guarding an Enforcer from outside the core: the lockout is
// counted in rlctl_enforce_auth_lockouts_total, each refused call (by
// Check and by AuthMiddleware) in rlctl_enforce_checks_total
// {outcome="auth_locked"}; the aggregated log has the lockout's line and
// one line for the refused calls; the record of violations has the
// lockout (auth_lockout_started, subject ip:<address>), not the calls
// and not its end.
func TestLockoutsAreCountedLoggedAndRecorded(t *testing.T) {
	t.Parallel()
	clk := authClock()
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	record := &sink{}
	counters := memory.New()
	violated, err := violations.New(record, violations.Opts{Now: clk.Now, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	th, err := auththrottle.New(counters, auththrottle.Options{Now: clk.Now, Registerer: reg, Record: violated.RecordEvent})
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(context.Background(), enforce.Options{Counters: counters, Source: enforcetest.StaticSource(enforce.State{}),
		Now: clk.Now, SweepInterval: -1, CacheTTL: 72 * time.Hour, Guard: th, Registerer: reg, Observers: []enforce.Observer{violated},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const ip = "198.51.100.7"
	for range 5 {
		if _, err := th.ReportAuth(context.Background(), auththrottle.Report{ClientIP: ip, Outcome: auththrottle.Failure, Identity: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		d, _ := e.Check(context.Background(), enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "s", ClientIP: ip})
		if d.Reason != enforce.ReasonAuthLocked {
			t.Fatalf("Check from the locked address: %s, want auth-locked", d.Reason)
		}
	}
	r := httptest.NewRequest("GET", "/mcp/s", nil)
	r.RemoteAddr = ip + ":4711"
	rec := httptest.NewRecorder()
	httpgate.AuthMiddleware(th, nil)(http.NotFoundHandler()).ServeHTTP(rec, r)
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("AuthMiddleware: %d, want 429", rec.Code)
	}

	if n := counterValue(t, reg, "rlctl_enforce_auth_lockouts_total", "scope", "gateway"); n != 1 {
		t.Errorf("rlctl_enforce_auth_lockouts_total{scope=gateway} = %v, want 1", n)
	}
	if n := counterValue(t, reg, "rlctl_enforce_checks_total", "outcome", "auth_locked"); n != 3 {
		t.Errorf(`rlctl_enforce_checks_total{outcome="auth_locked"} = %v, want 3 (two Checks, one AuthMiddleware request)`, n)
	}
	// The lockout ends; the throttle says so on its next touch of the
	// address, and the record keeps only the start.
	clk.Advance(6 * time.Minute)
	if st, err := th.Locked(context.Background(), ip); err != nil || st.Locked {
		t.Fatalf("after the lockout: %+v, %v; want unlocked", st, err)
	}
	e.Close()        // writes the aggregated lines
	violated.Close() // and the record
	out := logs.String()
	for _, want := range []string{
		`msg="auth lockout" event=auth_lockout_started count=1`, "scope=gateway caller=ip:198.51.100.7 identity=alice failures=5 duration=5m0s",
		`msg="calls denied: address locked out for failed authentications" event=auth_locked count=2`,
		"caller=ip:198.51.100.7 username=alice client_id=\"\" target_type=mcp_server target=s retry_after_s=300",
		"target=/mcp/s retry_after_s=300",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	record.mu.Lock()
	defer record.mu.Unlock()
	if len(record.evs) != 1 || record.evs[0].Kind != ratelimit.EventAuthLockoutStarted || record.evs[0].Subject != "ip:198.51.100.7" ||
		record.evs[0].Limit != 5 {
		t.Errorf("record of violations %+v, want one auth_lockout_started of ip:198.51.100.7, limit 5", record.evs)
	}
}
