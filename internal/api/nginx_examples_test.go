package api_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// applyExample applies an apply file of docs/examples/ as rlctl apply
// reads it.
func applyExample(t *testing.T, admin *client.Client, file string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/examples/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range applydoc.DecodeFile(data, applydoc.Sniff(data), applydoc.Options{}) {
		if p.Err != nil || len(p.Problems) > 0 {
			t.Fatalf("%s: %v %v", file, p.Err, p.Problems)
		}
		if _, err := admin.Apply(t.Context(), client.State{Definitions: p.Doc.Definitions, Memberships: p.Doc.Memberships}, client.ApplyOptions{}); err != nil {
			t.Fatalf("apply %s: %v", file, err)
		}
	}
}

// Behind real nginx: seed 002's per-IP limit counts every call from one
// client address, whoever makes it (the 61st is a 429), and not another
// address's; a team named by X-Auth-Team shares its per-team bucket.
func TestNginxExampleSeed002AndTeams(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-examples"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.1/32"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)

	from := func(local, user, team string) int {
		t.Helper()
		return nginxCall(t, gw, local, user, team)
	}

	awayFromWindowEdge(t, 120)
	awayFromWindowEdge(t, 60) // seed 002's window
	applyExample(t, admin, "seed-002-per-ip.yaml")
	tenants := group("tenants", 120, 2, 2)
	tenants.Per = ratelimit.PerTeam
	define(t, env, admin, tenants)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectTeam, Subject: "acme",
		Groups: []string{"tenants"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)

	allowed := 0
	for i := range 60 {
		if from("127.0.0.21", []string{"alice", "bob", ""}[i%3], "") == http.StatusOK {
			allowed++
		}
	}
	if allowed != 60 {
		t.Fatalf("60 calls from 127.0.0.21: %d allowed", allowed)
	}
	if got := from("127.0.0.21", "carol", ""); got != http.StatusTooManyRequests {
		t.Errorf("the 61st call from 127.0.0.21: %d, want 429", got)
	}
	if got := from("127.0.0.22", "carol", ""); got != http.StatusOK {
		t.Errorf("carol from another address: %d, want 200", got)
	}
	// Team acme's 2 per 120 s, whoever of the team calls.
	for i, s := range []struct {
		user, team string
		status     int
	}{
		{"dave", "acme", http.StatusOK},
		{"erin", "acme", http.StatusOK},
		{"frank", "acme", http.StatusTooManyRequests},
		{"frank", "", http.StatusOK},
		{"frank", "globex", http.StatusOK},
	} {
		if got := from("127.0.0.23", s.user, s.team); got != s.status {
			t.Errorf("team step %d: %s of team %q: %d, want %d", i+1, s.user, s.team, got, s.status)
		}
	}
}

// nginxCall sends a call to the MCP server srv through the nginx at gw
// from the loopback address local, as user (none: anonymous) of team
// (none: no team), and returns the status.
func nginxCall(t *testing.T, gw, local, user, team string) int {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-Auth-Username", user)
	}
	if team != "" {
		req.Header.Set("X-Auth-Team", team)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("call from %s: %v", local, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Behind real nginx: seed 001's anonymous callers are keyed by the client
// address nginx saw: one address's anonymous calls share its 30, another
// address has its own, and a user calling from the spent address keeps
// her own bucket. (IPv6 /64 sharing is tested through /api/check, the
// middleware and /api/validate in internal/cli's
// TestExampleSeed001AnonymousByIP: the loopback has one IPv6 address.)
func TestNginxExampleSeed001(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-seed001"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.1/32"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	awayFromWindowEdge(t, 60)
	applyExample(t, admin, "seed-001-anonymous-by-ip.yaml")
	refresh(t, env)
	allowed := 0
	for range 30 {
		if nginxCall(t, gw, "127.0.0.31", "", "") == http.StatusOK {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("30 anonymous calls from 127.0.0.31: %d allowed", allowed)
	}
	for _, s := range []struct {
		local, user string
		status      int
	}{
		{"127.0.0.31", "", http.StatusTooManyRequests}, // the address's 31st
		{"127.0.0.32", "", http.StatusOK},              // another address: its own bucket
		{"127.0.0.31", "alice", http.StatusOK},         // a principal never borrows the anonymous bucket
	} {
		if got := nginxCall(t, gw, s.local, s.user, ""); got != s.status {
			t.Errorf("%q from %s: %d, want %d", s.user, s.local, got, s.status)
		}
	}
}
