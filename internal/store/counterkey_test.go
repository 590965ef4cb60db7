package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// keyParts is what migration 007's functions (009's, for keys of every
// algorithm) read from one stored key.
type keyParts struct {
	Kind, Definition, Caller, Target, Algorithm *string
	Window                                      *int32
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return fmt.Sprintf("%q", *p)
}

// trickyKeys are keys gateways can write, and strings that are no keys:
// '|' and ':' inside names, unicode, NUL, the escape byte, bytes that are
// not UTF-8, the target type marks inside names.
func trickyKeys() (keys []string, built map[string]bool) {
	keys = []string{
		"", "|", "c", "c|", "c|60", "c|60|", "c|60|user:", "c|60|user:a", "c|060|user:a", "c|0|user:a", "c|999999999|user:a", "c|1000000000|user:a",
		"c|60|user:x|user:alice", "c|60|agent:bot", "c|60|client:bot", "c|60|user:ünï|cødé", "c|60|user:\x00", "c|60|user:\x01", "c|60|user:\x01ff",
		"c|60|user:\xff\xfe", "c|6\xff|user:a", "c\xff|60|user:a",
		"ct|60|user:alice|mcp_server:mcpgw", "ct|60|user:alice|x|mcp_server:mcpgw", "ct|60|user:bob|mcp_server:mcpgw:x",
		"ct|60|user:a|mcp_server:b|mcp_server:c", "ct|60|user:a|a2a_agent:/b|mcp_server:c", "ct|60|user:|mcp_server:x|mcp_server:y",
		"ct|60|user:|mcp_server:x", "ct|60|user:a|", "ct|60|user:a|:x", "ct|60|user:a|x", "ct|60|user:auth0|123|grpc:svc",
		"ct|60|user:a|mcp_server:", "ct|60|agent:\xff|a2a_agent:/\x00", "ct|60|user:\x01|mcp_server:\x01", "ct|60|user:ü|mcp_server:ü|ö",
		"ct|60|user:a\x01|mcp_server:b", "ct|60|user:a|\x01mcp_server:b", "ct|60|user:alice",
		"s|caller:group:developers:3600|user:alice", "s|caller:group:g:60|user:a|b", "s|caller_target:group:g:60|user:alice|mcp_server:mcpgw",
		"s|caller_target:group:g:60|user:alice|x|a2a_agent:/b", "s|caller_target:group:g:60|user:alice", "s|caller:group:g:60",
		"s|caller:group:g:0|user:a", "s|caller:group::60|user:a", "s|target:mcp_server:x:60|user:a", "s|caller:server_group:g:60|user:a",
		"s|caller:group:g:6x|user:a", "s|caller:group:g|user:a", "s|:group:g:60|user:a", "s|caller::g:60|user:a",
		"t|target:mcp_server:mcpgw:60", "t|target:mcp_server:a|b:60", "t|target:mcp_server:mcpgw:x:60", "t|target:mcp_tool:mcpgw:search:60",
		"t|target:a2a_skill:/b:find:60", "t|target:server_group:fragile:60|mcpgw", "t|target:server_group:fragile:60|a|b",
		"t|target:server_group:fragile:60", "t|target:server_group:fragile:60|", "t|caller:group:g:60", "t|target:mcp_server:x",
		"t|target:mcp_server:ü\xff:60", "t|target:mcp_server:\x01:60", "x|60|user:a",
		// Algorithm marks (009): known ones parse, others never do.
		"c.tb|60|user:a", "ct.sw|60|user:a|mcp_server:b", "s.tb|caller:group:g:60|user:a", "t.sw|target:mcp_server:x:60",
		"c.xx|60|user:a", "c.tb.sw|60|user:a", "c.|60|user:a", ".tb|60|user:a", "c.TB|60|user:a", "t.tb|", "ct.tb|60|user:a",
		// Buckets per IP, per team and shared (013), and strings that are
		// no p key.
		"p|caller:group:per-ip:60|ip:203.0.113.7", "p|caller:group:per-ip:60|ip:2001:db8:1:2::/64", "p|caller:group:t:3600|team:acme-corp",
		"p|caller:group:global:60", "p|caller_target:group:g:60|team:acme|mcp_server:a|b", "p|caller_target:group:g:60|ip:::/0|a2a_agent:/x",
		"p|caller_target:group:g:60|mcp_server:m", "p|caller_target:group:g:60|grpc:svc", "p.tb|caller:group:g:60|team:t", "p.sw|caller_target:group:g:60|mcp_server:m",
		"p|caller:group:g:60|team:ü", "p|caller:group:g:0|ip:1.2.3.4", "p|caller:group::60", "p|caller:group:g:60|team:a|x|y:z",
		"p|caller:group:g:60|", "p|caller:group:g:60|team:", "p|caller:group:g:60|team:a|", "p|caller:group:g:60|ip:1.2.3.4|mcp_server:x",
		"p|caller:group:g:60|user:alice", "p|caller_target:group:g:60|team:acme", "p|caller_target:group:g:60", "p|caller_target:group:g:60|:x",
		"p|target:mcp_server:x:60", "p|caller:group:g", "p|caller:group:g:060", "p.xx|caller:group:g:60", "p|caller_target:group:g:60|team:a|x|y:z",
		"p|caller_target:group:g:60|ip:|mcp_server:x", "p|caller:server_group:g:60",
		// Anonymous callers keyed by their client address (011): IPv4,
		// IPv6 networks with "::" and a prefix, forms the resolver never
		// emits (mapped, uncompressed, bare IPv6, zones) that still parse
		// as callers, and prefixes that are no caller type.
		"c|60|ip:203.0.113.7", "c|60|ip:2001:db8:1:2::/64", "c|60|ip:::/0", "c|60|ip::", "c|60|ip:", "c|60|ip", "c|60|ipv6:1", "c|60|IP:1.2.3.4",
		"c|60|ip:::ffff:203.0.113.7", "c|60|ip:::ffff:cb00:7107/128", "c|60|ip:2001:0db8:0001:0002:0000:0000:0000:0000/64", "c|60|ip:fe80::1%eth0",
		"c.tb|60|ip:2001:db8:1:2::/64", "c.sw|60|ip:10.0.0.1",
		"ct|60|ip:203.0.113.7|mcp_server:mcpgw", "ct|60|ip:2001:db8:1:2::/64|mcp_server:mcpgw", "ct|60|ip:2001:db8::/64|a2a_agent:/booking",
		"ct|60|ip:::|mcp_server:x", "ct|60|ip:|mcp_server:x", "ct|60|ip:|mcp_server:x|mcp_server:y", "ct|60|ip:::/0|grpc:svc",
		"ct|60|ip:::ffff:1.2.3.4|mcp_server::", "ct|60|ip:1.2.3.4", "ct|60|ip:1.2.3.4|", "ct|60|ip:1.2.3.4|:x", "ct.sw|60|ip:::1/128|mcp_server:m",
		"s|caller:group:anon:60|ip:203.0.113.7", "s|caller:group:anon:60|ip:", "s.tb|caller:group:anon:60|ip:2001:db8:1:2::/64",
		"s|caller_target:group:anon:60|ip:2001:db8:1:2::/64|mcp_server:mcpgw", "s|caller_target:group:anon:60|ip:2001:db8:1:2::/64",
		"s|caller_target:group:anon:60|ip:1.2.3.4|x:y|z:w",
	}
	// Random keys over an alphabet of separators, marks and odd bytes.
	rng := rand.New(rand.NewPCG(7, 11))
	atoms := []string{"|", ":", "a", "ü", "\x00", "\x01", "\xff", "ff", "0", "60", "|mcp_server:", "|a2a_agent:", "mcp_server:", "user:", "agent:",
		"caller:group:g:60", "caller_target:group:g:60", "target:server_group:g:60", "target:mcp_server:x:60"}
	prefixes := []string{"c|60|", "ct|60|", "s|", "t|", "", "c|60|user:", "c|3600|agent:", "ct|60|user:", "ct|1|agent:",
		"c.tb|60|user:", "ct.sw|60|user:", "s.sw|caller:group:g:60|user:", "t.tb|target:mcp_server:",
		"s|caller:group:g:60|user:", "s|caller_target:group:g:60|agent:", "s|caller_target:group:g:60|user:",
		"t|target:server_group:g:60|", "t|target:mcp_server:", "t|target:mcp_tool:"}
	suffixes := []string{"", "", "|mcp_server:x", "|a2a_agent:/y", "|grpc:z", ":60", "|x"}
	for range 3000 {
		var b strings.Builder
		b.WriteString(prefixes[rng.IntN(len(prefixes))])
		for range rng.IntN(8) {
			b.WriteString(atoms[rng.IntN(len(atoms))])
		}
		b.WriteString(suffixes[rng.IntN(len(suffixes))])
		keys = append(keys, b.String())
	}
	// Random ip caller keys (011), from a generator of their own so the
	// keys above stay what they were.
	rip := rand.New(rand.NewPCG(13, 17))
	ipAtoms := []string{":", "::", "/", "/64", "/128", ".", "1", "db8", "ffff", "2001", "0", "|", "|mcp_server:", "|a2a_agent:", "a"}
	ipPrefixes := []string{"c|60|ip:", "ct|60|ip:", "c.tb|60|ip:", "ct.sw|3600|ip:", "s|caller:group:g:60|ip:", "s|caller_target:group:g:60|ip:"}
	for range 600 {
		var b strings.Builder
		b.WriteString(ipPrefixes[rip.IntN(len(ipPrefixes))])
		for range rip.IntN(8) {
			b.WriteString(ipAtoms[rip.IntN(len(ipAtoms))])
		}
		b.WriteString(suffixes[rip.IntN(len(suffixes))])
		keys = append(keys, b.String())
	}
	// Keys as gateways build them, from random names.
	name := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(atoms[rng.IntN(len(atoms))])
		}
		return b.String()
	}
	def := func(axis, entity string) ratelimit.Definition {
		n, w := name(), 1+rng.IntN(86400)
		if entity == ratelimit.EntityGroup || entity == ratelimit.EntityServerGroup {
			n = strings.NewReplacer("|", "", ":", "").Replace(n) // group names hold neither
		}
		return ratelimit.Definition{ID: ratelimit.DefinitionID(axis, entity, n, w), WindowSeconds: w}
	}
	algorithms := []string{"", ratelimit.AlgorithmFixedWindow, ratelimit.AlgorithmSlidingWindow, ratelimit.AlgorithmTokenBucket}
	algo := func() string { return algorithms[rng.IntN(len(algorithms))] }
	withAlgo := func(d ratelimit.Definition) ratelimit.Definition {
		d.Algorithm = algo()
		return d
	}
	marked := func(k counterkey.Key) counterkey.Key {
		if a := algo(); a != ratelimit.AlgorithmFixedWindow {
			k.Algorithm = enforce.Algorithm(a)
		}
		return k
	}
	built = map[string]bool{}
	first := len(keys)
	for range 1000 {
		caller := []string{"user:", "agent:"}[rng.IntN(2)] + name()
		target := []string{"mcp_server:", "a2a_agent:", "grpc:"}[rng.IntN(3)] + name()
		keys = append(keys,
			marked(counterkey.Caller(1+rng.IntN(86400), caller)).String(),
			marked(counterkey.CallerTarget(1+rng.IntN(86400), caller, target)).String(),
			counterkey.Shadow(withAlgo(def(ratelimit.AxisCaller, ratelimit.EntityGroup)), caller, "").String(),
			counterkey.Shadow(withAlgo(def(ratelimit.AxisCallerTarget, ratelimit.EntityGroup)), caller, target).String(),
			counterkey.Target(withAlgo(def(ratelimit.AxisTarget, ratelimit.EntityMCPServer)), "").String(),
			counterkey.Target(withAlgo(def(ratelimit.AxisTarget, ratelimit.EntityMCPTool)), "").String(),
			counterkey.Target(withAlgo(def(ratelimit.AxisTarget, ratelimit.EntityServerGroup)), name()).String())
	}
	// Anonymous callers' keys as the resolver writes them (clientip.Key).
	ips := []string{"203.0.113.7", "10.0.0.1", "2001:db8:1:2::/64", "2001:db8::/64", "::/64", "fe80::/10", "::1/128", "2001:db8:0:0:1::/80"}
	for range 200 {
		caller := "ip:" + ips[rip.IntN(len(ips))]
		target := []string{"mcp_server:", "a2a_agent:", "grpc:"}[rip.IntN(3)] + name()
		keys = append(keys,
			marked(counterkey.Caller(1+rip.IntN(86400), caller)).String(),
			marked(counterkey.CallerTarget(1+rip.IntN(86400), caller, target)).String(),
			counterkey.Shadow(withAlgo(def(ratelimit.AxisCaller, ratelimit.EntityGroup)), caller, "").String(),
			counterkey.Shadow(withAlgo(def(ratelimit.AxisCallerTarget, ratelimit.EntityGroup)), caller, target).String())
	}
	for _, k := range keys[first:] {
		built[k] = true
	}
	return keys, built
}

// TestCounterKeyPartsAgreeWithGo holds migration 007's functions
// to counterkey.Parse: on the text CounterKeyText stores, it finds
// the parts Go finds, escaped the same way, and refuses what Go refuses.
func TestCounterKeyPartsAgreeWithGo(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	keys, built := trickyKeys()
	stored := make([]string, len(keys))
	for i, k := range keys {
		stored[i] = store.CounterKeyText(k)
	}
	rows, err := s.Pool().Query(ctx, `select rl_counter_kind(key), rl_counter_window(key), rl_counter_definition(key), rl_counter_caller(key), rl_counter_target(key),
			rl_counter_algorithm(key)
		from unnest($1::text[]) with ordinality k(key, i) order by i`, stored)
	if err != nil {
		t.Fatal(err)
	}
	var got []keyParts
	for rows.Next() {
		var p keyParts
		if err := rows.Scan(&p.Kind, &p.Window, &p.Definition, &p.Caller, &p.Target, &p.Algorithm); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if err := rows.Err(); err != nil || len(got) != len(keys) {
		t.Fatalf("%d rows for %d keys, %v", len(got), len(keys), err)
	}
	parsed := 0
	for i, raw := range keys {
		p := got[i]
		k, err := counterkey.Parse(raw)
		if err != nil {
			if built[raw] {
				t.Errorf("key %q, as a gateway builds it, does not parse: %v", raw, err)
			}
			if p.Kind != nil || p.Algorithm != nil {
				t.Errorf("key %q: Go refuses it (%v), SQL reads kind %s caller %s target %s definition %s", raw, err, str(p.Kind), str(p.Caller), str(p.Target), str(p.Definition))
			}
			continue
		}
		parsed++
		opt := func(s string) string {
			if s == "" {
				return "<null>"
			}
			return fmt.Sprintf("%q", store.CounterKeyText(s))
		}
		algorithm := string(k.Algorithm)
		if algorithm == "" {
			algorithm = ratelimit.AlgorithmFixedWindow
		}
		want := fmt.Sprintf("kind %q window %d definition %s caller %s target %s algorithm %q",
			k.Kind, k.WindowSeconds, opt(k.DefinitionID), opt(k.Caller), opt(k.OnTarget()), algorithm)
		window := -1
		if p.Window != nil {
			window = int(*p.Window)
		}
		have := fmt.Sprintf("kind %s window %d definition %s caller %s target %s algorithm %s", str(p.Kind), window, str(p.Definition), str(p.Caller), str(p.Target), str(p.Algorithm))
		if have != want {
			t.Errorf("key %q:\n SQL %s\n Go  %s", raw, have, want)
		}
	}
	t.Logf("%d of %d keys parse", parsed, len(keys))
	if parsed < len(keys)/3 {
		t.Errorf("only %d of %d keys parse: the test exercises too little", parsed, len(keys))
	}
}

// plant inserts live counters with count 1 in the current minute.
func plant(t *testing.T, s *store.Store, now time.Time, keys ...string) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), `insert into rl_counters (key, window_index, count, expires_at)
		select k, $2, 1, $3 from unnest($1::text[]) k`, keys, now.Unix()/60, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

func selected(t *testing.T, s *store.Store, sel store.CounterSelector, now time.Time) []string {
	t.Helper()
	rows, err := s.CountersOf(context.Background(), sel, now, 0)
	if err != nil {
		t.Fatalf("counters of %+v: %v", sel, err)
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	return keys
}

// TestDefinitionSelectsTheBucketsItIsCheckedAgainst: a caller definition
// selects its axis and window's shared buckets of the callers it applies
// to, whichever definition's limit decided them, and its reset resets what
// its get lists.
func TestDefinitionSelectsTheBucketsItIsCheckedAgainst(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	for _, q := range []string{
		// developers (the tighter limit) decides alice's 60 s bucket;
		// power-users applies to her too.
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, agent_max_requests)
			values ('caller:group:developers:60', 'caller', 'group', 'developers', 60, 10, 10),
			       ('caller:group:power-users:60', 'caller', 'group', 'power-users', 60, 1000, null),
			       ('caller_target:group:power-users:60', 'caller_target', 'group', 'power-users', 60, 1000, 1000)`,
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, mode)
			values ('caller:group:power-users:120', 'caller', 'group', 'power-users', 120, 1000, 'shadow')`,
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, enabled)
			values ('caller:group:power-users:300', 'caller', 'group', 'power-users', 300, 1000, false)`,
		`insert into rl_memberships (subject_type, subject, groups) values
			('user', 'alice', array['developers', 'power-users']), ('user', 'bob', array['developers']),
			('client', 'bot', array['power-users'])`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plant(t, s, now, "c|60|user:alice", "c|60|user:bob", "c|60|agent:bot", "c|120|user:alice", "c|300|user:alice",
		"ct|60|user:alice|mcp_server:mcpgw", "ct|60|agent:bot|a2a_agent:/b", "s|caller:group:power-users:120|user:alice")
	for _, tt := range []struct {
		def  string
		want []string
	}{
		// bot's bucket: power-users:60 has no agent limit, so it does not
		// apply to bot; bob is no member.
		{"caller:group:power-users:60", []string{"c|60|user:alice"}},
		{"caller:group:developers:60", []string{"c|60|user:alice", "c|60|user:bob"}},
		{"caller_target:group:power-users:60", []string{"ct|60|agent:bot|a2a_agent:/b", "ct|60|user:alice|mcp_server:mcpgw"}},
		// A shadow definition counts on its own; a disabled one counts nothing.
		{"caller:group:power-users:120", []string{"s|caller:group:power-users:120|user:alice"}},
		{"caller:group:power-users:300", nil},
		{"caller:group:gone:60", nil},
	} {
		sel := store.CounterSelector{Definition: tt.def}
		if got := selected(t, s, sel, now); !slices.Equal(got, tt.want) {
			t.Errorf("definition %s selects %q, want %q", tt.def, got, tt.want)
		}
	}
	// The caller selector agrees: alice's bucket is hers.
	if got := selected(t, s, store.CounterSelector{Caller: "user:alice"}, now); !slices.Contains(got, "c|60|user:alice") {
		t.Errorf("caller user:alice selects %q, want her c|60 bucket among them", got)
	}
	var reset []string
	if err := s.InTx(ctx, func(q *store.Queries) error {
		rows, err := q.ResetCounters(ctx, store.CounterSelector{Definition: "caller:group:power-users:60"}, now)
		for _, r := range rows {
			reset = append(reset, r.Key)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reset, []string{"c|60|user:alice"}) {
		t.Errorf("reset by power-users:60 reset %q, want what its get listed", reset)
	}
	if got := selected(t, s, store.CounterSelector{Definition: "caller:group:power-users:60"}, now); len(got) != 0 {
		t.Errorf("after the reset power-users:60 still lists %q", got)
	}
	if got := selected(t, s, store.CounterSelector{Definition: "caller:group:developers:60"}, now); !slices.Equal(got, []string{"c|60|user:bob"}) {
		t.Errorf("after the reset developers:60 lists %q, want bob's bucket only (alice's shared bucket is at zero)", got)
	}
}

// planScans collects the scans of rl_counters in an EXPLAIN (format json)
// plan: "Seq Scan", or the index an index scan uses.
func planScans(t *testing.T, plan []byte) []string {
	t.Helper()
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	var scans []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Relation Name"] == "rl_counters" || strings.HasPrefix(fmt.Sprint(n["Index Name"]), "rl_counters") {
			if n["Node Type"] == "Seq Scan" {
				scans = append(scans, "Seq Scan")
			} else if idx, ok := n["Index Name"].(string); ok {
				scans = append(scans, idx)
			}
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m)
			}
		}
	}
	walk(doc[0].Plan)
	return scans
}

// TestCounterSelectorsUseIndexes loads 20,000 counters and checks that
// listing and resetting by caller, target and definition are index
// lookups: no sequential scan of rl_counters.
func TestCounterSelectorsUseIndexes(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Pool().Exec(ctx, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, agent_max_requests)
			values ('caller:group:g7:60', 'caller', 'group', 'g7', 60, 100, 100),
			       ('caller_target:group:g7:60', 'caller_target', 'group', 'g7', 60, 100, 100);
		insert into rl_memberships (subject_type, subject, groups)
			select 'user', 'u' || i, array['g' || (i % 50)] from generate_series(1, 2000) i`); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 2000 {
		u, srv := fmt.Sprintf("user:u%d", i), fmt.Sprintf("s%d", i%100)
		g, sg := fmt.Sprintf("g%d", i%50), fmt.Sprintf("sg%d", i%20)
		d := func(axis, entity, name string, window int) ratelimit.Definition {
			return ratelimit.Definition{ID: ratelimit.DefinitionID(axis, entity, name, window), WindowSeconds: window}
		}
		for _, k := range []counterkey.Key{
			counterkey.Caller(60, u), counterkey.Caller(3600, u),
			counterkey.CallerTarget(60, u, "mcp_server:"+srv), counterkey.CallerTarget(60, u, "a2a_agent:/"+srv),
			counterkey.Shadow(d(ratelimit.AxisCaller, ratelimit.EntityGroup, g, 3600), u, ""),
			counterkey.Shadow(d(ratelimit.AxisCallerTarget, ratelimit.EntityGroup, g, 3600), u, "mcp_server:"+srv),
			counterkey.Target(d(ratelimit.AxisTarget, ratelimit.EntityMCPServer, srv, 60+i%10), ""),
			counterkey.Target(d(ratelimit.AxisTarget, ratelimit.EntityServerGroup, sg, 60), srv),
			counterkey.Target(d(ratelimit.AxisTarget, ratelimit.EntityMCPTool, srv+":tool"+fmt.Sprint(i), 60), ""),
			counterkey.Caller(120, fmt.Sprintf("agent:bot%d", i)),
		} {
			keys = append(keys, k.String())
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) < 15000 {
		t.Fatalf("only %d distinct keys", len(keys))
	}
	plant(t, s, now, keys...)
	if _, err := s.Pool().Exec(ctx, `analyze rl_counters; analyze rl_memberships; analyze rl_definitions`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `select count(*) from rl_counters`).Scan(&n); err != nil || n < 15000 {
		t.Fatalf("%d counters, %v", n, err)
	}
	for _, tt := range []struct {
		sel   store.CounterSelector
		index []string // the indexes the plan must use
		found int      // how many counters the selector lists
	}{
		{store.CounterSelector{Caller: "user:u7"}, []string{"rl_counters_caller_idx"}, 6},
		{store.CounterSelector{Target: "mcp_server:s7"}, []string{"rl_counters_target_idx"}, 20 + 20 + 1 + 1},
		{store.CounterSelector{Definition: "target:mcp_server:s7:67"}, []string{"rl_counters_definition_idx"}, 1},
		{store.CounterSelector{Definition: "target:server_group:sg7:60"}, []string{"rl_counters_definition_idx"}, 5},
		{store.CounterSelector{Definition: "caller:group:g7:60"}, []string{"rl_counters_definition_idx", "rl_counters_caller_idx"}, 40},
		{store.CounterSelector{Definition: "caller_target:group:g7:60"}, []string{"rl_counters_definition_idx", "rl_counters_caller_idx"}, 80},
		{store.CounterSelector{Definition: "caller:group:g7:3600"}, []string{"rl_counters_definition_idx"}, 40},
	} {
		if got := len(selected(t, s, tt.sel, now)); got != tt.found {
			t.Errorf("%+v lists %d counters, want %d", tt.sel, got, tt.found)
		}
		for _, reset := range []bool{false, true} {
			plan, err := s.ExplainCounters(ctx, tt.sel, now, reset)
			if err != nil {
				t.Fatalf("explain %+v: %v", tt.sel, err)
			}
			scans := planScans(t, plan)
			t.Logf("%+v (reset %v): %q", tt.sel, reset, scans)
			if slices.Contains(scans, "Seq Scan") || len(scans) == 0 {
				t.Errorf("%+v (reset %v): scans of rl_counters %q, want index scans only\n%s", tt.sel, reset, scans, plan)
				continue
			}
			for _, idx := range tt.index {
				if !slices.Contains(scans, idx) {
					t.Errorf("%+v (reset %v): scans %q, want %s among them", tt.sel, reset, scans, idx)
				}
			}
		}
	}
}
