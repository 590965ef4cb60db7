package state

import (
	"bytes"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestWriteYAMLObjectByObject: WriteYAML, which encodes one object at a
// time, writes each section as printer.MarshalYAML writes it whole
// (quoting, block scalars, empty and absent sections included).
func TestWriteYAMLObjectByObject(t *testing.T) {
	t.Parallel()
	n := 5
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var defs []ratelimit.Definition
	for _, v := range []string{"yes", "on", "1:20", "0x1F", "a b", "multi\nline", "#x", "- a", "plain", "y"} {
		d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 60, MaxRequests: &n, Enabled: true}
		d.Domain, d.Descriptor, d.Replaces = "edge", []ratelimit.DescriptorEntry{{Key: "k", Value: v}, {Key: "u"}}, []string{"a", v}
		d.Name = ratelimit.DescriptorName(d.Domain, d.Descriptor)
		defs = append(defs, d)
	}
	mems := []ratelimit.Membership{{SubjectType: "user", Subject: "yes", Groups: []string{"on", "b"}},
		{SubjectType: "user", Subject: "x", Groups: []string{}, QuarantineReason: "a: b", QuarantineExpiresAt: &expires}}
	for _, doc := range []Document{
		NewDocument(defs, mems, []ratelimit.Admin{{Subject: "no"}}),
		NewDocument(nil, nil, nil),
		{APIVersion: APIVersion, Kind: Kind, Definitions: defs},
	} {
		var want bytes.Buffer
		want.WriteString("apiVersion: " + doc.APIVersion + "\nkind: " + doc.Kind + "\n")
		for _, s := range []struct {
			key   string
			value any
			nil   bool
		}{{"definitions", doc.Definitions, doc.Definitions == nil}, {"memberships", doc.Memberships, doc.Memberships == nil}, {"admins", doc.Admins, doc.Admins == nil}} {
			if s.nil {
				continue
			}
			out, err := printer.MarshalYAML(map[string]any{s.key: s.value})
			if err != nil {
				t.Fatal(err)
			}
			want.Write(out)
		}
		var got bytes.Buffer
		if err := doc.WriteYAML(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("WriteYAML wrote\n%s\nwant (whole sections)\n%s", got.String(), want.String())
		}
	}
}
