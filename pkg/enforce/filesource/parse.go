package filesource

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The header of a state document (rlctl export writes it; both fields are
// optional and checked when present).
const (
	APIVersion = applydoc.APIVersion
	Kind       = applydoc.Kind
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

// Parse reads a state document in the format of rlctl apply and rlctl
// export with the decoder they use (internal/applydoc): YAML or JSON,
// possibly several YAML documents whose sections are concatenated, each
// with an optional header (apiVersion rlctl/v1, kind State) and the
// sections definitions, memberships and admins. Reading is strict: an
// unknown field, a value of the wrong type, a definition or membership the
// rules of rlapi refuse, a duplicate id, or an administrator in quarantine
// is an error naming the document and field, and every problem is
// reported together (a *ParseError). A file is the whole state: an absent
// section is empty, but a file with no section at all (empty, or comments
// only) is refused. The two quarantine sentinels are added, enabled,
// unless the file names them (to disable one, list it with enabled:
// false), as a fresh rlapi database holds them.
func Parse(name string, data []byte, floors Floors) (enforce.State, error) {
	var (
		st    enforce.State
		probs []string
	)
	opts := applydoc.Options{Validate: true, Floors: validate.Floors{User: floors.User, Agent: floors.Agent}, MaxProblems: maxProblems}
	parts := applydoc.DecodeFile(data, applydoc.Sniff(data), opts)
	sections := false
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
	adminAt := map[string]bool{}
	for n, p := range parts {
		part := fmt.Sprintf("document %d", n+1)
		for _, fe := range p.Problems {
			probs = append(probs, part+": "+fe.Message)
		}
		if more := p.Total - len(p.Problems); more > 0 {
			probs = append(probs, fmt.Sprintf("%s: and %d more problems", part, more))
		}
		if p.Err != nil {
			probs = append(probs, part+": "+p.Err.Error())
		}
		doc := p.Doc
		sections = sections || !doc.Empty()
		for i, d := range doc.Definitions {
			if !dupe("definitions", d.ID, fmt.Sprintf("%s: definitions[%d]", part, i)) {
				st.Definitions = append(st.Definitions, d)
			}
		}
		for i, m := range doc.Memberships {
			if !dupe("memberships", m.ID, fmt.Sprintf("%s: memberships[%d]", part, i)) {
				st.Memberships = append(st.Memberships, m)
			}
		}
		for i, a := range doc.Admins {
			if !dupe("admins", a.Key(), fmt.Sprintf("%s: admins[%d]", part, i)) {
				st.Admins = append(st.Admins, a)
				adminAt[a.Key()] = true
			}
		}
	}
	if len(probs) == 0 && !sections {
		// An empty file is far more often one caught mid-write, or
		// truncated, than a wish to lift every limit: say so explicitly
		// with "definitions: []".
		probs = append(probs, "no definitions, memberships or admins section (an empty state is written definitions: [])")
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
