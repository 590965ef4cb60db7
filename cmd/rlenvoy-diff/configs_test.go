package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/envoyconf"
)

// A file of Envoy's format with what rlctl import refuses: the copy
// leaves those descriptors out (naming each), keeps the rest, takes the
// new domain, and imports.
func TestRewriteConfigLeavesOutWhatImportRefuses(t *testing.T) {
	t.Parallel()
	in := `domain: test-domain
descriptors:
  - key: keep
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: service
    value: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        descriptors:
          - key: type
            rate_limit: {unit: minute, requests_per_unit: 3}
  - key: both
    value: a/*
    share_threshold: true
    descriptors:
      - key: sub
        value: b/*
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 4}
`
	if _, err := envoyconf.Parse("in.yaml", []byte(in)); err == nil {
		t.Fatal("rlctl import accepts the input: the test needs one it refuses")
	}
	out, drops, err := rewriteConfig([]byte(in), "renamed")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range drops {
		got = append(got, d.Descriptor+": "+d.Reason)
	}
	want := []string{
		"service=quota: " + reasonUnsupported,
		"path=path/*, file=file/*: " + reasonMixedShare,
		"path=path/*: every descriptor below it was left out",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("left out:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	defs, err := envoyconf.Parse("out.yaml", out)
	if err != nil {
		t.Fatalf("rlctl import refuses the copy: %v\n%s", err, out)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, " "), "renamed/keep renamed/both=a%2F*/sub=b%2F*"; got != want {
		t.Errorf("the copy's definitions are %s, want %s", got, want)
	}
}

// copyConfigs writes every source into one directory that rlctl import
// reads (domains merged as the run merges them), and fails naming a
// source the checkout lacks.
func TestCopyConfigs(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for i, src := range configSources {
		p := filepath.Join(repo, src.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		doc := "domain: d" + string(rune('a'+i)) + "\ndescriptors:\n  - key: k" + string(rune('a'+i)) + "\n    rate_limit: {unit: second, requests_per_unit: 1}\n"
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	extra := filepath.Join(repo, "test/config/new_case.yaml")
	if err := os.WriteFile(extra, []byte("domain: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "config")
	if _, err := copyConfigs(repo, out); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range configSources {
		if src.Domain != "" && cfg.Defs[src.Domain] == nil {
			t.Errorf("%s: domain %s not in the copy (domains %v)", src.Path, src.Domain, cfg.Domains)
		}
	}
	if got := len(cfg.Defs["merge_domain"]); got != 2 {
		t.Errorf("merge_domain has %d definitions, want the 2 of its two files", got)
	}
	if got := unusedConfigs(repo); strings.Join(got, ",") != "test/config/new_case.yaml" {
		t.Errorf("unused configurations %v, want the new file", got)
	}
	if err := os.Remove(filepath.Join(repo, configSources[3].Path)); err != nil {
		t.Fatal(err)
	}
	if _, err := copyConfigs(repo, t.TempDir()); err == nil || !strings.Contains(err.Error(), configSources[3].Path) {
		t.Errorf("a missing source: error %v, want one naming %s", err, configSources[3].Path)
	}
}
