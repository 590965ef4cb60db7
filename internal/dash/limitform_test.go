package dash

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The fixture's rows in id order: batch-jobs is 0, developers 1,
// github-mcp (a target, version 2) 6.
const (
	selectDevelopers = "j"
	selectGithubMCP  = "jjjjjj"
	clear3           = "<backspace><backspace><backspace>"
)

// TestLimitForm: the edit form as keys in, state out.
func TestLimitForm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		keys  string
		check func(t *testing.T, m Model)
	}{
		{
			name: "c opens the form on the selected definition, with its values",
			keys: selectDevelopers + "c",
			check: func(t *testing.T, m Model) {
				if !m.editOpen {
					t.Fatal("form not open")
				}
				wantScreen(t, m, "Change caller:group:developers:60", "(*) fixed_window", "user 120", "agent 60")
				// A window has no burst fields.
				wantNotScreen(t, m, "user burst")
			},
		},
		{
			name: "choosing token_bucket shows the bursts, defaulting to the limits",
			keys: selectDevelopers + "ct",
			check: func(t *testing.T, m Model) {
				wantScreen(t, m, "(*) token_bucket", "user burst", "agent burst", "the user limit", "sustained rate per 60s")
			},
		},
		{
			name: "a limit that is not a number is refused under its field; nothing is sent",
			keys: selectGithubMCP + "c<tab>" + clear3 + "lots<enter>",
			check: func(t *testing.T, m Model) {
				if !m.editOpen || m.confirmOpen {
					t.Fatalf("form open %v, confirm open %v; want the form still open", m.editOpen, m.confirmOpen)
				}
				wantScreen(t, m, `max_requests: must be a whole number (got "lots")`)
				if f := m.edit; f.focus != 1 {
					t.Errorf("focus on %d, want the limit (1)", f.focus)
				}
			},
		},
		{
			name: "validate's rules apply before anything is sent",
			keys: selectGithubMCP + "c<tab>" + clear3 + "0<enter>",
			check: func(t *testing.T, m Model) {
				if !m.editOpen {
					t.Fatal("form closed on a limit of 0")
				}
				wantScreen(t, m, "max_requests")
			},
		},
		{
			name: "an empty required limit is refused, naming the rule",
			keys: selectGithubMCP + "c<tab>" + clear3 + "<enter>",
			check: func(t *testing.T, m Model) {
				wantScreen(t, m, "max_requests: required on the target axis")
			},
		},
		{
			name: "submitting asks first, listing each change",
			keys: selectGithubMCP + "ct<tab>" + clear3 + "600<tab>50<enter>",
			check: func(t *testing.T, m Model) {
				if m.editOpen || !m.confirmOpen {
					t.Fatalf("form open %v, confirm open %v; want the confirmation", m.editOpen, m.confirmOpen)
				}
				wantScreen(t, m, "Change target:mcp_server:github-mcp:60?", `algorithm: "fixed_window" -> "token_bucket"`,
					"burst: (none) -> 50", "max_requests: 500 -> 600")
			},
		},
		{
			name: "nothing changed: nothing to confirm",
			keys: selectGithubMCP + "c<tab><enter>",
			check: func(t *testing.T, m Model) {
				if m.editOpen || m.confirmOpen {
					t.Fatal("a form or dialog still open")
				}
				wantScreen(t, m, "nothing to change in target:mcp_server:github-mcp:60")
			},
		},
		{
			name: "esc cancels",
			keys: selectGithubMCP + "c<esc>",
			check: func(t *testing.T, m Model) {
				if m.editOpen {
					t.Fatal("form still open")
				}
				wantScreen(t, m, "canceled: change target:mcp_server:github-mcp:60")
			},
		},
		{
			name: "a quarantine kill switch has no limits to change",
			keys: "jjjjc",
			check: func(t *testing.T, m Model) {
				if m.editOpen {
					t.Fatal("form opened on a sentinel")
				}
				wantScreen(t, m, "a quarantine kill switch carries no limits")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := press(t, loaded(t, 120, 40), tt.keys)
			tt.check(t, m)
		})
	}
}

// TestLimitFormReachesTheAPI runs the confirmed change against a fake
// server: the definition is sent whole, with the version the form was
// opened on.
func TestLimitFormReachesTheAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keys     string
		wantCall string
		wantText string
	}{
		{"target to a token bucket", selectGithubMCP + "ct<tab>" + clear3 + "600<tab>50<enter>y",
			"PutDefinition target:mcp_server:github-mcp:60 token_bucket max=600,burst=50 if-version=2",
			"✓ changed target:mcp_server:github-mcp:60 (600 token_bucket burst 50, version 3)"},
		{"caller to a sliding window, agents unlimited", selectDevelopers + "cs<tab><tab>" + clear3 + "<backspace><backspace><enter>y",
			"PutDefinition caller:group:developers:60 sliding_window user=120 if-version=3",
			"✓ changed caller:group:developers:60 (user=120 sliding_window, version 4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			m := loaded(t, 120, 40)
			m.api = api
			m, cmd := press(t, m, tt.keys)
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			msg, isMutation := cmd().(mutationMsg)
			if !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, tt.wantCall) {
				t.Errorf("calls:\n%s\nwant %q", calls, tt.wantCall)
			}
			m = update(t, m, msg)
			wantScreen(t, m, tt.wantText)
		})
	}
}

// Leaving the token bucket drops the bursts: a window has none.
func TestLimitFormDropsBurstsOffTheBucket(t *testing.T) {
	t.Parallel()
	defs := fixtureDefinitions()
	defs[3].Algorithm, defs[3].Burst = ratelimit.AlgorithmTokenBucket, ptr(50)
	api := newFakeAPI()
	m := newModel(t, api, 120, 40)
	m = apply(t, m, steps(answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: defs} }),
		answer(resRole, func(r reply) tea.Msg { return roleMsg{reply: r} })))
	m, _ = press(t, m, selectGithubMCP+"c")
	wantScreen(t, m, "(*) token_bucket", "burst 50")
	m, _ = press(t, m, "f<tab><enter>")
	wantScreen(t, m, `algorithm: "token_bucket" -> "fixed_window"`, "burst: 50 -> (none)")
	_, cmd := press(t, m, "y")
	_ = cmd()
	if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, "PutDefinition target:mcp_server:github-mcp:60 fixed_window max=500 if-version=2") {
		t.Errorf("calls:\n%s", calls)
	}
}

// A refusal as invalid (the server's floors, which the client does not
// know) reopens the form as the user left it, the server's message under
// the field it names.
func TestLimitFormShowsTheServersRefusal(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	api.writeErr = &client.APIError{StatusCode: 400, Type: "https://rlctl.dev/problems/validation", Title: "Invalid request",
		Detail: "user_max_requests 5 is below the user floor of 20/min for windows <= 60s",
		Errors: []client.FieldError{{Field: "user_max_requests", Message: "user_max_requests 5 is below the user floor of 20/min for windows <= 60s; raise it to at least 20 or use a window longer than 60s"}}}
	m := loaded(t, 120, 40)
	m.api = api
	m, cmd := press(t, m, selectDevelopers+"c<tab>"+clear3+"5<tab><enter>y")
	m = update(t, m, cmd())
	if !m.editOpen {
		t.Fatal("the form did not reopen")
	}
	wantScreen(t, m, "Change caller:group:developers:60", "user 5",
		"user_max_requests 5 is below the user floor", "raise it to at least 20")
	if m.edit.focus != 1 {
		t.Errorf("focus on %d, want the user limit (1)", m.edit.focus)
	}
	// Fixed, it goes through.
	api.writeErr = nil
	m, _ = press(t, m, "<backspace>25<tab><enter>")
	wantScreen(t, m, "user_max_requests: 120 -> 25")
}

// A viewer cannot change limits: the key is gone.
func TestLimitFormHiddenForViewers(t *testing.T) {
	t.Parallel()
	m := apply(t, loaded(t, 120, 40), failWith(resRole, errViewer))
	m, _ = press(t, m, selectDevelopers+"c")
	if m.editOpen {
		t.Fatal("form opened for a viewer")
	}
	wantNotScreen(t, m, "c change")
}

// algorithm: filters by the algorithm, by its name or the table's word.
func TestFilterByAlgorithm(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"algorithm:token_bucket", "algorithm:bucket"} {
		m := apply(t, loadedAlgorithms(t, 120, 40), typed("/"+q+"<enter>"))
		wantRows(t, m, 2)
	}
	m := apply(t, loadedAlgorithms(t, 120, 40), typed("/algorithm:fixed<enter>"))
	wantRows(t, m, 3) // the word the table shows; the kill switches show none
	m = apply(t, loadedAlgorithms(t, 120, 40), typed("/algorithm:fixed_window<enter>"))
	wantRows(t, m, 5) // the kill switches are fixed windows
}

// The form edits limits and the algorithm only: a definition's lease and
// fail policy go back as they were loaded.
func TestLimitFormKeepsLeaseAndFailPolicy(t *testing.T) {
	t.Parallel()
	keys, styles := DefaultKeyMap(), NewStyles(&strings.Builder{}, false)
	d := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "billing", WindowSeconds: 3600,
		MaxRequests: ptr(1000), Enabled: true, Mode: "enforce", Lease: ratelimit.LeaseNever, FailPolicy: ratelimit.FailPolicyDegrade, Version: 1}
	f, _ := newLimitForm(d, &keys, &styles).submit()
	if got := f.Definition(); f.State() != formSubmitted || got.Lease != ratelimit.LeaseNever || got.FailPolicy != ratelimit.FailPolicyDegrade {
		t.Fatalf("submitted: state %v, lease %q, fail policy %q; want submitted with lease never, fail policy degrade", f.State(), got.Lease, got.FailPolicy)
	}
}

// The form edits limits and the algorithm only: an override goes back as
// it was loaded, and the detail pane says the definition is one.
func TestOverrideKeptAndShown(t *testing.T) {
	t.Parallel()
	keys, styles := DefaultKeyMap(), NewStyles(&strings.Builder{}, false)
	d := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "premium", WindowSeconds: 60,
		UserMaxRequests: ptr(100), Enabled: true, Mode: "enforce", Override: true, Version: 1}
	d.ID = d.Key()
	f, _ := newLimitForm(d, &keys, &styles).submit()
	if got := f.Definition(); f.State() != formSubmitted || !got.Override {
		t.Fatalf("submitted: state %v, override %t; want submitted with override", f.State(), got.Override)
	}
	m := loaded(t, 120, 40)
	m.limits.SetDefinitions([]ratelimit.Definition{d})
	if got := m.limits.detailView(60, 20); !strings.Contains(got, "override yes") {
		t.Errorf("detail pane of an override:\n%s\nwant it to say override yes", got)
	}
	plain := d
	plain.Override = false
	m.limits.SetDefinitions([]ratelimit.Definition{plain})
	if got := m.limits.detailView(60, 20); strings.Contains(got, "override") {
		t.Errorf("detail pane of a definition that is no override:\n%s\nwant no override", got)
	}
}
