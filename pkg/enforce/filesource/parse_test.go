package filesource_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const good = `# a state file as rlctl export writes it
apiVersion: rlctl/v1
kind: State
definitions:
  - axis: caller
    entity_type: group
    name: devs
    window_seconds: 60
    user_max_requests: 30
  - axis: target
    entity_type: mcp_server
    name: /srv/
    window_seconds: 60
    max_requests: 5
memberships:
  - subject_type: user
    subject: alice
    groups: [devs]
admins:
  - subject_type: user
    subject: root
`

func parse(t *testing.T, doc string) error {
	t.Helper()
	_, err := filesource.Parse("state.yaml", []byte(doc), filesource.Floors{User: 20, Agent: 10})
	return err
}

func TestParse(t *testing.T) {
	t.Parallel()
	st, err := filesource.Parse("state.yaml", []byte(good), filesource.Floors{User: 20, Agent: 10})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]ratelimit.Definition{}
	for _, d := range st.Definitions {
		ids[d.ID] = d
	}
	for _, id := range []string{"caller:group:devs:60", "target:mcp_server:srv:60", ratelimit.SentinelCallers, ratelimit.SentinelTargets} {
		d, ok := ids[id]
		if !ok {
			t.Errorf("definition %s missing; have %v", id, ids)
			continue
		}
		if !d.Enabled || d.Mode != ratelimit.ModeEnforce {
			t.Errorf("%s: enabled %v mode %q, want enabled enforce (the defaults)", id, d.Enabled, d.Mode)
		}
	}
	if len(st.Definitions) != 4 || len(st.Memberships) != 1 || st.Memberships[0].ID != "user:alice" || len(st.Admins) != 1 {
		t.Errorf("state = %+v", st)
	}
}

// TestParseSeveralDocumentsAndJSON: YAML documents are merged, a JSON file
// reads the same, and a listed sentinel is kept as the file says.
func TestParseSeveralDocumentsAndJSON(t *testing.T) {
	t.Parallel()
	multi := `definitions:
  - {axis: target, entity_type: mcp_server, name: a, window_seconds: 60, max_requests: 5}
---
# comments only
---
definitions:
  - {axis: quarantine, entity_type: group, name: quarantine-callers, window_seconds: 1, enabled: false}
memberships:
  - {subject_type: user, subject: bob, groups: [devs]}
`
	st, err := filesource.Parse("m.yaml", []byte(multi), filesource.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Definitions) != 3 || len(st.Memberships) != 1 {
		t.Fatalf("state = %+v", st)
	}
	for _, d := range st.Definitions {
		if d.ID == ratelimit.SentinelCallers && d.Enabled {
			t.Error("the file disabled the callers sentinel; it came back enabled")
		}
	}
	js := `{"apiVersion": "rlctl/v1", "definitions": [{"axis": "target", "entity_type": "mcp_server", "name": "a", "window_seconds": 60, "max_requests": 5}]}`
	st, err = filesource.Parse("s.json", []byte(js), filesource.Floors{})
	if err != nil || len(st.Definitions) != 3 {
		t.Fatalf("JSON: %+v, %v", st, err)
	}
}

// TestParseRefuses: each problem is refused with a message naming the
// document and the field.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, want string
	}{
		{"unknown field in a definition", "definitions:\n  - {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_request: 30}\n",
			"document 1: definitions[0].user_max_request: unknown field"},
		{"unknown section", "definition: []\n", "document 1: definition: unknown field"},
		{"wrong header", "apiVersion: v2\ndefinitions: []\n", `apiVersion: must be "rlctl/v1"`},
		{"wrong type", "definitions:\n  - {axis: caller, entity_type: group, name: g, window_seconds: sixty}\n",
			"document 1: definitions[0].window_seconds: must be an integer, not string"},
		{"a rule", "definitions:\n  - {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 1}\n",
			"document 1: definitions[0].user_max_requests"},
		{"duplicate across documents", "memberships: [{subject_type: user, subject: a, groups: [g]}]\n---\nmemberships: [{subject_type: user, subject: a, groups: [g]}]\n",
			`document 2: memberships[0]: duplicate id "user:a", also at document 1: memberships[0]`},
		{"administrator in quarantine", "admins: [{subject_type: user, subject: root}]\nmemberships: [{subject_type: user, subject: root, groups: [quarantine-callers]}]\n",
			"user:root is an administrator and cannot be quarantined"},
		{"not a mapping", "- a\n- b\n", "document 1: must be a mapping"},
		{"bad YAML", "definitions: [\n", "document 1:"},
		{"duplicate key", "definitions: []\ndefinitions: []\n", `key "definitions" already set`},
		{"empty file", "# nothing yet\n", "no definitions, memberships or admins section"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := parse(t, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to say %q", err, c.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "state.yaml") {
				t.Errorf("err = %v does not name the file", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("definitions: []\n---\nadmins: []\n"))
	f.Add([]byte(`{"definitions": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := filesource.Parse("f", data, filesource.Floors{})
		if err == nil && len(st.Definitions) < 2 {
			t.Errorf("a parsed state without the sentinels: %+v", st)
		}
	})
}

// TestParseAlgorithms: a state file's definitions carry their algorithm
// and bursts through, and the algorithm rules refuse what they refuse in
// the API, naming the field.
func TestParseAlgorithms(t *testing.T) {
	t.Parallel()
	doc := `definitions:
  - axis: target
    entity_type: mcp_server
    name: srv
    window_seconds: 60
    max_requests: 120
    algorithm: token_bucket
    burst: 30
  - axis: caller
    entity_type: group
    name: devs
    window_seconds: 10
    user_max_requests: 30
    algorithm: sliding_window
`
	st, err := filesource.Parse("state.yaml", []byte(doc), filesource.Floors{User: 20, Agent: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Definitions {
		switch d.ID {
		case "target:mcp_server:srv:60":
			if d.Algorithm != ratelimit.AlgorithmTokenBucket || d.Burst == nil || *d.Burst != 30 {
				t.Errorf("%s: algorithm %q burst %v, want token_bucket 30", d.ID, d.Algorithm, d.Burst)
			}
		case "caller:group:devs:10":
			if d.Algorithm != ratelimit.AlgorithmSlidingWindow {
				t.Errorf("%s: algorithm %q, want sliding_window", d.ID, d.Algorithm)
			}
		}
	}
	bad := strings.Replace(doc, "    algorithm: token_bucket\n", "", 1)
	if err := parse(t, bad); err == nil || !strings.Contains(err.Error(), "definitions[0].burst") ||
		!strings.Contains(err.Error(), "not allowed with algorithm fixed_window") {
		t.Errorf("a burst on a fixed window: %v, want definitions[0].burst refused", err)
	}
}

// TestParseLease: a state file's definitions carry their lease through
// (auto as none), and an unknown one is refused naming the field.
func TestParseLease(t *testing.T) {
	t.Parallel()
	doc := `definitions:
  - {axis: target, entity_type: mcp_server, name: billing, window_seconds: 3600, max_requests: 1000, lease: never}
  - {axis: target, entity_type: mcp_server, name: hot, window_seconds: 60, max_requests: 100000, lease: always}
  - {axis: target, entity_type: mcp_server, name: plain, window_seconds: 60, max_requests: 100, lease: auto}
`
	st, err := filesource.Parse("state.yaml", []byte(doc), filesource.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"target:mcp_server:billing:3600": "never", "target:mcp_server:hot:60": "always", "target:mcp_server:plain:60": ""}
	for _, d := range st.Definitions {
		if w, ok := want[d.ID]; ok && d.Lease != w {
			t.Errorf("%s: lease %q, want %q", d.ID, d.Lease, w)
		}
	}
	if err := parse(t, strings.Replace(doc, "lease: never", "lease: sometimes", 1)); err == nil ||
		!strings.Contains(err.Error(), `definitions[0].lease: must be one of auto, never, always (got "sometimes")`) {
		t.Errorf("lease sometimes: %v, want definitions[0].lease refused", err)
	}
}
