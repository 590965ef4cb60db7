package api_test

// Envoy descriptor definitions through the real listener: what
// PUT, GET and apply store and show, and the bad input they refuse.

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func descriptorDef(domain string, window, limit int, entries ...ratelimit.DescriptorEntry) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: window, Enabled: true}
	if limit > 0 {
		d.MaxRequests = ptr(limit)
	}
	d.Domain, d.Descriptor = domain, entries
	return d
}

func entry(key, value string) ratelimit.DescriptorEntry {
	return ratelimit.DescriptorEntry{Key: key, Value: value}
}

// TestDescriptorDefinitionRoundTrip: a descriptor given as domain and
// entries is stored under its canonical name, and GET, list and apply show
// the same fields back; apply of the same document changes nothing.
func TestDescriptorDefinitionRoundTrip(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()

	limited := descriptorDef("edge proxy", 60, 10, entry("path", "/files/*"), entry("remote_address", ""))
	limited.ShareThreshold, limited.LimitName, limited.Replaces, limited.DetailedMetric = true, "files", []string{"generic"}, true
	put, err := c.PutDefinition(ctx, limited, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "target:descriptor:edge%20proxy/path=%2Ffiles%2F*/remote_address:60"
	if put.Value.ID != id || put.Value.Name != "edge%20proxy/path=%2Ffiles%2F*/remote_address" {
		t.Fatalf("PUT stored id %q name %q, want %q", put.Value.ID, put.Value.Name, id)
	}
	got, err := c.GetDefinition(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Domain != "edge proxy" || len(got.Descriptor) != 2 || got.Descriptor[0] != entry("path", "/files/*") ||
		got.Descriptor[1] != entry("remote_address", "") || !got.ShareThreshold || got.LimitName != "files" ||
		len(got.Replaces) != 1 || got.Replaces[0] != "generic" || !got.DetailedMetric || *got.MaxRequests != 10 {
		t.Errorf("GET = %+v, want the fields sent", got)
	}

	unlimited := descriptorDef("edge proxy", 1, 0, entry("remote_address", "10.0.0.1"))
	unlimited.Unlimited = true
	unlimited.Name = ratelimit.DescriptorName("edge proxy", unlimited.Descriptor) // both given, agreeing
	if _, err := c.PutDefinition(ctx, unlimited, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 {
		t.Fatalf("list by entity type descriptor: %d definitions, want 2", len(defs))
	}
	for _, d := range defs {
		if d.Key() == unlimited.Key() && (!d.Unlimited || d.MaxRequests != nil) {
			t.Errorf("unlimited descriptor listed as %+v", d)
		}
	}

	// The same state applied again: unchanged. A flag changed: configured.
	res := mustApply(t, c, client.State{Definitions: []ratelimit.Definition{limited, unlimited}}, client.ApplyOptions{})
	if res.Unchanged != 2 || res.Created+res.Updated != 0 {
		t.Errorf("re-apply: %+v, want 2 unchanged", res)
	}
	limited.ShareThreshold = false
	res = mustApply(t, c, client.State{Definitions: []ratelimit.Definition{limited}}, client.ApplyOptions{})
	if res.Updated != 1 {
		t.Errorf("apply with share_threshold dropped: %+v, want 1 updated", res)
	}
	if got, _ := c.GetDefinition(ctx, id); got.ShareThreshold {
		t.Error("share_threshold still set after the apply that dropped it")
	}
}

// TestDescriptorDefinitionBadInput: each is a 400 naming the field, and
// nothing is stored.
func TestDescriptorDefinitionBadInput(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	ok := func(mut func(*ratelimit.Definition)) ratelimit.Definition {
		d := descriptorDef("rl", 60, 10, entry("database", "users"))
		mut(&d)
		return d
	}
	tests := []struct {
		name  string
		def   ratelimit.Definition
		field string
	}{
		{"empty domain", ok(func(d *ratelimit.Definition) { d.Domain, d.Name = "", "/database=users" }), "name"},
		{"no entries", ok(func(d *ratelimit.Definition) { d.Descriptor = nil; d.Name = "rl" }), "name"},
		{"entry without key", ok(func(d *ratelimit.Definition) {
			d.Descriptor = []ratelimit.DescriptorEntry{{Value: "x"}}
			d.Name = "rl/=x"
		}), "name"},
		{"name not canonical", ok(func(d *ratelimit.Definition) { d.Domain, d.Descriptor, d.Name = "", nil, "rl/database=a b" }), "name"},
		{"name disagrees", ok(func(d *ratelimit.Definition) { d.Name = "rl/database=orders" }), "name"},
		{"no rate", ok(func(d *ratelimit.Definition) { d.MaxRequests = nil }), "max_requests"},
		{"unlimited with a rate", ok(func(d *ratelimit.Definition) { d.Unlimited = true }), "max_requests"},
		{"share_threshold without wildcard", ok(func(d *ratelimit.Definition) { d.ShareThreshold = true }), "share_threshold"},
		{"replaces itself", ok(func(d *ratelimit.Definition) { d.LimitName, d.Replaces = "a", []string{"a"} }), "replaces[0]"},
		{"descriptor field on a server", ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "kb", WindowSeconds: 60,
			MaxRequests: ptr(5), Enabled: true, DescriptorFields: ratelimit.DescriptorFields{Unlimited: true}}, "unlimited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.PutDefinition(ctx, tt.def, client.WriteOptions{})
			var pe *client.APIError
			if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
				t.Fatalf("put: %v, want a 400", err)
			}
			if !problemNames(pe, tt.field) {
				t.Errorf("the 400 names %+v, want field %q with a message about it", pe.Errors, tt.field)
			}
		})
	}
	if n := auditCount(t, env); n != 0 {
		t.Errorf("%d audit rows after refused writes", n)
	}
}
