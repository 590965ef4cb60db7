package enforce_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/enforcefixture"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// newMemFixtureOpts is newMemFixture with the Enforcer's options.
func newMemFixtureOpts(t *testing.T, opts enforce.Options, defs ...ratelimit.Definition) *memFixture {
	t.Helper()
	return newMemFixtureOver(t, opts, nil, defs...)
}

// newMemFixtureOver is newMemFixtureOpts with the Enforcer's counters
// built by over from the fixture's recorder (a layer over it; nil: the
// recorder itself).
func newMemFixtureOver(t *testing.T, opts enforce.Options, over func(enforce.CounterStore) enforce.CounterStore, defs ...ratelimit.Definition) *memFixture {
	t.Helper()
	f := &memFixture{T: t, Clock: enforcefixture.NewClock(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)),
		rec: &recorder{CounterStore: memory.New()}}
	f.state = enforce.State{Definitions: enforcetest.Sentinels()}
	for _, d := range defs {
		f.state.Definitions = append(f.state.Definitions, withID(d))
	}
	f.src = enforcetest.StaticSource(f.state)
	opts.Counters, opts.Source, opts.Now = f.rec, f.src, f.Clock.Now
	if over != nil {
		opts.Counters = over(f.rec)
	}
	opts.CacheTTL, opts.SweepInterval = 72*time.Hour, -1
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	f.E = e
	return f
}

func from(c enforce.Call, ip string) enforce.Call {
	c.ClientIP = ip
	return c
}

func anonymous(ip string) enforce.Call {
	return enforce.Call{TargetType: "mcp_server", TargetName: "srv", ClientIP: ip}
}

// A quarantined network denies every call from inside it, users and
// agents and anonymous callers alike, and a second address of a
// quarantined IPv6 /64 as much as the first; administrators pass, and
// the callers' kill switch turns it off with the rest of caller
// quarantine.
func TestNetworkQuarantine(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t)
	f.Member(ratelimit.SubjectNetwork, "2001:db8:1:2::/64", ratelimit.GroupQuarantineCallers)
	f.Member(ratelimit.SubjectNetwork, "203.0.113.0/24", ratelimit.GroupQuarantineCallers)
	for _, c := range []struct {
		name   string
		call   enforce.Call
		reason string
	}{
		{"user in the /64", from(user("alice", "srv"), "2001:db8:1:2::1"), enforce.ReasonQuarantined},
		{"a second address of the /64", from(user("alice", "srv"), "2001:db8:1:2:ffff:ffff:ffff:fffe"), enforce.ReasonQuarantined},
		{"agent in the /64", from(agent("bot", "srv"), "2001:db8:1:2::77"), enforce.ReasonQuarantined},
		{"anonymous in the /64", anonymous("2001:db8:1:2::9"), enforce.ReasonQuarantined},
		{"IPv4 network", from(user("bob", "srv"), "203.0.113.200"), enforce.ReasonQuarantined},
		{"IPv4-mapped address of it", from(user("bob", "srv"), "::ffff:203.0.113.200"), enforce.ReasonQuarantined},
		{"the next /64", from(user("alice", "srv"), "2001:db8:1:3::1"), enforce.ReasonAllowed},
		{"the next IPv4 /24", from(user("bob", "srv"), "203.0.114.1"), enforce.ReasonAllowed},
		{"no address", user("alice", "srv"), enforce.ReasonAllowed},
		{"administrator in the /64", from(enforce.Call{Username: "root", IsAdmin: true, TargetType: "mcp_server", TargetName: "srv"}, "2001:db8:1:2::1"), enforce.ReasonAllowed},
	} {
		d := f.Check(c.call)
		if d.Reason != c.reason || (c.reason == enforce.ReasonQuarantined && d.QuarantineScope != "caller") {
			t.Errorf("%s: %+v, want %s", c.name, d, c.reason)
		}
	}
	// The callers' kill switch off: network quarantine is off too.
	for i, d := range f.state.Definitions {
		if d.ID == ratelimit.SentinelCallers {
			f.state.Definitions[i].Enabled = false
		}
	}
	f.src.Set(f.state)
	if err := f.E.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := f.Check(from(user("alice", "srv"), "2001:db8:1:2::1")); d.Reason != enforce.ReasonAllowed {
		t.Errorf("callers' quarantine disabled: %+v, want allowed", d)
	}
}

// The most specific network decides: a /16 in an ordinary group inside
// a quarantined /8 is not quarantined, and an anonymous caller takes the
// groups of its most specific network only.
func TestNetworkLongestPrefixMatch(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, callerGroup("wide", 60, ptr(1), nil), callerGroup("narrow", 60, ptr(3), nil))
	f.Member(ratelimit.SubjectNetwork, "10.0.0.0/8", "wide", ratelimit.GroupQuarantineCallers)
	f.Member(ratelimit.SubjectNetwork, "10.1.0.0/16", "narrow")
	f.Member(ratelimit.SubjectNetwork, "10.1.2.0/24", ratelimit.GroupQuarantineCallers)
	f.Member(ratelimit.SubjectNetwork, "0.0.0.0/0", "wide")
	cases := []struct {
		ip      string
		allowed int // of 5 anonymous calls
		reason  string
	}{
		{"10.9.9.9", 0, enforce.ReasonQuarantined}, // the /8
		{"10.1.9.9", 3, enforce.ReasonThrottled},   // the /16: narrow
		{"10.1.2.3", 0, enforce.ReasonQuarantined}, // the /24 inside the /16
		{"192.0.2.1", 1, enforce.ReasonThrottled},  // 0.0.0.0/0: wide
		{"2001:db8::1", 5, enforce.ReasonAllowed},  // no IPv6 network
	}
	for _, c := range cases {
		var last enforce.Decision
		allowed := 0
		for range 5 {
			if last = f.Check(anonymous(c.ip)); last.Allowed {
				allowed++
			}
		}
		if allowed != c.allowed || last.Reason != c.reason {
			t.Errorf("anonymous from %s: %d of 5 allowed, last %s; want %d, %s", c.ip, allowed, last.Reason, c.allowed, c.reason)
		}
	}
}

// Anonymous callers are ip:<key>: IPv4 by the address, IPv6 by its /64;
// two addresses share a bucket exactly when their key does, and never a
// user's. Without an address an anonymous call is allowed and counted
// nowhere, as before.
func TestAnonymousCallersKeyedByIP(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, callerGroup("anon", 60, ptr(2), nil))
	f.Member(ratelimit.SubjectNetwork, "2001:db8::/32", "anon")
	f.Member(ratelimit.SubjectNetwork, "198.51.100.0/24", "anon")
	f.Member(ratelimit.SubjectUser, "alice", "anon")

	steps := []struct {
		call    enforce.Call
		allowed bool
		key     string // the caller bucket's key
	}{
		{anonymous("2001:db8:1:1::1"), true, counterkey.Caller(60, "ip:2001:db8:1:1::/64").String()},
		{anonymous("2001:db8:1:1:ffff::2"), true, counterkey.Caller(60, "ip:2001:db8:1:1::/64").String()},
		{anonymous("2001:db8:1:1::3"), false, counterkey.Caller(60, "ip:2001:db8:1:1::/64").String()},
		{anonymous("2001:db8:1:2::1"), true, counterkey.Caller(60, "ip:2001:db8:1:2::/64").String()},
		{anonymous("198.51.100.7"), true, counterkey.Caller(60, "ip:198.51.100.7").String()},
		{anonymous("198.51.100.7"), true, counterkey.Caller(60, "ip:198.51.100.7").String()},
		{anonymous("::ffff:198.51.100.7"), false, counterkey.Caller(60, "ip:198.51.100.7").String()},
		{anonymous("198.51.100.8"), true, counterkey.Caller(60, "ip:198.51.100.8").String()},
		{from(user("alice", "srv"), "198.51.100.7"), true, counterkey.Caller(60, "user:alice").String()},
	}
	for i, s := range steps {
		d := f.Check(s.call)
		gates := f.rec.gates()
		if d.Allowed != s.allowed || len(gates) != 1 || gates[0].Key != s.key {
			t.Errorf("step %d (%+v): allowed %v, gates %+v; want allowed %v on %s", i+1, s.call, d.Allowed, gates, s.allowed, s.key)
		}
	}
	if d := f.Check(anonymous("")); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("anonymous call without an address: %+v, want allowed with no gate", d)
	}
	// An address in no network has no limit: it is its own caller, in no group.
	if d := f.Check(anonymous("192.0.2.1")); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("anonymous call from outside every network: %+v", d)
	}
}

// Options.IPv6Prefix widens the key: with /56, two /64s of one /56 share.
func TestIPv6PrefixOption(t *testing.T) {
	t.Parallel()
	f := newMemFixtureOpts(t, enforce.Options{IPv6Prefix: 56}, callerGroup("anon", 60, ptr(1), nil))
	f.Member(ratelimit.SubjectNetwork, "2001:db8::/32", "anon")
	if d := f.Check(anonymous("2001:db8:1:1::1")); !d.Allowed {
		t.Fatalf("first call: %+v", d)
	}
	if d := f.Check(anonymous("2001:db8:1:2::1")); d.Allowed {
		t.Errorf("another /64 of the same /56 was allowed: its bucket should be full")
	}
	if g := f.rec.gates(); len(g) != 1 || g[0].Key != counterkey.Caller(60, "ip:2001:db8:1::/56").String() {
		t.Errorf("gates %+v, want the /56's bucket", g)
	}
}

func TestCallNormalizeClientIP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"203.0.113.7", "203.0.113.7"}, {" 2001:DB8::1 ", "2001:db8::1"}, {"::ffff:10.0.0.1", "10.0.0.1"},
	} {
		got, err := enforce.Call{ClientIP: c.in}.Normalize()
		if err != nil || got.ClientIP != c.want {
			t.Errorf("Normalize(client_ip %q) = %q, %v; want %q", c.in, got.ClientIP, err, c.want)
		}
	}
	for _, in := range []string{"300.0.0.1", "10.0.0.1:80", "[2001:db8::1]", "fe80::1%eth0", "10.0.0.0/8", "localhost"} {
		_, err := enforce.Call{ClientIP: in}.Normalize()
		ce, ok := err.(*enforce.CallError)
		if !ok || len(ce.Fields) != 1 || ce.Fields[0].Field != "client_ip" {
			t.Errorf("Normalize(client_ip %q): %v, want a field error on client_ip", in, err)
		}
	}
}

// BenchmarkCheckNetworks: one decision (Check on the in-memory counter
// store) of an anonymous call from an address in a network group with one
// caller limit, with 100 and 100,000 networks loaded (/16 to /32 and /32
// to /64; the call's own network is a /24); "none" is a user's call without
// a client address on the same Enforcer, for comparison.
func BenchmarkCheckNetworks(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		st := enforce.State{Definitions: append(enforcetest.Sentinels(),
			withID(callerGroup("anon", 60, ptr(1_000_000_000), nil)))}
		st.Memberships = append(st.Memberships, ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "198.51.100.0/24", Groups: []string{"anon"}},
			ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"anon"}})
		seen := map[string]bool{}
		for i := 0; len(seen) < n-1; i++ {
			var p netip.Prefix
			if i%2 == 0 {
				p, _ = netip.AddrFrom4([4]byte{byte(1 + i%150), byte(i >> 16), byte(i >> 8), byte(i)}).Prefix(16 + i%17)
			} else {
				p, _ = netip.AddrFrom16([16]byte{0x24, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), byte(i * 7)}).Prefix(32 + i%33)
			}
			if !seen[p.String()] {
				seen[p.String()] = true
				st.Memberships = append(st.Memberships, ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: p.String(), Groups: []string{"g"}})
			}
		}
		e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(st), SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			call enforce.Call
		}{
			{"anonymous-ipv4", anonymous("198.51.100.7")},
			{"user-with-ipv6", from(user("alice", "srv"), "2001:db8::1")},
			{"none", user("alice", "srv")},
		} {
			b.Run(fmt.Sprintf("networks=%d/%s", n, c.name), func(b *testing.B) {
				for b.Loop() {
					if d, _ := e.Check(context.Background(), c.call); !d.Allowed || len(d.Gates) != 1 {
						b.Fatalf("decision %+v", d)
					}
				}
			})
		}
		e.Close()
	}
}

// An anonymous call with an address is a caller like any other: target
// limits count it and target quarantine refuses it, even in no network;
// without an address it is still allowed and counted nowhere.
func TestAnonymousCallerMeetsTargetLimits(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, target("mcp_server", "srv", 60, 1))
	f.Member(ratelimit.SubjectServer, "closed", ratelimit.GroupQuarantineTargets)
	if d := f.Check(anonymous("192.0.2.1")); !d.Allowed || len(d.Gates) != 1 {
		t.Fatalf("first anonymous call: %+v", d)
	}
	if d := f.Check(anonymous("192.0.2.2")); d.Allowed || d.Reason != enforce.ReasonThrottled {
		t.Errorf("second anonymous call on a target limit of 1: %+v, want throttled", d)
	}
	c := anonymous("192.0.2.3")
	c.TargetName = "closed"
	if d := f.Check(c); d.Reason != enforce.ReasonQuarantined || d.QuarantineScope != "target" {
		t.Errorf("anonymous call to a quarantined target: %+v", d)
	}
	c.ClientIP = ""
	if d := f.Check(c); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("anonymous call without an address: %+v, want allowed and counted nowhere, as before", d)
	}
	if d := f.Check(anonymous("")); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("anonymous call without an address on srv: %+v", d)
	}
}
