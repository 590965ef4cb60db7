package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// configSource is one of Envoy's own configuration files the differential
// run loads into both services.
type configSource struct {
	// Path inside a checkout of github.com/envoyproxy/ratelimit.
	Path string
	// File is the name it gets in the run's configuration directory
	// (Envoy's service reads every file of one directory, so two sources
	// of one base name need names of their own).
	File string
	// Domain, when set, replaces the file's domain: most of Envoy's unit
	// test files share the domain test-domain, and one directory may hold
	// a domain once (twice only with MERGE_DOMAIN_CONFIG=true, which the
	// run sets for the two files that test it).
	Domain string
}

// configSources are the valid configurations of Envoy's repository: its
// unit tests' (test/config; the others there are invalid on purpose and
// tested by rlctl import's own tests), its example's and its integration
// test's runtime. merge_domain_key1 and 2 keep one domain and are merged,
// as Envoy's own test merges them.
var configSources = []configSource{
	{Path: "test/config/basic_config.yaml", File: "test-basic_config.yaml", Domain: "basic_config"},
	{Path: "test/config/wildcard.yaml", File: "test-wildcard.yaml", Domain: "wildcard"},
	{Path: "test/config/shadowmode_config.yaml", File: "test-shadowmode_config.yaml", Domain: "shadowmode_config"},
	{Path: "test/config/share_threshold.yaml", File: "test-share_threshold.yaml", Domain: "share_threshold"},
	{Path: "test/config/merge_domain_key1.yaml", File: "test-merge_domain_key1.yaml", Domain: "merge_domain"},
	{Path: "test/config/merge_domain_key2.yaml", File: "test-merge_domain_key2.yaml", Domain: "merge_domain"},
	{Path: "examples/ratelimit/config/config.yaml", File: "example-config.yaml"},
	{Path: "examples/ratelimit/config/example.yaml", File: "example-example.yaml"},
	{Path: "test/integration/runtime/current/ratelimit/config/basic.yaml", File: "integration-basic.yaml"},
	{Path: "test/integration/runtime/current/ratelimit/config/another.yaml", File: "integration-another.yaml"},
	{Path: "test/integration/runtime/current/ratelimit/config/share_threshold.yaml", File: "integration-share_threshold.yaml"},
	{Path: "test/integration/runtime/current/ratelimit/reload.yaml", File: "integration-reload.yaml"},
}

// dropped is a descriptor left out of a copied file, and why.
type dropped struct {
	File, Descriptor, Reason string
}

// Reasons a descriptor is left out, each naming the docs/envoy.md section
// that documents why rlctl cannot hold it (rlctl import refuses it, so
// both services must run without it).
const (
	reasonUnsupported = "quota_mode and metadata are not supported (docs/envoy.md, \"Descriptor definitions\")"
	reasonMixedShare  = "share_threshold on one wildcard entry of a path and not on another (docs/envoy.md, \"Differences from Envoy's service\", share_threshold)"
)

// copyConfigs copies configSources from the Envoy checkout at repo into
// dir (created if missing): domains replaced where a source says so, and
// the descriptors rlctl cannot import left out, the same for both
// services. It returns what it left out.
func copyConfigs(repo, dir string) ([]dropped, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var all []dropped
	for _, src := range configSources {
		data, err := os.ReadFile(filepath.Join(repo, src.Path))
		if err != nil {
			return nil, fmt.Errorf("envoy repository %s: %w", repo, err)
		}
		out, drops, err := rewriteConfig(data, src.Domain)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		for i := range drops {
			drops[i].File = src.File
		}
		all = append(all, drops...)
		if err := os.WriteFile(filepath.Join(dir, src.File), out, 0o644); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// rewriteConfig rewrites one file of Envoy's format: every document's
// domain becomes domain (when not empty), and every descriptor rlctl
// cannot import is removed with what it nests.
func rewriteConfig(data []byte, domain string) ([]byte, []dropped, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	var drops []dropped
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, err
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("line %d: a document is not a mapping", doc.Line)
		}
		root := doc.Content[0]
		if domain != "" {
			if v := mapValue(root, "domain"); v != nil {
				v.Value = domain
			}
		}
		if list := mapValue(root, "descriptors"); list != nil {
			drops = append(drops, pruneList(list, "", false, false)...)
		}
		if err := enc.Encode(&doc); err != nil {
			return nil, nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), drops, nil
}

// pruneList removes from a descriptor list the items rlctl's import
// refuses: one with quota_mode or metadata, and one whose wildcard
// entries set share_threshold on some and not on others along a path
// (shareOn and shareOff say which the wildcard entries above had). above
// names the entries above ("key=value, key"), for the report.
func pruneList(list *yaml.Node, above string, shareOn, shareOff bool) []dropped {
	if list.Kind != yaml.SequenceNode {
		return nil
	}
	var drops []dropped
	kept := list.Content[:0]
	for _, item := range list.Content {
		name := entryName(item)
		if above != "" {
			name = above + ", " + name
		}
		on, off := shareOn, shareOff
		if v := mapValue(item, "value"); v != nil && strings.Contains(v.Value, "*") {
			if s := mapValue(item, "share_threshold"); s != nil && s.Value == "true" {
				on = true
			} else {
				off = true
			}
		}
		switch {
		case mapValue(item, "quota_mode") != nil || mapValue(item, "metadata") != nil:
			drops = append(drops, dropped{Descriptor: name, Reason: reasonUnsupported})
			continue
		case on && off:
			drops = append(drops, dropped{Descriptor: name, Reason: reasonMixedShare})
			continue
		}
		if sub := mapValue(item, "descriptors"); sub != nil {
			drops = append(drops, pruneList(sub, name, on, off)...)
			if len(sub.Content) == 0 && mapValue(item, "rate_limit") == nil {
				// Nothing left below a node without a limit of its
				// own: it would become an unlimited leaf.
				drops = append(drops, dropped{Descriptor: name, Reason: "every descriptor below it was left out"})
				continue
			}
		}
		kept = append(kept, item)
	}
	list.Content = kept
	return drops
}

// entryName is a descriptor item's key=value (key alone without a value).
func entryName(item *yaml.Node) string {
	k, v := mapValue(item, "key"), mapValue(item, "value")
	s := "?"
	if k != nil {
		s = k.Value
	}
	if v != nil {
		s += "=" + v.Value
	}
	return s
}

// mapValue is the value of key in mapping n (nil when absent or n is not
// a mapping).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// unusedConfigs lists the YAML files of the directories configSources
// read from that the run does not load (invalid on purpose, or new in
// the checkout), so that a newer checkout's files are not missed
// silently.
func unusedConfigs(repo string) []string {
	used := map[string]bool{}
	dirs := map[string]bool{}
	for _, s := range configSources {
		used[s.Path] = true
		dirs[filepath.Dir(s.Path)] = true
	}
	var out []string
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for d := range dirs {
			if !yield(d) {
				return
			}
		}
	}) {
		entries, _ := os.ReadDir(filepath.Join(repo, d))
		for _, e := range entries {
			p := d + "/" + e.Name()
			if ext := filepath.Ext(p); !e.IsDir() && (ext == ".yaml" || ext == ".yml") && !used[p] {
				out = append(out, p)
			}
		}
	}
	return out
}
