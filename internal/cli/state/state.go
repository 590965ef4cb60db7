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
	"bufio"
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
// prints them (printer.MarshalYAML). Each object is encoded on its own: the
// YAML encoder keeps every event of a document until it ends, so a whole
// section in one go held hundreds of bytes per scalar of it.
func (d Document) WriteYAML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "apiVersion: %s\nkind: %s\n", d.APIVersion, d.Kind)
	if d.Definitions != nil {
		if err := writeSection(bw, applydoc.SectionDefinitions, d.Definitions); err != nil {
			return err
		}
	}
	if d.Memberships != nil {
		if err := writeSection(bw, applydoc.SectionMemberships, d.Memberships); err != nil {
			return err
		}
	}
	if d.Admins != nil {
		if err := writeSection(bw, applydoc.SectionAdmins, d.Admins); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeSection writes "key:" and the objects, each a list item of its own
// (what printer.MarshalYAML writes of the whole list, item by item), or
// "key: []".
func writeSection[T any](w io.Writer, key string, objects []T) error {
	if len(objects) == 0 {
		_, err := fmt.Fprintf(w, "%s: []\n", key)
		return err
	}
	if _, err := fmt.Fprintf(w, "%s:\n", key); err != nil {
		return err
	}
	for i := range objects {
		out, err := printer.MarshalYAML(objects[i : i+1])
		if err != nil {
			return fmt.Errorf("encode %s[%d]: %w", key, i, err)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}
