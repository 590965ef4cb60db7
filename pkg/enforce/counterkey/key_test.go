package counterkey_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func def(axis, entity, name string, window int) ratelimit.Definition {
	return ratelimit.Definition{ID: ratelimit.DefinitionID(axis, entity, name, window), Axis: axis, EntityType: entity, Name: name, WindowSeconds: window}
}

func withAlgorithm(d ratelimit.Definition, a string) ratelimit.Definition {
	d.Algorithm = a
	return d
}

func marked(k counterkey.Key, a algorithm.Name) counterkey.Key {
	k.Algorithm = a
	return k
}

// keyExamples pin the key strings byte for byte: counters of live
// databases were written under them and must keep counting across an
// upgrade. This table (with TestParseCounterKeyRefusesGarbage's) is where
// the wire format itself is written out, so its keys are literals; every
// other test builds keys through the constructors.
var keyExamples = []struct {
	key    counterkey.Key
	s      string
	target string // OnTarget
}{
	{counterkey.Caller(60, "user:alice"), "c|60|user:alice", ""},
	{counterkey.Caller(3600, "agent:bot"), "c|3600|agent:bot", ""},
	{counterkey.Caller(60, "user:x|user:alice"), "c|60|user:x|user:alice", ""},
	{counterkey.CallerTarget(60, "user:alice", "mcp_server:mcpgw"), "ct|60|user:alice|mcp_server:mcpgw", "mcp_server:mcpgw"},
	{counterkey.CallerTarget(60, "user:alice|x", "mcp_server:mcpgw"), "ct|60|user:alice|x|mcp_server:mcpgw", "mcp_server:mcpgw"},
	{counterkey.CallerTarget(60, "agent:bot", "a2a_agent:/booking"), "ct|60|agent:bot|a2a_agent:/booking", "a2a_agent:/booking"},
	{counterkey.CallerTarget(60, "user:auth0|123", "grpc:svc"), "ct|60|user:auth0|123|grpc:svc", "grpc:svc"},
	{counterkey.CallerTarget(60, "user:alice", "mcp_server:"), "ct|60|user:alice|mcp_server:", "mcp_server:"},
	{counterkey.Shadow(def("caller", "group", "developers", 3600), "user:alice", ""), "s|caller:group:developers:3600|user:alice", ""},
	{counterkey.Shadow(def("caller_target", "group", "g", 60), "user:alice|x", "a2a_agent:/b"), "s|caller_target:group:g:60|user:alice|x|a2a_agent:/b", "a2a_agent:/b"},
	{counterkey.Target(def("target", "mcp_server", "mcpgw", 60), ""), "t|target:mcp_server:mcpgw:60", "mcp_server:mcpgw"},
	{counterkey.Target(def("target", "mcp_server", "a|b", 60), ""), "t|target:mcp_server:a|b:60", "mcp_server:a|b"},
	{counterkey.Target(def("target", "mcp_tool", "mcpgw:search", 60), ""), "t|target:mcp_tool:mcpgw:search:60", "mcp_tool:mcpgw:search"},
	{counterkey.Target(def("target", "server_group", "fragile", 60), "mcpgw"), "t|target:server_group:fragile:60|mcpgw", "mcp_server:mcpgw"},
	{counterkey.Target(def("target", "server_group", "fragile", 60), "a|b"), "t|target:server_group:fragile:60|a|b", "mcp_server:a|b"},
	// Anonymous callers keyed by their client address: an IPv4
	// address, an IPv6 network in CIDR form (':' and '/' in the caller,
	// the caller_target split still at the target type).
	{counterkey.Caller(60, "ip:203.0.113.7"), "c|60|ip:203.0.113.7", ""},
	{counterkey.Caller(60, "ip:2001:db8:1:2::/64"), "c|60|ip:2001:db8:1:2::/64", ""},
	{counterkey.CallerTarget(60, "ip:203.0.113.7", "mcp_server:mcpgw"), "ct|60|ip:203.0.113.7|mcp_server:mcpgw", "mcp_server:mcpgw"},
	{counterkey.CallerTarget(60, "ip:2001:db8:1:2::/64", "a2a_agent:/booking"), "ct|60|ip:2001:db8:1:2::/64|a2a_agent:/booking", "a2a_agent:/booking"},
	{counterkey.CallerTarget(60, "ip:::/0", "grpc:svc"), "ct|60|ip:::/0|grpc:svc", "grpc:svc"},
	{counterkey.Shadow(def("caller", "group", "anon", 60), "ip:2001:db8:1:2::/64", ""), "s|caller:group:anon:60|ip:2001:db8:1:2::/64", ""},
	{counterkey.Shadow(def("caller_target", "group", "anon", 60), "ip:203.0.113.7", "mcp_server:m"), "s|caller_target:group:anon:60|ip:203.0.113.7|mcp_server:m", "mcp_server:m"},
	{marked(counterkey.Caller(60, "ip:2001:db8:1:2::/64"), algorithm.TokenBucket), "c.tb|60|ip:2001:db8:1:2::/64", ""},
	// Other algorithms mark the kind; the fixed window never does.
	{counterkey.Target(withAlgorithm(def("target", "mcp_server", "mcpgw", 60), "fixed_window"), ""), "t|target:mcp_server:mcpgw:60", "mcp_server:mcpgw"},
	{counterkey.Target(withAlgorithm(def("target", "mcp_server", "mcpgw", 60), "token_bucket"), ""), "t.tb|target:mcp_server:mcpgw:60", "mcp_server:mcpgw"},
	{counterkey.Shadow(withAlgorithm(def("caller", "group", "g", 60), "sliding_window"), "user:alice", ""), "s.sw|caller:group:g:60|user:alice", ""},
	{marked(counterkey.Caller(60, "user:alice"), algorithm.TokenBucket), "c.tb|60|user:alice", ""},
	{marked(counterkey.CallerTarget(60, "user:alice", "mcp_server:m"), algorithm.SlidingWindow), "ct.sw|60|user:alice|mcp_server:m", "mcp_server:m"},
	// Buckets per IP, per team and shared: per definition.
	{counterkey.Per(def("caller", "group", "per-ip", 60), "ip:203.0.113.7", ""), "p|caller:group:per-ip:60|ip:203.0.113.7", ""},
	{counterkey.Per(def("caller", "group", "per-ip", 60), "ip:2001:db8:1:2::/64", ""), "p|caller:group:per-ip:60|ip:2001:db8:1:2::/64", ""},
	{counterkey.Per(def("caller", "group", "teams", 3600), "team:acme-corp", ""), "p|caller:group:teams:3600|team:acme-corp", ""},
	{counterkey.Per(def("caller", "group", "global", 60), "", ""), "p|caller:group:global:60", ""},
	{counterkey.Per(def("caller_target", "group", "g", 60), "team:acme", "mcp_server:a|b"), "p|caller_target:group:g:60|team:acme|mcp_server:a|b", "mcp_server:a|b"},
	{counterkey.Per(def("caller_target", "group", "g", 60), "ip:::/0", "a2a_agent:/x"), "p|caller_target:group:g:60|ip:::/0|a2a_agent:/x", "a2a_agent:/x"},
	{counterkey.Per(def("caller_target", "group", "g", 60), "", "mcp_server:m"), "p|caller_target:group:g:60|mcp_server:m", "mcp_server:m"},
	{counterkey.Per(withAlgorithm(def("caller", "group", "g", 60), "token_bucket"), "team:t", ""), "p.tb|caller:group:g:60|team:t", ""},
	{counterkey.Per(withAlgorithm(def("caller_target", "group", "g", 60), "sliding_window"), "", "mcp_server:m"), "p.sw|caller_target:group:g:60|mcp_server:m", "mcp_server:m"},
	// The failed-credential throttle's failures and lockouts, and the
	// violations escalation counts: no algorithm mark, no target.
	{counterkey.AuthFailures("rlapi", 60, "203.0.113.7"), "af|rlapi|60|ip:203.0.113.7", ""},
	{counterkey.AuthFailures("gateway", 900, "2001:db8:1:2::/64"), "af|gateway|900|ip:2001:db8:1:2::/64", ""},
	{counterkey.AuthLockout("rlapi", "203.0.113.7"), "al|rlapi|ip:203.0.113.7", ""},
	{counterkey.AuthLockout("gateway", "2001:db8:1:2::/64"), "al|gateway|ip:2001:db8:1:2::/64", ""},
	{counterkey.Violation(600, "user:alice"), "v|600|user:alice", ""},
	{counterkey.Violation(60, "network:2001:db8:1:2::/64"), "v|60|network:2001:db8:1:2::/64", ""},
	{counterkey.Violation(60, "client:bot|1"), "v|60|client:bot|1", ""},
	// An Envoy descriptor's counter: a target counter of a descriptor
	// definition id, values escaped.
	{counterkey.Descriptor("", "edge", []ratelimit.DescriptorEntry{{Key: "tenant", Value: "acme"}}, nil, 60),
		"t|target:descriptor:edge/tenant=acme:60", "descriptor:edge/tenant=acme"},
	{counterkey.Descriptor(algorithm.TokenBucket, "edge", []ratelimit.DescriptorEntry{{Key: "path", Value: "/a b"}, {Key: "k"}}, nil, 1),
		"t.tb|target:descriptor:edge/path=%2Fa%20b/k:1", "descriptor:edge/path=%2Fa%20b/k"},
}

// TestAuthCounterParts: the failed-credential keys give back their scope
// and address, and the pattern of an address's failures of every window
// matches its keys and no other address's.
func TestAuthCounterParts(t *testing.T) {
	for _, k := range []counterkey.Key{counterkey.AuthFailures("rlapi", 60, "1.2.3.4"), counterkey.AuthLockout("rlapi", "1.2.3.4")} {
		if scope, key, ok := k.AuthAddress(); !ok || scope != "rlapi" || key != "1.2.3.4" {
			t.Errorf("%q.AuthAddress() = %q, %q, %v; want rlapi, 1.2.3.4", k, scope, key, ok)
		}
	}
	if _, _, ok := counterkey.Violation(60, "user:a").AuthAddress(); ok {
		t.Error("a violation key has no failed-credential address")
	}
	prefix, suffix := counterkey.AuthFailuresPattern("rlapi", "1.2.3.4")
	for k, want := range map[string]bool{
		counterkey.AuthFailures("rlapi", 60, "1.2.3.4").String():   true,
		counterkey.AuthFailures("rlapi", 3600, "1.2.3.4").String(): true,
		counterkey.AuthFailures("rlapi", 60, "11.2.3.4").String():  false,
		counterkey.AuthFailures("gateway", 60, "1.2.3.4").String(): false,
		counterkey.AuthLockout("rlapi", "1.2.3.4").String():        false,
	} {
		if got := strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix); got != want {
			t.Errorf("pattern %q...%q matches %q: %v, want %v", prefix, suffix, k, got, want)
		}
	}
	id := counterkey.AuthLockoutID("gateway", "2001:db8::/64")
	if scope, key, ok := counterkey.ParseAuthLockoutID(id); !ok || scope != "gateway" || key != "2001:db8::/64" {
		t.Errorf("ParseAuthLockoutID(%q) = %q, %q, %v", id, scope, key, ok)
	}
	for _, bad := range []string{"", "gateway", "|1.2.3.4", "gateway|"} {
		if _, _, ok := counterkey.ParseAuthLockoutID(bad); ok {
			t.Errorf("ParseAuthLockoutID(%q) ok, want refused", bad)
		}
	}
}

func TestCounterKeyStrings(t *testing.T) {
	for _, tt := range keyExamples {
		if got := tt.key.String(); got != tt.s {
			t.Errorf("%+v.String() = %q, want %q", tt.key, got, tt.s)
		}
		k, err := counterkey.Parse(tt.s)
		if err != nil || k != tt.key {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.s, k, err, tt.key)
		}
		if got := k.OnTarget(); got != tt.target {
			t.Errorf("Parse(%q).OnTarget() = %q, want %q", tt.s, got, tt.target)
		}
	}
}

func TestParseCounterKeyRefusesGarbage(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "want <kind>|..."},
		{"x|60|user:a", `kind "x": want c, ct, s or t`},
		{"c.xx|60|user:a", `kind "c.xx": want c, ct, s or t, marked .tb or .sw`},
		{"c.tb.sw|60|user:a", `kind "c.tb.sw"`},
		{"c|060|user:a", `window "060"`},
		{"c|0|user:a", `window "0"`},
		{"c|1234567890|user:a", `window "1234567890"`},
		{"c|6a|user:a", `window "6a"`},
		{"c|60", "want c|<window>|<caller>"},
		{"c|60|alice", `caller "alice": want user:<name>, agent:<client id> or ip:<address>`},
		{"c|60|ip:", `caller "ip:"`},
		{"c|60|ipv6:1", `caller "ipv6:1"`},
		{"ct|60|ip:|mcp_server:x", `no target after the caller`},
		{"ct|60|ip:203.0.113.7", `no target after the caller in "ip:203.0.113.7"`},
		{"c|60|user:", `caller "user:"`},
		{"ct|60|user:alice", `no target after the caller in "user:alice"`},
		{"ct|60|user:|mcp_server:x", `no target after the caller`},
		{"ct|60|user:a|:x", `no target after the caller in "user:a|:x"`},
		{"ct|60|client:a|mcp_server:x", `caller in "client:a|mcp_server:x"`},
		{"s|caller:group:g:60", "want s|<definition id>|<caller>"},
		{"s|target:mcp_server:x:60|user:a", "a shadow counter's definition is a caller or caller_target group, user, client or team definition"},
		{"s|caller:group:g|user:a", `definition id "caller:group:g"`},
		{"s|caller:group:g:60|agent:", `caller "agent:"`},
		{"t|caller:group:g:60", "a target counter's definition is a target definition"},
		{"t|target:server_group:g:60", "want t|<server_group definition id>|<server>"},
		{"t|target:server_group:g:60|", "want t|<server_group definition id>|<server>"},
		{"t|target:mcp_server:x", `definition id "target:mcp_server:x"`},
		{"p|target:mcp_server:x:60", "a p counter's definition is a caller or caller_target group definition"},
		{"p|caller:group:g", `definition id "caller:group:g"`},
		{"p|caller:group:g:60|team:", `subject "team:"`},
		{"p|caller:group:g:60|ip:1.2.3.4|mcp_server:x", "a caller definition's p counter has no target"},
		{"p|caller:group:g:60|user:alice", "a caller definition's p counter has no target"},
		{"p|caller_target:group:g:60|team:acme", "a caller_target definition's p counter names its target"},
		{"p|caller_target:group:g:60", `target "": want <target type>:<name>`},
		{"af|rlapi|60", "want af|<scope>|<window>|ip:<address>"},
		{"af||60|ip:1.2.3.4", "want af|<scope>|..."},
		{"af|rlapi|060|ip:1.2.3.4", `window "060"`},
		{"af|rlapi|60|user:alice", `address "user:alice": want ip:<address>`},
		{"af.sw|rlapi|60|ip:1.2.3.4", `kind "af.sw"`},
		{"al|rlapi", "want al|<scope>|..."},
		{"al|rlapi|ip:", `address "ip:"`},
		{"v|60", "want v|<within>|<membership id>"},
		{"v|0|user:a", `window "0"`},
		{"v|60|alice", `subject "alice": want a membership id`},
		{"v|60|user:", `subject "user:"`},
	} {
		k, err := counterkey.Parse(tt.in)
		var ke *counterkey.Error
		if !errors.As(err, &ke) || ke.Key != tt.in || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %+v, %v; want an error containing %q", tt.in, k, err, tt.want)
		}
	}
}

// canonical says whether a key built from these parts reads back as
// built: the caller's name holds no target type mark, and a target of a
// type gateways do not send holds no '|'.
func canonical(caller, target string) bool {
	for _, m := range []string{"|mcp_server:", "|a2a_agent:"} {
		if strings.Contains(caller, m) {
			return false
		}
	}
	if !strings.HasPrefix(target, "mcp_server:") && !strings.HasPrefix(target, "a2a_agent:") && strings.Contains(target, "|") {
		return false
	}
	return true
}

// FuzzCounterKey checks both round trips: every key built from valid parts
// parses back to itself, and every string that parses is the String of
// what it parses to.
func FuzzCounterKey(f *testing.F) {
	for _, tt := range keyExamples {
		f.Add(tt.s, "alice", "mcpgw", 60)
	}
	f.Add("ct|60|user:a|b|mcp_server:c|d", "a|b", "c|mcp_server:d", 1)
	f.Add("t|target:server_group:g:60|x", "\x01\xff", "ü|:", 86400)
	f.Add("ct|60|ip:2001:db8::/64|mcp_server:a|b", "2001:db8:1:2::/64", "::ffff:1.2.3.4", 60)
	f.Add("s|caller_target:group:g:60|ip:1.2.3.4|x:y", "::", "/64", 60)
	f.Add("af|rlapi|60|ip:1.2.3.4|x", "1.2.3.4", "rlapi", 60)
	f.Add("v|60|user:a|b", "a|b:c", "network", 3600)
	f.Add("t|target:descriptor:edge/k=a%2A/x:60", "a*/b=%", "k|=:", 60)
	f.Fuzz(func(t *testing.T, s, name, targetName string, window int) {
		if k, err := counterkey.Parse(s); err == nil {
			if got := k.String(); got != s {
				t.Fatalf("Parse(%q) = %+v, whose String is %q", s, k, got)
			}
		}
		if window < 1 || window > 86400 || name == "" {
			return
		}
		var keys []counterkey.Key
		for _, caller := range []string{"user:" + name, "agent:" + name, "ip:" + name} {
			for _, target := range []string{"mcp_server:" + targetName, "a2a_agent:" + targetName, "x_y:" + targetName} {
				if !canonical(caller, target) {
					continue
				}
				keys = append(keys,
					counterkey.CallerTarget(window, caller, target),
					counterkey.Shadow(def("caller_target", "group", "g", window), caller, target))
			}
			keys = append(keys, counterkey.Caller(window, caller), counterkey.Shadow(def("caller", "group", "g.1-x", window), caller, ""))
		}
		if targetName != "" {
			keys = append(keys, counterkey.Target(def("target", "server_group", "g", window), targetName))
		}
		keys = append(keys, counterkey.Target(def("target", "mcp_server", targetName, window), ""),
			counterkey.Target(def("target", "mcp_tool", targetName+":"+name, window), ""))
		// p keys: subjects (ip keys, team names) never hold '|'.
		keys = append(keys, counterkey.Per(def("caller", "group", "g", window), "", ""),
			counterkey.Per(def("caller_target", "group", "g", window), "", "mcp_server:"+targetName))
		if !strings.Contains(name, "|") {
			for _, subject := range []string{"ip:" + name, "team:" + name} {
				keys = append(keys, counterkey.Per(def("caller", "group", "g", window), subject, ""),
					counterkey.Per(def("caller_target", "group", "g", window), subject, "a2a_agent:"+targetName))
			}
		}
		// The failed-credential and violation keys; a scope holds no '|'.
		keys = append(keys, counterkey.AuthFailures("rlapi", window, name), counterkey.AuthLockout("gateway", name),
			counterkey.Violation(window, ratelimit.MembershipID(ratelimit.SubjectUser, name)),
			counterkey.Violation(window, ratelimit.MembershipID(ratelimit.SubjectNetwork, name)))
		if targetName != "" && !strings.Contains(targetName, "|") {
			keys = append(keys, counterkey.AuthFailures(targetName, window, name), counterkey.AuthLockout(targetName, name))
		}
		// Descriptors: any bytes in the domain, keys and values.
		for _, alg := range []algorithm.Name{"", algorithm.SlidingWindow, algorithm.TokenBucket} {
			keys = append(keys,
				counterkey.Descriptor(alg, targetName, []ratelimit.DescriptorEntry{{Key: name, Value: targetName}}, nil, window),
				counterkey.Descriptor(alg, name, []ratelimit.DescriptorEntry{{Key: targetName}, {Key: "k", Value: name}}, []string{targetName + "*"}, window))
		}
		for _, k := range keys {
			got, err := counterkey.Parse(k.String())
			if err != nil || got != k {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", k.String(), got, err, k)
			}
		}
	})
}

var keySink string

// The key is built once per gate on every decision: one allocation, as
// the concatenation it replaced (which took two for a caller_target key).
func BenchmarkCounterKeyString(b *testing.B) {
	for _, k := range []counterkey.Key{
		counterkey.Caller(3600, "user:alice"),
		counterkey.CallerTarget(60, "user:alice", "mcp_server:mcpgw"),
		counterkey.Shadow(def("caller", "group", "developers", 3600), "user:alice", ""),
	} {
		b.Run(string(k.Kind), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				keySink = k.String()
			}
		})
	}
}

// BenchmarkCounterKeyConcat is what buildGates did before Key, for
// comparison with BenchmarkCounterKeyString.
func BenchmarkCounterKeyConcat(b *testing.B) {
	caller, target, id := "user:alice", "mcp_server:mcpgw", "caller:group:developers:3600"
	window := 3600
	b.Run("c", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keySink = "c" + "|" + strconv.Itoa(window) + "|" + caller
		}
	})
	b.Run("ct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			subject := caller + "|" + target
			keySink = "ct" + "|" + strconv.Itoa(60) + "|" + subject
		}
	})
	b.Run("s", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keySink = "s|" + id + "|" + caller
		}
	})
}
