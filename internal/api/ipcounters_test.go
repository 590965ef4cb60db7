package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The counters of an anonymous caller (ip:<address>) are listed, with
// their window, by GET /api/rate-limit-counters?caller=ip:..., in the
// forms the resolver keys them (an IPv4 address, an IPv6 /64; a mapped
// address and host bits are normalized), and a reset by that selector
// removes them: the next call from the address starts afresh.
func TestCountersOfAnonymousCallers(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 120)
	define(t, env, admin, group("anonymous", 120, 2, 0))
	for _, n := range []string{"203.0.113.0/24", "2001:db8::/32"} {
		if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: n,
			Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, env)
	for _, ip := range []string{"203.0.113.7", "203.0.113.7", "2001:db8:1:1::1"} {
		if r := checkIP(t, hc, env, gw, "", ip); r.Reason != "allowed" {
			t.Fatalf("anonymous from %s: %+v", ip, r)
		}
	}
	if r := checkIP(t, hc, env, gw, "", "203.0.113.7"); r.Reason != "throttled" {
		t.Fatalf("third call from 203.0.113.7: %+v, want throttled", r)
	}

	for _, tt := range []struct{ caller, key string }{
		{"ip:203.0.113.7", counterkey.Caller(120, "ip:203.0.113.7").String()},
		{"ip:::ffff:203.0.113.7", counterkey.Caller(120, "ip:203.0.113.7").String()},
		{"ip:2001:db8:1:1::/64", counterkey.Caller(120, "ip:2001:db8:1:1::/64").String()},
		{"ip:2001:DB8:1:1:0:0:0:9/64", counterkey.Caller(120, "ip:2001:db8:1:1::/64").String()},
	} {
		got, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Caller: tt.caller}, 0))
		if err != nil || len(got) != 1 {
			t.Fatalf("counters of %s: %+v, %v; want one", tt.caller, got, err)
		}
		if c := got[0]; c.Key != tt.key || c.WindowSeconds != 120 || c.WindowStart.IsZero() || c.Count < 1 {
			t.Errorf("counters of %s: %+v, want %s with its 120 s window", tt.caller, c, tt.key)
		}
	}

	// Selectors that name no bucket: 400 naming the caller and the rule.
	for _, tt := range []struct{ caller, want string }{
		{"ip:2001:db8:1:1::1", "caller: ip:2001:db8:1:1::1: an IPv6 caller is its network, e.g. ip:2001:db8:1:1::1/64"},
		{"ip:203.0.113.0/24", "caller: ip:203.0.113.0/24: an IPv4 caller is its address, without a prefix"},
		{"ip:nope", "caller: ip:nope: want an IPv4 address or an IPv6 network"},
		{"ip:", "caller: ip:: want an IPv4 address"},
		{"ipv4:1.2.3.4", `or ip:\u003caddress\u003e for an anonymous caller (got \"ipv4:1.2.3.4\")`},
	} {
		a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limit-counters?caller=" + url.QueryEscape(tt.caller), token: env.AdminToken})
		if a.status != 400 || !strings.Contains(string(a.body), `"field":"caller"`) || !strings.Contains(string(a.body), tt.want) {
			t.Errorf("caller %s: %d %s, want a 400 containing %q", tt.caller, a.status, a.body, tt.want)
		}
	}

	removed, err := removedOf(admin.ResetCounters(t.Context(), client.CounterSelector{Caller: "ip:203.0.113.7"}, client.WriteOptions{}))
	if err != nil || removed != 1 {
		t.Fatalf("reset ip:203.0.113.7: removed %d, %v; want 1", removed, err)
	}
	if got, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Caller: "ip:203.0.113.7"}, 0)); err != nil || len(got) != 0 {
		t.Errorf("after the reset: %+v, %v; want none", got, err)
	}
	if r := checkIP(t, hc, env, gw, "", "203.0.113.7"); r.Reason != "allowed" {
		t.Errorf("after the reset, anonymous from 203.0.113.7: %+v, want allowed", r)
	}
	// The other caller's bucket is untouched.
	if got, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Caller: "ip:2001:db8:1:1::/64"}, 0)); err != nil || len(got) != 1 {
		t.Errorf("ip:2001:db8:1:1::/64 after resetting ip:203.0.113.7: %+v, %v", got, err)
	}
}
