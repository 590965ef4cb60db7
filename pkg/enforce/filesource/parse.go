package filesource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The header of a state document (rlctl export writes it; both fields are
// optional and checked when present).
const (
	APIVersion = "rlctl/v1"
	Kind       = "State"
)

// maxProblems bounds how many problems a ParseError spells out.
const maxProblems = 20

// ParseError lists every problem found in a state file.
type ParseError struct {
	File     string
	Problems []string
}

func (e *ParseError) Error() string {
	if len(e.Problems) == 1 {
		return e.File + ": " + e.Problems[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", e.File, len(e.Problems))
	for _, p := range e.Problems[:min(len(e.Problems), maxProblems)] {
		b.WriteString("\n  " + p)
	}
	if n := len(e.Problems) - maxProblems; n > 0 {
		fmt.Fprintf(&b, "\n  and %d more", n)
	}
	return b.String()
}

// Floors are the per-minute minimums on caller limits of windows up to a
// minute, as rlapi applies them (validate.DefaultFloors: 20 for users, 10
// for agents).
type Floors struct {
	User, Agent int
}

// document is one YAML or JSON document of a state file, its sections
// still raw so each element's problems can name its place.
type document struct {
	APIVersion  *string           `json:"apiVersion"`
	Kind        *string           `json:"kind"`
	Definitions []json.RawMessage `json:"definitions"`
	Memberships []json.RawMessage `json:"memberships"`
	Admins      []json.RawMessage `json:"admins"`
}

// Parse reads a state document in the format of rlctl apply and rlctl
// export: YAML or JSON (JSON is read as YAML), possibly several YAML
// documents whose sections are concatenated, each with an optional header
// (apiVersion rlctl/v1, kind State) and the sections definitions,
// memberships and admins. Reading is strict: an unknown field, a value of
// the wrong type, a definition or membership the rules of rlapi refuse, a
// duplicate id, or an administrator in quarantine is an error naming the
// document and field, and every problem is reported together (a
// *ParseError). A file is the whole state: an absent section is empty,
// but a file with no section at all (empty, or comments only) is refused.
// The two quarantine sentinels are added, enabled, unless the file names
// them (to disable one, list it with enabled: false), as a fresh rlapi
// database holds them.
func Parse(name string, data []byte, floors Floors) (enforce.State, error) {
	var (
		st    enforce.State
		probs []string
	)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var defs, mems, admins []located
	sections := false
	for n := 1; ; n++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		part := fmt.Sprintf("document %d", n)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %s", part, strings.TrimPrefix(err.Error(), "yaml: ")))
			break // the stream cannot be read on
		}
		doc, p := decodeDocument(part, &node)
		probs = append(probs, p...)
		sections = sections || doc.Definitions != nil || doc.Memberships != nil || doc.Admins != nil
		for i, raw := range doc.Definitions {
			defs = append(defs, located{fmt.Sprintf("%s: definitions[%d]", part, i), raw})
		}
		for i, raw := range doc.Memberships {
			mems = append(mems, located{fmt.Sprintf("%s: memberships[%d]", part, i), raw})
		}
		for i, raw := range doc.Admins {
			admins = append(admins, located{fmt.Sprintf("%s: admins[%d]", part, i), raw})
		}
	}
	if len(probs) == 0 && !sections {
		// An empty file is far more often one caught mid-write, or
		// truncated, than a wish to lift every limit: say so explicitly
		// with "definitions: []".
		probs = append(probs, "no definitions, memberships or admins section (an empty state is written definitions: [])")
	}
	f := validate.Floors{User: floors.User, Agent: floors.Agent}
	seen := map[string]string{}
	dupe := func(section, id, where string) bool {
		k := section + "\x00" + id
		if first, ok := seen[k]; ok {
			probs = append(probs, fmt.Sprintf("%s: duplicate id %q, also at %s", where, id, first))
			return true
		}
		seen[k] = where
		return false
	}
	for _, l := range defs {
		var d ratelimit.Definition
		if !decodeElement(l, &d, &probs) {
			continue
		}
		n, err := validate.Definition(d, f)
		if err != nil {
			probs = append(probs, ruleProblems(l.where, err)...)
			continue
		}
		if !dupe("definitions", n.ID, l.where) {
			st.Definitions = append(st.Definitions, n)
		}
	}
	for _, l := range mems {
		var m ratelimit.Membership
		if !decodeElement(l, &m, &probs) {
			continue
		}
		n, err := validate.Membership(m)
		if err != nil {
			probs = append(probs, ruleProblems(l.where, err)...)
			continue
		}
		if !dupe("memberships", n.ID, l.where) {
			st.Memberships = append(st.Memberships, n)
		}
	}
	adminAt := map[string]bool{}
	for _, l := range admins {
		var a ratelimit.Admin
		if !decodeElement(l, &a, &probs) {
			continue
		}
		n, err := validate.Admin(a)
		if err != nil {
			probs = append(probs, ruleProblems(l.where, err)...)
			continue
		}
		if !dupe("admins", n.Key(), l.where) {
			st.Admins = append(st.Admins, n)
			adminAt[n.Key()] = true
		}
	}
	for i, m := range st.Memberships {
		if adminAt[m.Key()] && m.HasGroup(ratelimit.GroupQuarantineCallers) {
			probs = append(probs, fmt.Sprintf("membership %s (%d of the file): groups: %s is an administrator and cannot be quarantined",
				m.Key(), i+1, m.Key()))
		}
	}
	if len(probs) > 0 {
		return enforce.State{}, &ParseError{File: name, Problems: probs}
	}
	for _, s := range sentinels() {
		if _, named := seen["definitions\x00"+s.ID]; !named {
			st.Definitions = append(st.Definitions, s)
		}
	}
	return st, nil
}

// located is one raw element of a section and where it was.
type located struct {
	where string
	raw   json.RawMessage
}

// decodeDocument turns one YAML document into its raw sections, checking
// the header and refusing unknown top-level fields.
func decodeDocument(part string, node *yaml.Node) (document, []string) {
	var v any
	if err := node.Decode(&v); err != nil {
		return document{}, []string{fmt.Sprintf("%s: %s", part, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if v == nil {
		return document{}, nil // an empty document (comments only)
	}
	if _, ok := v.(map[string]any); !ok {
		return document{}, []string{fmt.Sprintf("%s: must be a mapping with apiVersion, kind, definitions, memberships and admins", part)}
	}
	j, err := json.Marshal(v)
	if err != nil {
		return document{}, []string{fmt.Sprintf("%s: %v", part, err)}
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return document{}, []string{fmt.Sprintf("%s: %s", part, jsonMessage(err))}
	}
	var probs []string
	if doc.APIVersion != nil && *doc.APIVersion != APIVersion {
		probs = append(probs, fmt.Sprintf("%s: apiVersion: must be %q, not %q", part, APIVersion, *doc.APIVersion))
	}
	if doc.Kind != nil && *doc.Kind != Kind {
		probs = append(probs, fmt.Sprintf("%s: kind: must be %q, not %q", part, Kind, *doc.Kind))
	}
	return doc, probs
}

// decodeElement decodes one element strictly, recording its problem.
func decodeElement[T any](l located, v *T, probs *[]string) bool {
	dec := json.NewDecoder(bytes.NewReader(l.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		*probs = append(*probs, fmt.Sprintf("%s: %s", l.where, jsonMessage(err)))
		return false
	}
	return true
}

// ruleProblems words what validate found in one element, each naming its
// field: "document 1: definitions[2].user_max_requests: ...".
func ruleProblems(where string, err error) []string {
	var out []string
	for _, fe := range validate.Under(where, err) {
		out = append(out, fe.Message)
	}
	return out
}

// jsonMessage words a decoding error with the field it is about.
func jsonMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: must not be %s (%s expected)", typeErr.Field, typeErr.Value, typeErr.Type)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return strings.Trim(f, `"`) + ": unknown field"
	}
	return msg
}

// sentinels are the two quarantine kill switches, enabled, as the first
// migration creates them.
func sentinels() []ratelimit.Definition {
	return []ratelimit.Definition{
		{ID: ratelimit.SentinelCallers, Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup,
			Name: ratelimit.GroupQuarantineCallers, WindowSeconds: 1, Scope: "caller", Enabled: true, Mode: ratelimit.ModeEnforce},
		{ID: ratelimit.SentinelTargets, Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup,
			Name: ratelimit.GroupQuarantineTargets, WindowSeconds: 1, Scope: "target", Enabled: true, Mode: ratelimit.ModeEnforce},
	}
}
