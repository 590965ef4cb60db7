package state_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const envoyConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: path
    value: /files/*
    share_threshold: true
    rate_limit:
      name: files
      unit: hour
      requests_per_unit: 100
  - key: tenant
    value: acme
    descriptors:
      - key: user
        shadow_mode: true
        detailed_metric: true
        rate_limit:
          replaces:
            - name: files
          unit: minute
          requests_per_unit: 60
      - key: internal
`

// TestImportEnvoyWritesApplyAndExportsBack: the document import writes is
// what --apply applies; export --format envoy-ratelimit writes it back, and
// importing that export gives the same document.
func TestImportEnvoyWritesApplyAndExportsBack(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	dir := t.TempDir()
	path := writeFile(t, dir, "edge.yaml", envoyConfig)
	doc := r.Must("import", "envoy-ratelimit", path)
	for _, want := range []string{"name: edge/remote_address", "name: edge/path=%2Ffiles%2F*", "share_threshold: true",
		"limit_name: files", "name: edge/tenant=acme/user", "mode: shadow", "replaces:", "name: edge/tenant=acme/internal", "unlimited: true"} {
		if !strings.Contains(doc, want) {
			t.Errorf("import wrote no %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "memberships") || strings.Contains(doc, "admins") {
		t.Errorf("import wrote sections besides definitions (an apply --prune of it would empty them):\n%s", doc)
	}
	out := r.Must("import", "envoy-ratelimit", dir, "--apply")
	if !strings.Contains(out, "created 4") {
		t.Errorf("import --apply said %q, want 4 created", out)
	}
	defs, err := r.Client().ListAllDefinitions(t.Context(), client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil || len(defs) != 4 {
		t.Fatalf("after --apply: %d descriptor definitions (%v), want 4", len(defs), err)
	}
	// The applied document diffs as unchanged.
	docFile := writeFile(t, dir+"-doc", "doc.yaml", doc)
	r.Expect(0, "diff", "-f", docFile)

	exported := r.Must("export", "--format", "envoy-ratelimit")
	again := writeFile(t, t.TempDir(), "exported.yaml", exported)
	if doc2 := r.Must("import", "envoy-ratelimit", again); doc2 != doc {
		t.Errorf("import of the export differs:\n%s\nexported:\n%s\nfirst import:\n%s", doc2, exported, doc)
	}
}

// TestImportEnvoyBadFiles: each exits 2 naming file, line and field, and
// nothing is applied.
func TestImportEnvoyBadFiles(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	tests := []struct {
		name, config string
		want         []string
	}{
		{"malformed YAML", "domain: edge\ndescriptors:\n  - key: a\n   value: b\n", []string{":2:", "not valid YAML"}},
		{"unknown field", "domain: edge\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      request_per_unit: 5\n", []string{":6:", "descriptors[0].rate_limit.request_per_unit", "unknown field"}},
		{"duplicate key", "domain: edge\ndescriptors:\n  - key: a\n    key: b\n", []string{":4:", "descriptors[0].key", "duplicate key"}},
		{"unsupported field", "domain: edge\ndescriptors:\n  - key: a\n    quota_mode: true\n", []string{":4:", "descriptors[0].quota_mode", "not supported"}},
		{"bad unit", "domain: edge\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 5\n", []string{":5:", "descriptors[0].rate_limit.unit", "fortnight"}},
		{"no domain", "descriptors:\n  - key: a\n", []string{":1:", "domain", "required"}},
		{"duplicate descriptor", "domain: edge\ndescriptors:\n  - key: a\n  - key: a\n", []string{":4:", "descriptors[1]", "duplicate descriptor"}},
		// Envoy's own test configurations (test/config/unlimited_with_unit.yaml,
		// replaces_empty.yaml, replaces_self.yaml), which its service refuses.
		{"unit with unlimited", "domain: edge\ndescriptors:\n  - key: foo\n    rate_limit:\n      unlimited: true\n      unit: day\n",
			[]string{":6:", "descriptors[0].rate_limit.unit", "should not specify a unit when unlimited is true", "edge/foo"}},
		{"empty replaces name", "domain: edge\ndescriptors:\n  - key: key1\n    value: value1\n    descriptors:\n      - key: subkey1\n        rate_limit:\n          name: self\n          replaces:\n            - name:\n          unit: second\n          requests_per_unit: 5\n",
			[]string{":10:", "descriptors[0].descriptors[0].rate_limit.replaces[0].name", "should not be empty"}},
		{"replaces itself", "domain: edge\ndescriptors:\n  - key: k\n    rate_limit:\n      name: self\n      replaces:\n        - name: self\n      unit: second\n      requests_per_unit: 5\n",
			[]string{":7:", "descriptors[0].rate_limit.replaces[0].name", "own name"}},
		{"share_threshold without a wildcard", "domain: edge\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n",
			[]string{":5:", "descriptors[0].share_threshold", "one holding '*'"}},
		// share_threshold on one wildcard entry of a path and not on the
		// other (Envoy's test/config/share_threshold.yaml): rlctl would
		// share both.
		{"share_threshold on one wildcard of a path", "domain: edge\ndescriptors:\n  - key: path\n    value: path/*\n    share_threshold: true\n    descriptors:\n      - key: file\n        value: file/*\n        share_threshold: false\n        descriptors:\n          - key: type\n            rate_limit: {unit: minute, requests_per_unit: 120}\n",
			[]string{":9:", "descriptors[0].descriptors[0].share_threshold", `off for wildcard value "file/*" but on for wildcard value "path/*" above it (line 4)`}},
		{"share_threshold below a wildcard without it", "domain: edge\ndescriptors:\n  - key: path\n    value: path/*\n    descriptors:\n      - key: file\n        value: file/*\n        share_threshold: true\n        rate_limit: {unit: minute, requests_per_unit: 120}\n",
			[]string{":8:", "descriptors[0].descriptors[0].share_threshold", `on for wildcard value "file/*" but off`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "a-good.yaml", "domain: good\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
			bad := writeFile(t, dir, "b-bad.yaml", tt.config)
			rt := *r // fail this case, not the whole table
			rt.T = t
			res := rt.Expect(2, "import", "envoy-ratelimit", dir, "--apply")
			for _, w := range append([]string{bad}, tt.want...) {
				if !strings.Contains(res.ErrOut, w) {
					t.Errorf("stderr %q names no %q", res.ErrOut, w)
				}
			}
		})
	}
	defs, err := r.Client().ListAllDefinitions(t.Context(), client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil || len(defs) != 0 {
		t.Errorf("after refused imports: %d descriptor definitions (%v), want none", len(defs), err)
	}
}

// TestImportEnvoyDomainInTwoFiles: a domain split across two files is
// refused, as Envoy's service refuses it unless MERGE_DOMAIN_CONFIG=true
// (its test/config/merge_domain_key1.yaml and merge_domain_key2.yaml);
// --merge-domains merges them as that service then does.
func TestImportEnvoyDomainInTwoFiles(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	dir := t.TempDir()
	first := writeFile(t, dir, "merge_domain_key1.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n")
	second := writeFile(t, dir, "merge_domain_key2.yaml", "domain: test-domain\ndescriptors:\n  - key: key2\n    value: value2\n    rate_limit:\n      unit: minute\n      requests_per_unit: 20\n")
	res := r.Expect(2, "import", "envoy-ratelimit", dir, "--apply")
	for _, w := range []string{second + ":1:", `duplicate domain "test-domain"`, first + ":1", "--merge-domains"} {
		if !strings.Contains(res.ErrOut, w) {
			t.Errorf("stderr %q names no %q", res.ErrOut, w)
		}
	}
	defs, err := r.Client().ListAllDefinitions(t.Context(), client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil || len(defs) != 0 {
		t.Fatalf("after the refused import: %d descriptor definitions (%v), want none", len(defs), err)
	}
	// Two documents of one file are two configurations too.
	both := writeFile(t, t.TempDir(), "both.yaml", "domain: d\ndescriptors: [{key: a}]\n---\ndomain: d\ndescriptors: [{key: b}]\n")
	res = r.Expect(2, "import", "envoy-ratelimit", both)
	if !strings.Contains(res.ErrOut, both+":4:") || !strings.Contains(res.ErrOut, "duplicate domain") {
		t.Errorf("stderr %q does not refuse the second document's domain", res.ErrOut)
	}

	out := r.Must("import", "envoy-ratelimit", dir, "--merge-domains", "--apply")
	if !strings.Contains(out, "created 2") {
		t.Errorf("import --merge-domains --apply said %q, want 2 created", out)
	}
	// Merged, a descriptor in both files is still refused.
	writeFile(t, dir, "merge_domain_key3.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit: {unit: hour, requests_per_unit: 1}\n")
	res = r.Expect(2, "import", "envoy-ratelimit", dir, "--merge-domains")
	if !strings.Contains(res.ErrOut, "is also in "+first) {
		t.Errorf("stderr %q does not refuse the descriptor both files have", res.ErrOut)
	}
}

// TestImportEnvoyWarnsOfWildcardOrder: Envoy's service takes the first
// wildcard of a node in its files' order, rlctl the most literal; two
// that overlap, given less literal first, get a warning naming the file
// and line of the later one. The import still succeeds.
func TestImportEnvoyWarnsOfWildcardOrder(t *testing.T) {
	t.Parallel()
	r := clitest.New(t)
	dir := t.TempDir()
	tests := []struct {
		name, config string
		warn         []string // empty: no warning
	}{
		{"broad first", "domain: edge\ndescriptors:\n  - key: path\n    value: /api/*\n    rate_limit: {unit: second, requests_per_unit: 100}\n  - key: path\n    value: /api/v1/*\n    rate_limit: {unit: second, requests_per_unit: 10}\n",
			[]string{":6:", "path=/api/v1/* comes after path=/api/* (", ":3)", `Envoy's service takes the first in the files, "/api/*"; rlctl takes the most literal, "/api/v1/*"`}},
		{"nested, middle wildcard", "domain: edge\ndescriptors:\n  - key: tenant\n    value: acme\n    descriptors:\n      - key: route\n        value: '*'\n      - key: route\n        value: a*z\n",
			[]string{":8:", "route=a*z comes after route=*"}},
		{"most literal first", "domain: edge\ndescriptors:\n  - key: path\n    value: /api/v1/*\n  - key: path\n    value: /api/*\n", nil},
		{"disjoint prefixes", "domain: edge\ndescriptors:\n  - key: path\n    value: /web/*\n  - key: path\n    value: /api/v1/*\n", nil},
		{"disjoint suffixes", "domain: edge\ndescriptors:\n  - key: path\n    value: '*.png'\n  - key: path\n    value: '*.html'\n", nil},
		{"a suffix and a prefix", "domain: edge\ndescriptors:\n  - key: path\n    value: /web/*\n  - key: path\n    value: '*.html'\n",
			[]string{":5:", "path=*.html comes after path=/web/*"}},
		{"other keys", "domain: edge\ndescriptors:\n  - key: a\n    value: '*'\n  - key: b\n    value: x*\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.config)
			res := r.MustWith(clitest.Opts{}, "import", "envoy-ratelimit", path)
			if len(tt.warn) == 0 {
				if res.ErrOut != "" {
					t.Errorf("stderr %q, want no warning", res.ErrOut)
				}
				return
			}
			if !strings.HasPrefix(res.ErrOut, "warning: "+path) {
				t.Errorf("stderr %q is not a warning naming %s", res.ErrOut, path)
			}
			for _, w := range tt.warn {
				if !strings.Contains(res.ErrOut, w) {
					t.Errorf("stderr %q names no %q", res.ErrOut, w)
				}
			}
		})
	}
}
