package enforce_test

import (
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func route(tier string, window int, paths ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "route", Name: tier, WindowSeconds: window,
		Paths: paths, Enabled: true}
}

func routeCall(method, path, username, ip string) enforce.Call {
	return enforce.Call{Method: method, Path: path, Username: username, ClientIP: ip}
}

// A tier limits each client address and each user on its own bucket, the
// call is refused when any dimension is over, and the gate says which
// pattern matched and which dimension refused. A path no route matches,
// without a target, is not limited at all, as before routes existed.
func TestRouteTierPerIPAndPerUser(t *testing.T) {
	t.Parallel()
	critical := route("critical", 60, "/auth/email/*", "/auth/sso/*")
	critical.IPMaxRequests, critical.UserMaxRequests = ptr(3), ptr(2)
	f := newMemFixture(t, critical)

	steps := []struct {
		call    enforce.Call
		allowed bool
		refused string // the dimension of the denying gate
	}{
		{routeCall("POST", "/auth/email/login", "alice", "198.51.100.7"), true, ""},
		{routeCall("POST", "/Auth//Email/./login?x=1", "alice", "198.51.100.7"), true, ""},
		// alice has used her 2: refused by the user dimension.
		{routeCall("POST", "/auth/sso/start", "alice", "198.51.100.7"), false, enforce.DimensionUser},
		// bob from the same address: the address has 1 left.
		{routeCall("GET", "/auth/sso/callback", "bob", "198.51.100.7"), true, ""},
		// an anonymous caller from that address: the address is over.
		{routeCall("GET", "/auth/email/reset", "", "198.51.100.7"), false, enforce.DimensionIP},
		// another address is its own bucket.
		{routeCall("GET", "/auth/email/reset", "", "198.51.100.8"), true, ""},
	}
	for i, s := range steps {
		d := f.Check(s.call)
		if d.Allowed != s.allowed {
			t.Fatalf("step %d %+v: allowed %v, want %v (%+v)", i+1, s.call, d.Allowed, s.allowed, d)
		}
		if !s.allowed {
			if len(d.Denied) != 1 || d.Denied[0].Dimension != s.refused || d.Denied[0].DefinitionID != "target:route:critical:60" {
				t.Errorf("step %d: denied %+v, want one gate of dimension %s", i+1, d.Denied, s.refused)
			}
		}
		for _, g := range d.Gates {
			if g.Matched != "/auth/email/*" && g.Matched != "/auth/sso/*" {
				t.Errorf("step %d: gate %s says it matched %q", i+1, g.DefinitionID, g.Matched)
			}
		}
	}
	if d := f.Check(routeCall("GET", "/auth/other", "alice", "198.51.100.7")); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("a path no route matches: %+v, want allowed with no gate", d)
	}
	if d := f.Check(routeCall("GET", "/auth/email", "alice", "198.51.100.7")); !d.Allowed || len(d.Gates) != 0 {
		t.Errorf("/auth/email is not under /auth/email/*: %+v", d)
	}
	keys := []string{}
	for _, g := range f.rec.gates() {
		keys = append(keys, g.Key)
	}
	if want := "[ct|60|ip:198.51.100.8|route:critical]"; fmt.Sprint(keys) != want {
		t.Errorf("last call's counter keys %v, want %s", keys, want)
	}
}

// Methods narrow a route; an exempt route wins over every tier; a shared
// (max_requests) bucket counts every caller; administrators skip the
// per-caller dimensions but not the shared bucket.
func TestRouteMethodsExemptAndShared(t *testing.T) {
	t.Parallel()
	writes := route("writes", 60, "/tokens/*")
	writes.Methods, writes.UserMaxRequests = []string{"POST", "DELETE"}, ptr(1)
	low := route("low", 60, "/*")
	low.MaxRequests = ptr(3)
	public := route("public", 60, "/docs", "/openapi.json", "/docs/*")
	public.Exempt = true
	f := newMemFixture(t, writes, low, public)

	if d := f.Check(routeCall("GET", "/tokens/1", "alice", "")); !d.Allowed || len(d.Gates) != 1 || d.Gates[0].DefinitionID != "target:route:low:60" {
		t.Fatalf("GET /tokens/1: %+v, want only the low tier (writes names POST and DELETE)", d)
	}
	if d := f.Check(routeCall("POST", "/tokens/1", "alice", "")); !d.Allowed || len(d.Gates) != 2 {
		t.Fatalf("POST /tokens/1: %+v, want the writes and low tiers", d)
	}
	d := f.Check(routeCall("DELETE", "/tokens/2", "alice", ""))
	if d.Allowed || len(d.Denied) != 1 || d.Denied[0].Dimension != enforce.DimensionUser {
		t.Fatalf("second write by alice: %+v, want refused by the writes tier's user bucket", d)
	}
	for range 5 {
		if d := f.Check(routeCall("GET", "/docs/index.html", "alice", "")); !d.Allowed || len(d.Gates) != 0 {
			t.Fatalf("exempt /docs/index.html: %+v, want allowed, nothing counted", d)
		}
	}
	admin := routeCall("DELETE", "/tokens/3", "root", "")
	admin.IsAdmin = true
	if d := f.Check(admin); !d.Allowed || len(d.Gates) != 1 || d.Gates[0].Dimension != enforce.DimensionAll {
		t.Fatalf("admin write: %+v, want only the shared low bucket", d)
	}
	// low's shared bucket: GET, POST, admin DELETE took 3 (the refused
	// DELETE took nothing).
	if d := f.Check(routeCall("GET", "/x", "carol", "")); d.Allowed || d.Denied[0].Dimension != enforce.DimensionAll {
		t.Errorf("fourth call on the low tier: %+v, want refused by its shared bucket", d)
	}
}

func TestRoutePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/":                       "/",
		"":                        "/",
		"/Auth//Email/./x/../y?q": "/auth/email/y",
		"/a%2Fb;v=1/c":            "/a/b/c",
		"http://h/Tools/x#f":      "/tools/x",
		"/a\\b":                   "/a/b",
	} {
		if got := enforce.RoutePath(in); got != want {
			t.Errorf("RoutePath(%q) = %q, want %q", in, got, want)
		}
		if again := enforce.RoutePath(want); again != want {
			t.Errorf("RoutePath(%q) = %q: not idempotent", want, again)
		}
	}
}
