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

// NewDocument turns what the server lists into a document
// (applydoc.NewDocument): sorted by id, without the fields the server sets,
// so that applying it back changes nothing.
func NewDocument(defs []ratelimit.Definition, mems []ratelimit.Membership, admins []ratelimit.Admin) Document {
	return Document(applydoc.NewDocument(defs, mems, admins))
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
