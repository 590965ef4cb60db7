package applydoc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/applydoc"
)

// messages is every problem of a file's parts, and what ended them.
func messages(parts []applydoc.Part) []string {
	var out []string
	for _, p := range parts {
		for _, fe := range p.Problems {
			out = append(out, fe.Message)
		}
		if p.Err != nil {
			out = append(out, "fatal: "+p.Err.Error())
		}
	}
	return out
}

func TestDecodeNamesUnknownFieldsByPlace(t *testing.T) {
	t.Parallel()
	def := `{"axis": "caller", "entity_type": "group", "name": "g%d", "window_seconds": 60, "user_max_requests": 5}`
	var defs []string
	for i := range 3 {
		defs = append(defs, fmt.Sprintf(def, i))
	}
	defs = append(defs, `{"axis": "caller", "entity_type": "group", "name": "g3", "window_seconds": 60, "user_max_requests": 5, "colour": "red"}`)
	jsonDoc := `{"definitions": [` + strings.Join(defs, ",") + `]}`
	yamlDoc := "definitions:\n- {axis: caller, entity_type: group, name: g0, window_seconds: 60}\n" +
		"- {axis: caller, entity_type: group, name: g1, window_seconds: 60}\n" +
		"- {axis: caller, entity_type: group, name: g2, window_seconds: 60}\n" +
		"- axis: caller\n  entity_type: group\n  name: g3\n  window_seconds: 60\n  colour: red\n"
	want := "definitions[3].colour: unknown field"
	for name, parts := range map[string][]applydoc.Part{
		"JSON": applydoc.DecodeFile([]byte(jsonDoc), applydoc.FormatJSON, applydoc.Options{}),
		"YAML": applydoc.DecodeFile([]byte(yamlDoc), applydoc.FormatYAML, applydoc.Options{}),
	} {
		if got := messages(parts); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	res, err := applydoc.Decode(strings.NewReader(jsonDoc), applydoc.Options{Mode: applydoc.ModeRequest, Validate: true})
	if err != nil || res.Total != 1 || res.Problems[0].Field != "definitions[3].colour" || res.Problems[0].Message != want {
		t.Errorf("request: %+v, %v; want one problem at definitions[3].colour", res.Problems, err)
	}
}

func TestDecodeFileYAMLDocuments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		docs     int
		want     string // a problem, or "" for none
	}{
		{"one document", "admins: []\n", 1, ""},
		{"markers and comment-only documents dropped", "---\nadmins: []\n---\n# only a comment\n---\nmemberships: []\n...\n", 2, ""},
		{"a document on the marker line", "--- {definitions: []}\n", 1, ""},
		{"no documents", "# nothing\n", 1, ""},
		{"a key given twice", "definitions: []\ndefinitions: []\n", 1, `yaml: line 2: key "definitions" already set in map`},
		{"a nested key given twice", "admins:\n- {subject_type: user, subject: a, subject: b}\n", 1, `already set in map`},
		{"a syntax error ends the stream", "admins: []\n---\nadmins: [\n", 2, "fatal: yaml: line"},
		{"a wrong header", "apiVersion: v2\n", 1, `apiVersion: must be "rlctl/v1", not "v2"`},
		{"YAML 1.1 booleans", "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60, enabled: no}\n", 1, ""},
		{"anchors and merge keys", "x: &d {axis: caller, entity_type: group, window_seconds: 60}\n", 1, "x: unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parts := applydoc.DecodeFile([]byte(tc.in), applydoc.FormatYAML, applydoc.Options{})
			got := messages(parts)
			if len(parts) != tc.docs {
				t.Errorf("%d documents, want %d (%q)", len(parts), tc.docs, got)
			}
			if tc.want == "" && len(got) > 0 {
				t.Errorf("problems %q, want none", got)
			}
			if tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestDecodeFileYAMLValues(t *testing.T) {
	t.Parallel()
	parts := applydoc.DecodeFile([]byte("definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60, enabled: off, description: 'yes'}\n"+
		"- &m {axis: target, entity_type: mcp_server, name: m, window_seconds: 60, max_requests: 5}\n- *m\n"), applydoc.FormatYAML, applydoc.Options{})
	if msgs := messages(parts); len(msgs) > 0 {
		t.Fatal(msgs)
	}
	d := parts[0].Doc.Definitions
	if len(d) != 3 || d[0].Enabled || d[0].Description != "yes" || d[2].Name != "m" || *d[2].MaxRequests != 5 {
		t.Errorf("definitions %+v", d)
	}
	// A merge key (<<) takes the anchored mapping's fields.
	parts = applydoc.DecodeFile([]byte("definitions:\n- {<<: {axis: caller, entity_type: group, window_seconds: 60}, name: g}\n"), applydoc.FormatYAML, applydoc.Options{})
	if msgs := messages(parts); len(msgs) > 0 || parts[0].Doc.Definitions[0].WindowSeconds != 60 {
		t.Errorf("merge key: %q %+v", msgs, parts[0].Doc)
	}
}

// An alias bomb (each level doubling the last) is refused, not expanded.
func TestDecodeFileYAMLAliasesAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
	}
	parts := applydoc.DecodeFile([]byte(b.String()), applydoc.FormatYAML, applydoc.Options{})
	var fe *applydoc.FatalError
	if len(parts) != 1 || !errors.As(parts[0].Err, &fe) || !strings.Contains(fe.Message, "excessive aliasing") {
		t.Errorf("parts %+v, want excessive aliasing", parts)
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	req := applydoc.Options{Mode: applydoc.ModeRequest, Validate: true, MaxProblems: 100}
	cases := []struct {
		name, body string
		field, msg string // the *FatalError
	}{
		{"empty", "", "", "request body is empty; a JSON object is required"},
		{"not an object", "[]", "", "request body must be a JSON object, not an array"},
		{"unknown field", `{"colour": 1}`, "colour", "colour: unknown field"},
		{"given twice", `{"admins": [], "admins": []}`, "admins", "admins: given twice"},
		{"a section not an array", `{"admins": "x"}`, "admins", "admins: must be an array (or null to leave it alone), not a string"},
		{"a flag not a boolean", `{"prune": 1}`, "prune", "prune: must be true or false, not number"},
		{"two values", `{} {}`, "", "request body holds more than one JSON value"},
		{"a state header is not a request field", `{"kind": "State"}`, "kind", "kind: unknown field"},
	}
	for _, tc := range cases {
		_, err := applydoc.Decode(strings.NewReader(tc.body), req)
		var fe *applydoc.FatalError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Message != tc.msg {
			t.Errorf("%s: %#v, want field %q message %q", tc.name, err, tc.field, tc.msg)
		}
	}
	// Malformed JSON keeps its error, for the caller to word.
	var syntax *json.SyntaxError
	if _, err := applydoc.Decode(strings.NewReader(`{"admins": [}`), req); !errors.As(err, &syntax) {
		t.Errorf("malformed: %v, want a *json.SyntaxError", err)
	}
	// Junk: the first MaxProblems problems, all of them counted, no object kept.
	body := `{"definitions":[` + strings.TrimSuffix(strings.Repeat("1,", 1000), ",") + `]}`
	res, err := applydoc.Decode(strings.NewReader(body), req)
	if err != nil || len(res.Problems) != 100 || res.Total != 1000 || len(res.Doc.Definitions) != 0 ||
		res.Problems[0].Message != "definitions[0]: must be an object, not number" {
		t.Errorf("junk: %d problems listed, %d counted, %d kept, first %+v, %v", len(res.Problems), res.Total, len(res.Doc.Definitions), res.Problems[0], err)
	}
	// Flags and a valid apply.
	res, err = applydoc.Decode(strings.NewReader(`{"prune": true, "dry_run": true, "admins": [{"subject_type": "user", "subject": "a"}], "memberships": null}`), req)
	if err != nil || res.Total != 0 || !res.Prune || !res.DryRun || len(res.Doc.Admins) != 1 || res.Doc.Memberships != nil || res.Doc.Definitions != nil {
		t.Errorf("valid: %+v, %v", res, err)
	}
}

// FuzzDecodeFile (moved from the CLI's FuzzLoad): whatever comes in, the
// decoder does not panic, and what it accepts survives being written back
// as JSON and read again.
func FuzzDecodeFile(f *testing.F) {
	for _, s := range []string{
		"definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60}\n",
		`{"memberships": [{"subject_type": "user", "subject": "a", "groups": ["g"], "quarantine_expires_at": "2030-01-01T00:00:00Z"}]}`,
		"admins: []\n---\ndefinitions: null\n...\n",
		"apiVersion: rlctl/v1\nkind: State\nmemberships: [{subject_type: user, subject: 'a:b', groups: [x]}]\n",
		"{\"definitions\": [{}]} ",
		"--- \n--- {definitions: []}\n",
		"a: &a [1, 2]\nb: {<<: *a}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		parts := applydoc.DecodeFile([]byte(in), applydoc.Sniff([]byte(in)), applydoc.Options{})
		for _, p := range parts {
			if p.Err != nil || p.Total > 0 {
				return
			}
		}
		for _, p := range parts {
			p.Doc.APIVersion, p.Doc.Kind = applydoc.APIVersion, applydoc.Kind
			x, err := json.Marshal(p.Doc)
			if err != nil {
				t.Fatalf("write back: %v", err)
			}
			again := applydoc.DecodeFile(x, applydoc.FormatJSON, applydoc.Options{})
			if len(again) != 1 || again[0].Err != nil || again[0].Total > 0 {
				t.Fatalf("accepted %q, but not its JSON %s: %q", in, x, messages(again))
			}
			y, _ := json.Marshal(again[0].Doc)
			if !bytes.Equal(x, y) {
				t.Fatalf("round trip changed the state:\n%s\n%s", x, y)
			}
		}
	})
}

// FuzzDecodeRequest: whatever the body, Decode does not panic, keeps at
// most MaxProblems problems, counts at least those, and keeps no object
// once there is one.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"definitions":[{"axis":"caller","entity_type":"group","name":"g","window_seconds":60,"user_max_requests":5}]}`,
		`{"memberships":[{"subject_type":"user","subject":"a","groups":["g"]}],"prune":true}`,
		`{"definitions":[1,2,3]}`, `{"admins":[{"subject":1}]}`, `[]`, ``, `{"x":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		res, err := applydoc.Decode(strings.NewReader(body), applydoc.Options{Mode: applydoc.ModeRequest, Validate: true, MaxProblems: 5})
		if len(res.Problems) > 5 || res.Total < len(res.Problems) {
			t.Fatalf("%d problems kept, %d counted", len(res.Problems), res.Total)
		}
		if err == nil && res.Total > 0 && len(res.Doc.Definitions)+len(res.Doc.Memberships)+len(res.Doc.Admins) > 0 {
			t.Fatalf("objects kept after a problem: %+v", res.Doc)
		}
		for _, p := range res.Problems {
			if p.Field == "" || !strings.HasPrefix(p.Message, p.Field) {
				t.Fatalf("problem %+v does not name its place", p)
			}
		}
	})
}
