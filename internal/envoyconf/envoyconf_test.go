package envoyconf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/envoyconf"
)

// FuzzParse: any input is parsed or refused with errors naming the file,
// never a panic; what Render writes of a parse parses again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"domain: d\ndescriptors:\n  - key: k\n    value: v*\n    share_threshold: true\n    descriptors:\n      - key: x\n",
		"domain: d\n---\ndomain: e\ndescriptors: []\n",
		"descriptors: [{key: a, key: b}]",
		"domain: [",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := envoyconf.Parse("f.yaml", data)
		if err != nil {
			var es envoyconf.Errors
			if !errors.As(err, &es) || len(es) == 0 || es[0].File != "f.yaml" {
				t.Fatalf("Parse error %v is not Errors naming the file", err)
			}
			return
		}
		out, _, _ := envoyconf.Render(defs)
		if _, err := envoyconf.Parse("render.yaml", out); err != nil {
			t.Fatalf("Render wrote what Parse refuses: %v\n%s", err, out)
		}
	})
}

// TestWarningsOfWildcardOrder: two wildcards of a key at one node warn
// when the less literal comes first in the files and some value matches
// both, across merged files too.
func TestWarningsOfWildcardOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		first, second string
		warn          bool
	}{
		{"/api/*", "/api/v1/*", true},
		{"/api/v1/*", "/api/*", false}, // most literal first already
		{"*", "a*z", true},
		{"ab*", "a*c", true},       // abc: equally literal, "a*c" first by text
		{"a*c", "ab*d", false},     // no value ends in both c and d
		{"*.png", "*.html", false}, // disjoint suffixes
		{"x*y*z", "xa*z", false},   // equally literal, and first by text already
		{"a*b", "ab", false},       // not a wildcard: exact values match first
		{"/web/*", "*.html", true}, // equally literal: "*.html" sorts first by text
	}
	for _, tt := range tests {
		l := envoyconf.NewLoader(envoyconf.Options{MergeDomains: true})
		for i, v := range []string{tt.first, tt.second} {
			file := []string{"a.yaml", "b.yaml"}[i]
			if _, err := l.Add(t.Context(), file, []byte("domain: d\ndescriptors:\n  - key: p\n    value: '"+v+"'\n")); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := l.Warnings(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ws) > 0; got != tt.warn {
			t.Errorf("%q then %q: warnings %v, want a warning: %v", tt.first, tt.second, ws, tt.warn)
			continue
		}
		if tt.warn && (ws[0].File != "b.yaml" || ws[0].Line != 3 || !strings.Contains(ws[0].Message, "a.yaml:3")) {
			t.Errorf("%q then %q: warning %v does not name b.yaml:3 and a.yaml:3", tt.first, tt.second, ws[0])
		}
	}
}

// TestRenderWritesWildcardsMostLiteralFirst: Envoy's service tries
// wildcards in the order written, rlctl the most literal first; Render
// writes them in rlctl's order, so that Envoy reads the export as rlctl
// matches it (and its import warns of nothing).
func TestRenderWritesWildcardsMostLiteralFirst(t *testing.T) {
	t.Parallel()
	defs, err := envoyconf.Parse("in.yaml", []byte("domain: edge\ndescriptors:\n"+
		"  - key: path\n    value: /api/*\n    rate_limit: {unit: second, requests_per_unit: 100}\n"+
		"  - key: path\n    value: /api/v1/*\n    rate_limit: {unit: second, requests_per_unit: 10}\n"+
		"  - key: path\n    value: /api/v1/users\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := envoyconf.Render(defs)
	text := string(out)
	if strings.Index(text, "/api/v1/*") > strings.Index(text, "value: /api/*") {
		t.Errorf("Render wrote /api/* before /api/v1/*:\n%s", text)
	}
	l := envoyconf.NewLoader(envoyconf.Options{})
	if _, err := l.Add(t.Context(), "out.yaml", out); err != nil {
		t.Fatal(err)
	}
	if ws, _ := l.Warnings(t.Context()); len(ws) > 0 {
		t.Errorf("the export warns: %v\n%s", ws, text)
	}
}

// TestRenderSkipsFailPolicies: Envoy's format has no per-limit failure
// mode, so a definition with a fail policy of its own (fail_closed alone
// included) is left out and named; one that leaves it to the enforcer is
// written.
func TestRenderSkipsFailPolicies(t *testing.T) {
	t.Parallel()
	defs, err := envoyconf.Parse("in.yaml", []byte("domain: edge\ndescriptors:\n"+
		"  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n"+
		"  - key: b\n    rate_limit: {unit: second, requests_per_unit: 1}\n"+
		"  - key: c\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	if err != nil || len(defs) != 3 {
		t.Fatalf("parse: %d definitions, %v", len(defs), err)
	}
	defs[1].FailPolicy = "degrade"
	defs[2].FailClosed = true
	out, _, skipped := envoyconf.Render(defs)
	want := []string{defs[1].Key() + ": fail_policy degrade (Envoy's format has no per-limit failure mode)",
		defs[2].Key() + ": fail_policy closed (Envoy's format has no per-limit failure mode)"}
	if strings.Join(skipped, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
	if text := string(out); !strings.Contains(text, "key: a") || strings.Contains(text, "key: b") || strings.Contains(text, "key: c") {
		t.Errorf("written:\n%s\nwant a alone", text)
	}
}
