// Package applydoc is the declarative apply's document, shared by rlapi
// (POST /api/apply) and rlctl (apply, diff, export): its types, its strict
// decoder (JSON, and YAML of one or more documents) and the fields the
// server manages, which a document never sets and a comparison ignores.
//
// It imports neither net/http nor pgx: the API maps its errors to HTTP,
// and the CLI words them with the file they came from. pkg/client keeps
// its own wire types (it imports only the standard library).
package applydoc

import (
	"sort"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The header of a state document. Both are optional on input and checked
// when present.
const (
	APIVersion = "rlctl/v1"
	Kind       = "State"
)

// MaxBody caps the body of an apply (POST /api/apply answers 413 past it),
// and so the files rlctl apply and rlctl import read: larger ones are
// refused before they are parsed. 10,000 definitions and 100,000
// memberships are about 15 MiB of JSON, and applying them peaks the heap
// (rlapi and the benchmark's client in one process) at about 230 MiB, some
// 15 times the body: the cap leaves room for twice that state, and keeps
// the largest apply near half a gigabyte. (It was 256 MiB, which valid
// objects could have turned into gigabytes.) A body of junk costs far
// less: no object is kept once one has a problem, and rlapi keeps a
// bounded number of problems.
const MaxBody = 32 << 20

// The sections of a document, in the order the request names them.
const (
	SectionDefinitions = "definitions"
	SectionMemberships = "memberships"
	SectionAdmins      = "admins"
)

// Document is a state file, and the desired state of an apply. Nil
// sections are absent (left alone by apply); empty ones are present (with
// prune, everything of their kind goes).
type Document struct {
	APIVersion  string                 `json:"apiVersion"`
	Kind        string                 `json:"kind"`
	Definitions []ratelimit.Definition `json:"definitions"`
	Memberships []ratelimit.Membership `json:"memberships"`
	Admins      []ratelimit.Admin      `json:"admins"`
}

// Empty reports whether d has no section at all.
func (d Document) Empty() bool {
	return d.Definitions == nil && d.Memberships == nil && d.Admins == nil
}

// ServerFields are the JSON fields the server sets on every write (ids,
// versions, timestamps, authors): they say nothing about what a change
// changed, so comparisons leave them out, and a document never carries
// them. This is the one list; rlapi's dry runs and rlctl's change lines
// both use it.
func ServerFields() []string {
	return []string{"id", "version", "created_at", "created_by", "updated_at", "updated_by"}
}

// NewDocument turns what the server lists into a document: sorted by id,
// without the fields the server sets (ServerFields, and a definition's
// scope, derived from its name; and the algorithm when it is the default,
// fixed_window), so that applying it back changes nothing.
// Nil lists become empty, present sections.
func NewDocument(defs []ratelimit.Definition, mems []ratelimit.Membership, admins []ratelimit.Admin) Document {
	doc := Document{APIVersion: APIVersion, Kind: Kind,
		Definitions: make([]ratelimit.Definition, len(defs)),
		Memberships: make([]ratelimit.Membership, len(mems)),
		Admins:      make([]ratelimit.Admin, len(admins)),
	}
	for i, d := range defs {
		d.ID, d.Version, d.CreatedAt, d.UpdatedAt, d.UpdatedBy, d.Scope = "", 0, nil, nil, "", ""
		if d.AlgorithmOrDefault() == ratelimit.AlgorithmFixedWindow {
			// The default goes unsaid, as in the files written before
			// algorithms existed: they export byte for byte as they did.
			d.Algorithm = ""
		}
		if d.PerOrDefault() == ratelimit.PerCaller {
			d.Per = "" // the default goes unsaid too
		}
		if d.LeaseOrDefault() == ratelimit.LeaseAuto {
			d.Lease = "" // and lease auto
		}
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
	sortByKey(doc.Definitions, ratelimit.Definition.Key)
	sortByKey(doc.Memberships, ratelimit.Membership.Key)
	sortByKey(doc.Admins, ratelimit.Admin.Key)
	return doc
}

// sortByKey sorts s by key, computing each key once: Key builds a
// string, and a sort calling it per comparison built some forty per
// object of a large document.
func sortByKey[T any](s []T, key func(T) string) {
	keys := make([]string, len(s))
	for i := range s {
		keys[i] = key(s[i])
	}
	sort.Sort(byKey[T]{s, keys})
}

type byKey[T any] struct {
	s    []T
	keys []string
}

func (b byKey[T]) Len() int           { return len(b.s) }
func (b byKey[T]) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey[T]) Swap(i, j int) {
	b.s[i], b.s[j] = b.s[j], b.s[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}
