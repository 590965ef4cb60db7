package enforce_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// series lists the samples of one family as "label=value,... value".
func series(t *testing.T, reg *prometheus.Registry, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out = append(out, strings.Join(labels, ",")+" "+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestMetricsCarryTheReferenceLabels: quarantine denials name the scope and
// the quarantined subject's type, the backend histogram its backend, op and result,
// the quarantine gauge counts subjects per scope, and the master switch is
// a gauge that reads 0 while enforcement is off (and then nothing counts).
func TestMetricsCarryTheReferenceLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, enforce.Options{Registerer: reg})
	f.Def(target("mcp_server", "srv", 60, 5))
	f.Member("user", "mallory", ratelimit.GroupQuarantineCallers)
	f.Member("client", "leaky", ratelimit.GroupQuarantineCallers)
	f.Member("server", "badsrv", ratelimit.GroupQuarantineTargets)
	for _, c := range []enforce.Call{user("mallory", "srv"), agent("leaky", "srv"), user("alice", "badsrv")} {
		if d := f.Check(c); d.Reason != enforce.ReasonQuarantined {
			t.Fatalf("%+v: %+v, want quarantined", c, d)
		}
	}
	f.Check(user("alice", "srv"))
	if _, err := f.E.Peek(context.Background(), user("alice", "srv")); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"rlctl_enforce_quarantine_denied_total":  {"entity_type=client,scope=caller 1", "entity_type=mcp_server,scope=target 1", "entity_type=user,scope=caller 1"},
		"rlctl_enforce_backend_duration_seconds": {"backend=postgres,op=peek,result=ok 1", "backend=postgres,op=take,result=ok 1"},
		"rlctl_enforce_quarantined_subjects":     {"scope=caller 2", "scope=target 1"},
		"rlctl_enforce_backend_timeout_seconds":  {" 0.25"},
		"rlctl_enforce_enabled":                  {" 1"},
	}
	for name, w := range want {
		if got := series(t, reg, name); strings.Join(got, "; ") != strings.Join(w, "; ") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, w)
		}
	}

	// Off: everything passes, nothing counts, the gauge says so.
	err := f.Store.InTx(context.Background(), func(q *store.Queries) error {
		_, _, _, err := q.SetEnforcement(context.Background(), false, "test", "test", 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	before := f.counter("srv")
	for _, c := range []enforce.Call{user("mallory", "srv"), user("alice", "badsrv"), user("alice", "srv")} {
		if d := f.Check(c); !d.Allowed || d.Reason != enforce.ReasonEnforcementOff || len(d.Gates) != 0 {
			t.Errorf("%+v while off: %+v", c, d)
		}
	}
	if f.Burst(user("alice", "srv"), 10) != 10 || f.counter("srv") != before {
		t.Errorf("while off: counters went from %d to %d", before, f.counter("srv"))
	}
	if got := series(t, reg, "rlctl_enforce_enabled"); len(got) != 1 || got[0] != " 0" {
		t.Errorf("rlctl_enforce_enabled while off: %q", got)
	}
}

// TestSchemaWithoutTheSwitch: a gateway whose pkg/enforce is newer than the
// database's schema (rolled out before rlapi migrate) still loads and
// enforces, with enforcement on.
func TestSchemaWithoutTheSwitch(t *testing.T) {
	t.Parallel()
	st := newFixture(t, enforce.Options{}).Store
	if _, err := st.Pool().Exec(context.Background(), `drop table rl_settings`); err != nil {
		t.Fatal(err)
	}
	e, err := postgres.New(context.Background(), st.Pool(), enforce.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("enforcer on a schema without rl_settings: %v", err)
	}
	defer e.Close()
	if d, err := e.Check(context.Background(), user("alice", "srv")); err != nil || !d.Allowed || d.Reason != enforce.ReasonAllowed {
		t.Errorf("decision: %+v, %v", d, err)
	}
}
