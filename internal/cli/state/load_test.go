package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/state"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func loadStdin(t *testing.T, in string) (*state.Loaded, error) {
	t.Helper()
	return state.Load([]string{state.Stdin}, strings.NewReader(in))
}

func TestLoadSections(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		in                   string
		defs, mems, admins   int // -1: absent
		firstEnabled, header bool
	}{
		{"YAML, absent and empty", "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 30}\nmemberships: []\nadmins: null\n", 1, 0, -1, true, false},
		{"JSON with a byte order mark", "\ufeff" + `{"definitions": []}`, 0, -1, -1, false, false},
		{"JSON", `{"apiVersion": "rlctl/v1", "kind": "State", "admins": [{"subject_type": "user", "subject": "a"}]}`, -1, -1, 1, false, true},
		{"enabled false is kept", "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 30, enabled: false}\n", 1, -1, -1, false, false},
		{"documents merge", "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 30}\n---\n# a comment only\n---\ndefinitions:\n- {axis: caller, entity_type: group, name: h, window_seconds: 60, user_max_requests: 30}\nmemberships: []\n...\n", 2, 0, -1, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := loadStdin(t, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			count := func(n int, isNil bool) int {
				if isNil {
					return -1
				}
				return n
			}
			d := l.Doc
			if got := count(len(d.Definitions), d.Definitions == nil); got != tc.defs {
				t.Errorf("definitions: %d, want %d", got, tc.defs)
			}
			if got := count(len(d.Memberships), d.Memberships == nil); got != tc.mems {
				t.Errorf("memberships: %d, want %d", got, tc.mems)
			}
			if got := count(len(d.Admins), d.Admins == nil); got != tc.admins {
				t.Errorf("admins: %d, want %d", got, tc.admins)
			}
			if len(d.Definitions) > 0 && d.Definitions[0].Enabled != tc.firstEnabled {
				t.Errorf("enabled = %v, want %v (absent means enabled)", d.Definitions[0].Enabled, tc.firstEnabled)
			}
		})
	}
}

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"duplicate in a later document", "definitions:\n- {axis: target, entity_type: mcp_server, name: g, window_seconds: 60, max_requests: 1}\n---\ndefinitions:\n- {axis: target, entity_type: mcp_server, name: /g/, window_seconds: 60, max_requests: 2}\n",
			`<stdin> (document 2): definitions[0]: duplicate id "target:mcp_server:g:60", also at <stdin> (document 1): definitions[0]`},
		{"JSON syntax", "{\n  \"definitions\": [\n    {\"axis\": }\n  ]\n}", "<stdin>: line 3, column 14: invalid character '}'"},
		{"truncated JSON", `{"definitions": [`, "<stdin>: unexpected end of the document"},
		{"two JSON values", `{} {}`, "<stdin>: more than one JSON value"},
		{"a list at the top", "- a\n- b\n", "<stdin>: must be a mapping with apiVersion, kind, definitions, memberships and admins, not a list"},
		{"a section of the wrong type", "memberships: 3\n", "<stdin>: memberships: must be a list (or null to leave it alone), not a number"},
		{"an element of the wrong type", "admins: [3]\n", "<stdin>: admins[0]: must be an object, not number"},
		{"duplicate YAML key", "definitions: []\ndefinitions: []\n", `already set in map`},
		{"nested unknown field", `{"definitions": [{"axis": "caller", "members": [], "x": {"y": 1}}]}`, "definitions[0].x: unknown field"},
		{"empty", "", "<stdin>: no definitions, memberships or admins section: nothing to apply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadStdin(t, tc.in)
			var le *state.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LoadError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%s\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestFlags checks flag parsing through runF.
func TestFlags(t *testing.T) {
	t.Parallel()
	f := clitest.Factory()
	cases := []struct {
		args []string
		want state.ApplyOptions
	}{
		{[]string{"-f", "a.yaml"}, state.ApplyOptions{Files: []string{"a.yaml"}, DryRun: state.DryRunNone}},
		{[]string{"-f", "a", "--filename", "b", "--prune", "-y"}, state.ApplyOptions{Files: []string{"a", "b"}, Prune: true, Yes: true, DryRun: state.DryRunNone}},
		{[]string{"-f", "a", "--dry-run"}, state.ApplyOptions{Files: []string{"a"}, DryRun: state.DryRunServer}},
		{[]string{"-f", "a", "--dry-run=client"}, state.ApplyOptions{Files: []string{"a"}, DryRun: state.DryRunClient}},
	}
	for _, tc := range cases {
		var got *state.ApplyOptions
		cmd := state.NewCmdApply(f, func(o *state.ApplyOptions) error { got = o; return nil })
		if err := clitest.Execute(f, cmd, tc.args...); err != nil {
			t.Errorf("apply %v: %v", tc.args, err)
			continue
		}
		got.Factory = nil
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("apply %v: %+v, want %+v", tc.args, *got, tc.want)
		}
	}
	var diff *state.ApplyOptions
	cmd := state.NewCmdDiff(f, func(o *state.ApplyOptions) error { diff = o; return nil })
	if err := clitest.Execute(f, cmd, "-f", "-", "--prune"); err != nil || !diff.Diff || diff.DryRun != state.DryRunServer || !diff.Prune {
		t.Errorf("diff: %+v, %v", diff, err)
	}
	var export *state.ExportOptions
	cmd = state.NewCmdExport(f, func(o *state.ExportOptions) error { export = o; return nil })
	if err := clitest.Execute(f, cmd, "--file", "out.json"); err != nil || export.File != "out.json" {
		t.Errorf("export: %+v, %v", export, err)
	}
}

func TestDocumentRoundTrip(t *testing.T) {
	t.Parallel()
	doc := state.NewDocument(
		[]ratelimit.Definition{
			{ID: "x", Version: 3, Axis: "target", EntityType: "mcp_server", Name: "b", WindowSeconds: 60, MaxRequests: ptr(5), Enabled: true, Scope: "s", UpdatedBy: "me"},
			{Axis: "caller", EntityType: "group", Name: "yes", WindowSeconds: 60, UserMaxRequests: ptr(30), Description: "a: b # c\nline two"},
		},
		[]ratelimit.Membership{{ID: "user:z", Version: 2, SubjectType: "user", Subject: "z", Groups: []string{"123", "on"}}},
		nil)
	for name, write := range map[string]func(*bytes.Buffer) error{
		"yaml": func(b *bytes.Buffer) error { return doc.WriteYAML(b) },
		"json": func(b *bytes.Buffer) error { return doc.WriteJSON(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		l, err := loadStdin(t, b.String())
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b.String())
		}
		if l.Doc.Definitions[0].Name != "yes" || l.Doc.Definitions[0].Version != 0 || l.Doc.Definitions[1].Scope != "" {
			t.Errorf("%s: not sorted by id or server fields kept: %+v", name, l.Doc.Definitions)
		}
		if !reflect.DeepEqual(l.Doc.Definitions, doc.Definitions) || !reflect.DeepEqual(l.Doc.Memberships, doc.Memberships) || l.Doc.Admins == nil {
			t.Errorf("%s round trip:\n%+v\n%+v\nfrom:\n%s", name, l.Doc, doc, b.String())
		}
	}
}

// FuzzLoad: whatever comes in, Load does not panic, and what it accepts
// survives being written back out and read again.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60}\n",
		`{"memberships": [{"subject_type": "user", "subject": "a", "groups": ["g"], "quarantine_expires_at": "2030-01-01T00:00:00Z"}]}`,
		"admins: []\n---\ndefinitions: null\n...\n",
		"apiVersion: rlctl/v1\nkind: State\nmemberships: [{subject_type: user, subject: 'a:b', groups: [x]}]\n",
		"{\"definitions\": [{}]} ",
		"--- \n--- {definitions: []}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, err := state.Load([]string{state.Stdin}, strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := l.Doc.WriteJSON(&b); err != nil {
			t.Fatalf("write back: %v", err)
		}
		again, err := state.Load([]string{state.Stdin}, &b)
		if err != nil {
			t.Fatalf("accepted %q, but not its JSON %s: %v", in, b.String(), err)
		}
		x, _ := json.Marshal(l.Doc)
		y, _ := json.Marshal(again.Doc)
		if !bytes.Equal(x, y) {
			t.Fatalf("round trip changed the state:\n%s\n%s", x, y)
		}
	})
}
