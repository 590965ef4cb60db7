package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestCallerSelectorOfIPCallers: an anonymous caller's counters (ip:<address>,
// migration 011) are selected by its caller, exactly (ip:203.0.113.7 is not
// ip:203.0.113.70, one /64 is not another), every algorithm and axis; a
// definition whose group holds a network does not list them (documented on
// CounterSelector.Definition), and a caller of no known type is refused.
func TestCallerSelectorOfIPCallers(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	for _, q := range []string{
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, agent_max_requests)
			values ('caller:group:anon:60', 'caller', 'group', 'anon', 60, 10, null)`,
		`insert into rl_memberships (subject_type, subject, groups) values ('network', '203.0.113.0/24', array['anon'])`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	v4, v6 := "ip:203.0.113.7", "ip:2001:db8:1:2::/64"
	caller := func(c string) string { return counterkey.Caller(60, c).String() }
	tb := counterkey.Caller(60, v4)
	tb.Algorithm = enforce.AlgorithmTokenBucket
	sw := counterkey.CallerTarget(60, v6, "a2a_agent:/booking")
	sw.Algorithm = enforce.AlgorithmSlidingWindow
	ct := counterkey.CallerTarget(60, v4, "mcp_server:mcpgw").String()
	shadow := counterkey.Shadow(ratelimit.Definition{ID: "caller:group:anon:60", WindowSeconds: 60}, v6, "").String()
	plant(t, s, now, caller(v4), caller("ip:203.0.113.70"), tb.String(), ct, caller(v6), sw.String(), shadow,
		caller("ip:2001:db8:1:3::/64"), caller("user:203.0.113.7"))
	for _, tt := range []struct {
		caller string
		want   []string
	}{
		{v4, []string{tb.String(), caller(v4), ct}},
		{v6, []string{caller(v6), sw.String(), shadow}},
		{"ip:203.0.113", nil},
		{"ip:2001:db8:1:2::", nil},
	} {
		slices.Sort(tt.want) // listed in byte order
		if got := selected(t, s, store.CounterSelector{Caller: tt.caller}, now); !slices.Equal(got, tt.want) {
			t.Errorf("caller %s selects %q, want %q", tt.caller, got, tt.want)
		}
	}
	// The network member's ip buckets are not enumerated; a counter
	// keyed by the definition itself is listed, whoever the caller.
	if got, want := selected(t, s, store.CounterSelector{Definition: "caller:group:anon:60"}, now), []string{shadow}; !slices.Equal(got, want) {
		t.Errorf("definition caller:group:anon:60 selects %q, want %q (ip buckets are selected by caller)", got, want)
	}
	for _, bad := range []string{"ipv6:1", "ip:", "network:203.0.113.0/24"} {
		_, err := s.CountersOf(ctx, store.CounterSelector{Caller: bad}, now, 0)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "want user:<name>, agent:<client id> or ip:<address>") {
			t.Errorf("caller %q: %v, want ErrInvalid naming the caller types", bad, err)
		}
	}
}
