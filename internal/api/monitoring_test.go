package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const (
	alertRulesFile = "../../docs/monitoring/rlctl-alerts.yaml"
	dashboardFile  = "../../docs/monitoring/rlctl-dashboard.json"
)

// selector is one metric a PromQL expression reads, and the labels it
// matches on.
type selector struct {
	where  string
	name   string
	labels []string
}

// selectors lists every vector selector of a PromQL expression.
func selectors(t *testing.T, where, expr string) []selector {
	t.Helper()
	e, err := parser.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return nil
	}
	var out []selector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selector{where: where, name: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				s.labels = append(s.labels, m.Name)
			}
		}
		out = append(out, s)
		return nil
	})
	return out
}

// alertSelectors parses the alert rules with Prometheus's own rule parser
// (what promtool check rules runs) and returns what their expressions read.
func alertSelectors(t *testing.T) []selector {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertRulesFile, false)
	for _, err := range errs {
		t.Errorf("%s: %v", alertRulesFile, err)
	}
	if groups == nil {
		t.FailNow()
	}
	var out []selector
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts++
			}
			out = append(out, selectors(t, "alert "+r.Alert+r.Record, r.Expr)...)
		}
	}
	if alerts < 3 {
		t.Errorf("%s holds %d alerts, want at least the reference's three", alertRulesFile, alerts)
	}
	return out
}

// dashboardSelectors reads every target expression of the Grafana
// dashboard, with its variables replaced by what Grafana would send.
func dashboardSelectors(t *testing.T) []selector {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
	var out []selector
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, selectors(t, "panel "+p.Title, vars.Replace(tg.Expr))...)
		}
	}
	labelValues := regexp.MustCompile(`label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	for _, v := range dash.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out = append(out, selector{where: "variable " + v.Definition, name: m[1]})
		}
	}
	if len(out) < 10 {
		t.Errorf("%s: only %d queries", dashboardFile, len(out))
	}
	return out
}

// scrape returns rlapi's /metrics as metric families.
func scrapeFamilies(t *testing.T, env *apitest.Env) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// family finds the family a selector reads: histograms are read through
// their _bucket, _sum and _count series.
func family(fams map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if f, ok := fams[name]; ok {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return f
			}
		}
	}
	return nil
}

// hasLabel reports whether the family carries label; job and instance are
// Prometheus's target labels, added at scrape.
func hasLabel(f *dto.MetricFamily, label string) bool {
	if label == "job" || label == "instance" {
		return true
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				return true
			}
		}
	}
	return label == "le" && f.GetType() == dto.MetricType_HISTOGRAM
}

// TestMonitoringFilesMatchTheExportedMetrics: the shipped alert rules and
// Grafana dashboard parse, and every metric and label they read is one a
// real rlapi exports once it has made decisions of every kind.
func TestMonitoringFilesMatchTheExportedMetrics(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := clientFor(t, env, env.Token(t, "gw", "enforcer"))
	ctx := t.Context()
	shadow := targetLimit("mcp_server", "srv", 3600, 1)
	shadow.Mode = ratelimit.ModeShadow
	define(t, env, admin, targetLimit("mcp_server", "srv", 86400, 1), shadow, targetLimit("mcp_server", "roomy", 86400, 100))
	if _, err := admin.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	check := func(user, target, want string) {
		t.Helper()
		r, err := gw.Check(ctx, client.CheckRequest{Username: user, TargetType: "mcp_server", TargetName: target})
		if r.Reason != want {
			t.Fatalf("check as %s on %s: %+v, %v; want %s", user, target, r, err, want)
		}
	}
	check("alice", "srv", client.ReasonAllowed)
	check("alice", "srv", client.ReasonThrottled)
	check("mallory", "srv", client.ReasonQuarantined)
	breakCounters(t, env)
	check("alice", "roomy", client.ReasonFailOpen)

	fams := scrapeFamilies(t, env)
	var bad []string
	for _, s := range append(alertSelectors(t), dashboardSelectors(t)...) {
		f := family(fams, s.name)
		if f == nil {
			bad = append(bad, s.where+": "+s.name+" is not exported")
			continue
		}
		for _, l := range s.labels {
			if !hasLabel(f, l) {
				bad = append(bad, s.where+": "+s.name+" has no label "+l)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range slices.Compact(bad) {
		t.Error(b)
	}

	// The quarantine series carry what the reference's do.
	q := fams["rlctl_enforce_quarantined_subjects"]
	if q == nil || len(q.GetMetric()) != 2 {
		t.Fatalf("rlctl_enforce_quarantined_subjects: %v", q)
	}
	for _, m := range q.GetMetric() {
		want := map[string]float64{"caller": 1, "target": 0}[m.GetLabel()[0].GetValue()]
		if m.GetGauge().GetValue() != want {
			t.Errorf("quarantined subjects %s = %v, want %v", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue(), want)
		}
	}
	if !hasLabel(fams["rlctl_enforce_quarantine_denied_total"], "entity_type") || !hasLabel(fams["rlctl_enforce_backend_duration_seconds"], "op") ||
		!hasLabel(fams["rlctl_enforce_backend_duration_seconds"], "backend") {
		t.Error("quarantine denials lack entity_type or the backend histogram lacks op or backend")
	}
}
