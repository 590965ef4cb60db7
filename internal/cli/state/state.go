// Package state holds rlctl's declarative commands: export writes the
// server's whole state as a document, apply makes the server match one (or
// several files merged), and diff is apply as a server dry run that exits 6
// when anything would change (kubectl apply/diff, decK dump/sync/diff).
//
// diff, apply --dry-run=server, apply --dry-run=client and apply share one
// code path (applyRun) and one printer (printResult); they differ only in
// where the ApplyResult comes from.
package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The header of a state document. Both are optional on input and checked
// when present.
const (
	APIVersion = applydoc.APIVersion
	Kind       = applydoc.Kind
)

// Document is a state file (applydoc.Document, the one apply document
// type), with the CLI's writers. Nil sections are absent (left alone by
// apply); empty ones are present.
type Document applydoc.Document

// NewDocument turns what the server lists into a document: sorted by id,
// without the fields the server sets (id, version, timestamps, authors, a
// definition's derived scope), so that applying it back changes nothing.
// Nil lists become empty, present sections.
func NewDocument(defs []ratelimit.Definition, mems []ratelimit.Membership, admins []ratelimit.Admin) Document {
	doc := Document{APIVersion: APIVersion, Kind: Kind,
		Definitions: make([]ratelimit.Definition, len(defs)),
		Memberships: make([]ratelimit.Membership, len(mems)),
		Admins:      make([]ratelimit.Admin, len(admins)),
	}
	for i, d := range defs {
		d.ID, d.Version, d.CreatedAt, d.UpdatedAt, d.UpdatedBy, d.Scope = "", 0, nil, nil, "", ""
		doc.Definitions[i] = d
	}
	for i, m := range mems {
		m.ID, m.Version, m.CreatedAt, m.UpdatedAt = "", 0, nil, nil
		doc.Memberships[i] = m
	}
	for i, a := range admins {
		a.CreatedAt, a.CreatedBy = nil, ""
		doc.Admins[i] = a
	}
	slices.SortFunc(doc.Definitions, func(a, b ratelimit.Definition) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortFunc(doc.Memberships, func(a, b ratelimit.Membership) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortFunc(doc.Admins, func(a, b ratelimit.Admin) int { return strings.Compare(a.Key(), b.Key()) })
	return doc
}

// State is the document's desired state, for client.Apply.
func (d Document) State() client.State {
	return client.State{Definitions: d.Definitions, Memberships: d.Memberships, Admins: d.Admins}
}

// WriteJSON writes the document as indented JSON.
func (d Document) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteYAML writes the document as YAML: the header first, then each
// section (absent ones left out), each object's fields in the order -o json
// prints them (printer.MarshalYAML).
func (d Document) WriteYAML(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", d.APIVersion, d.Kind)
	sections := []struct {
		key    string
		value  any
		absent bool
	}{
		{"definitions", d.Definitions, d.Definitions == nil},
		{"memberships", d.Memberships, d.Memberships == nil},
		{"admins", d.Admins, d.Admins == nil},
	}
	for _, s := range sections {
		if s.absent {
			continue
		}
		out, err := printer.MarshalYAML(map[string]any{s.key: s.value})
		if err != nil {
			return fmt.Errorf("encode %s: %w", s.key, err)
		}
		b.Write(out)
	}
	_, err := w.Write(b.Bytes())
	return err
}
