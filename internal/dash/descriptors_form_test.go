package dash

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// sentAPI is the fake API keeping every definition PutDefinition was sent.
type sentAPI struct {
	*fakeAPI
	mu   sync.Mutex
	sent []ratelimit.Definition
}

func (a *sentAPI) PutDefinition(ctx context.Context, d ratelimit.Definition, o client.WriteOptions) (client.PutResult[ratelimit.Definition], error) {
	a.mu.Lock()
	a.sent = append(a.sent, d)
	a.mu.Unlock()
	return a.fakeAPI.PutDefinition(ctx, d, o)
}

// Changing a descriptor definition's limit and algorithm with the form
// sends the definition with its Envoy fields as loaded: the same name,
// domain and entries, limit name, replaces, share_threshold, detailed
// metric and mode; only the algorithm and the numbers change.
func TestLimitFormKeepsDescriptorFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, keys, wantCall, wantText string
		row                            int
	}{
		{"token bucket to a window", "cf<tab><backspace><backspace>30<enter>y",
			"PutDefinition target:descriptor:edge/route=checkout/user:60 fixed_window max=30 if-version=1",
			"✓ changed target:descriptor:edge/route=checkout/user:60", 0},
		{"shared wildcard, a new limit", "jc<tab>" + clear3 + "250<enter>y",
			"PutDefinition target:descriptor:files/path=files%2F*/user:3600 sliding_window max=250 if-version=1",
			"✓ changed target:descriptor:files/path=files%2F*/user:3600", 1},
		{"shadow mode with replaces, a token bucket", "jjjct<tab><backspace>8<tab>12<enter>y",
			"PutDefinition target:descriptor:mongo_cps/database=users/remote_address:60 token_bucket max=8,burst=12 if-version=3",
			"✓ changed target:descriptor:mongo_cps/database=users/remote_address:60", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			api := &sentAPI{fakeAPI: newFakeAPI()}
			m := newModel(t, api, 120, 40)
			m = apply(t, m, steps(answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: descriptorDefinitions()} }),
				answer(resRole, func(r reply) tea.Msg { return roleMsg{reply: r} })))
			m, cmd := press(t, m, c.keys)
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			msg, isMutation := cmd().(mutationMsg)
			if !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, c.wantCall) {
				t.Fatalf("calls:\n%s\nwant %q", calls, c.wantCall)
			}
			m = update(t, m, msg)
			wantScreen(t, m, c.wantText)
			was := descriptorDefinitions()[c.row]
			api.mu.Lock()
			defer api.mu.Unlock()
			if len(api.sent) != 1 {
				t.Fatalf("sent %d definitions, want 1", len(api.sent))
			}
			got := api.sent[0]
			if got.Name != was.Name || got.EntityType != was.EntityType || got.Mode != was.Mode || got.Description != was.Description {
				t.Errorf("sent name %q entity %q mode %q description %q, want %q %q %q %q", got.Name, got.EntityType, got.Mode, got.Description,
					was.Name, was.EntityType, was.Mode, was.Description)
			}
			if !reflect.DeepEqual(got.DescriptorFields, was.DescriptorFields) {
				t.Errorf("sent descriptor fields %+v, want %+v as loaded", got.DescriptorFields, was.DescriptorFields)
			}
		})
	}
}

// An unlimited descriptor definition takes no limit: the form refuses one
// under the limit field, with the rule's message, and sends nothing.
func TestLimitFormUnlimitedDescriptor(t *testing.T) {
	t.Parallel()
	api := &sentAPI{fakeAPI: newFakeAPI()}
	m := newModel(t, api, 120, 40)
	m = apply(t, m, steps(answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: descriptorDefinitions()} }),
		answer(resRole, func(r reply) tea.Msg { return roleMsg{reply: r} })))
	m, _ = press(t, m, "jjc<tab>10<enter>")
	if !m.editOpen || m.confirmOpen {
		t.Fatalf("form open %v, confirm open %v; want the form still open", m.editOpen, m.confirmOpen)
	}
	wantScreen(t, m, "Change target:descriptor:mongo_cps/database=internal:1", "max_requests: not allowed with unlimited")
	if len(api.sent) != 0 {
		t.Errorf("sent %d definitions, want none", len(api.sent))
	}
}
