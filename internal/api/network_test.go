package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// checkIP decides a call from ip through POST /api/check (user "" is an
// anonymous call).
func checkIP(t *testing.T, hc *http.Client, env *apitest.Env, gw, user, ip string) checkResult {
	t.Helper()
	body := fmt.Sprintf(`{"username":%q,"target_type":"mcp_server","target_name":"srv","client_ip":%q}`, user, ip)
	return decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body}))
}

// A quarantined IPv6 /64 denies every address in it, users included, and
// nothing outside it; the most specific network wins, so a /64 in a
// group carved out of a quarantined /48 is not quarantined.
func TestNetworkQuarantineThroughCheck(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)

	res, err := admin.Quarantine(t.Context(), ratelimit.SubjectNetwork, "2001:DB8:1:2::/64", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{})
	if err != nil || !res.Created || res.Entry.Subject != "2001:db8:1:2::/64" || res.Entry.ID != "network:2001:db8:1:2::/64" {
		t.Fatalf("quarantine network: %+v, %v", res, err)
	}
	refresh(t, env)
	for _, c := range []struct{ user, ip, reason string }{
		{"alice", "2001:db8:1:2::1", "quarantined"},
		{"", "2001:db8:1:2:ffff:ffff:ffff:9", "quarantined"}, // a second address of the /64
		{"bob", "2001:db8:1:3::1", "allowed"},                // the next /64
		{"carol", "", "allowed"},                             // no address: no network
	} {
		r := checkIP(t, hc, env, gw, c.user, c.ip)
		if r.Reason != c.reason || (c.reason == "quarantined" && r.QuarantineScope != "caller") {
			t.Errorf("user %q from %q: %+v, want %s", c.user, c.ip, r, c.reason)
		}
	}
	// Administrators are never quarantined, not through their network either.
	if r := decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
		body: `{"username":"root","is_admin":true,"target_type":"mcp_server","target_name":"srv","client_ip":"2001:db8:1:2::5"}`})); r.Reason != "allowed" {
		t.Errorf("admin from a quarantined network: %+v, want allowed", r)
	}

	// A quarantined /48 with a /64 inside it in an ordinary group: the /64
	// is the most specific network of its addresses.
	if _, err := admin.Quarantine(t.Context(), ratelimit.SubjectNetwork, "2001:db8:9::/48", client.QuarantineRequest{}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "2001:db8:9:1::/64",
		Groups: []string{"office"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	if r := checkIP(t, hc, env, gw, "dave", "2001:db8:9:2::1"); r.Reason != "quarantined" {
		t.Errorf("address of the quarantined /48: %+v", r)
	}
	if r := checkIP(t, hc, env, gw, "dave", "2001:db8:9:1::1"); r.Reason != "allowed" {
		t.Errorf("address of the /64 carved out of the quarantined /48: %+v", r)
	}

	// The quarantine list shows networks among the callers; removing the
	// quarantine allows the /64 again.
	q, err := admin.ListQuarantine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range q.Callers {
		listed = append(listed, e.ID)
	}
	if strings.Join(listed, ",") != "network:2001:db8:1:2::/64,network:2001:db8:9::/48" &&
		strings.Join(listed, ",") != "network:2001:db8:9::/48,network:2001:db8:1:2::/64" {
		t.Errorf("quarantined callers: %v", listed)
	}
	if removed, _, err := admin.Unquarantine(t.Context(), ratelimit.SubjectNetwork, "2001:db8:1:2::/64", client.WriteOptions{}); err != nil || !removed {
		t.Fatal(err)
	}
	refresh(t, env)
	if r := checkIP(t, hc, env, gw, "alice", "2001:db8:1:2::1"); r.Reason != "allowed" {
		t.Errorf("after unquarantine: %+v", r)
	}
}

// An anonymous call with a client address is the caller ip:<key>,
// throttled by the caller limit of its network's group; two addresses
// never share a bucket unless their /64 does.
func TestAnonymousCallsKeyedByClientIP(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	// Above the floors' 60 s, so a limit of 2 is allowed.
	awayFromWindowEdge(t, 120)
	define(t, env, admin, group("anonymous", 120, 2, 0))
	for _, n := range []string{"203.0.113.0/24", "2001:db8::/32"} {
		if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: n,
			Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, env)

	steps := []struct {
		ip, reason string
	}{
		{"203.0.113.7", "allowed"},
		{"203.0.113.7", "allowed"},
		{"203.0.113.7", "throttled"},
		{"::ffff:203.0.113.7", "throttled"}, // the same address, mapped
		{"203.0.113.8", "allowed"},          // its own bucket
		{"2001:db8:1:1::1", "allowed"},
		{"2001:db8:1:1:ffff::2", "allowed"},   // the same /64: one bucket
		{"2001:db8:1:1::3", "throttled"},      // ...now full
		{"2001:db8:1:2::1", "allowed"},        // the next /64
		{"198.51.100.1", "allowed"},           // in no network: no limit
		{"198.51.100.1", "allowed"},           //
		{"198.51.100.1", "allowed"},           //
		{"2001:db8:1:1::1", "throttled"},      // still full
		{"2001:db8:1:1::1", "throttled"},      //
		{"203.0.113.8", "allowed"},            //
		{"203.0.113.8", "throttled"},          //
		{"2001:db8:1:2:aaaa::1", "allowed"},   //
		{"2001:db8:1:2:bbbb::1", "throttled"}, //
	}
	for i, s := range steps {
		r := checkIP(t, hc, env, gw, "", s.ip)
		if r.Reason != s.reason {
			t.Fatalf("step %d, anonymous from %s: %+v, want %s", i+1, s.ip, r, s.reason)
		}
		if s.ip != "198.51.100.1" && (len(r.Gates) != 1 || r.Gates[0]["definition_id"] != "caller:group:anonymous:120") {
			t.Errorf("step %d: gates %v, want the anonymous group's", i+1, r.Gates)
		}
	}
	// A user from the same network keeps their identity: the network's
	// groups are not theirs.
	if r := checkIP(t, hc, env, gw, "alice", "203.0.113.7"); r.Reason != "allowed" || len(r.Gates) != 0 {
		t.Errorf("user from a throttled address: %+v, want allowed without gates", r)
	}
	// The buckets are the ip callers' (IPv4 by the address, IPv6 by /64).
	for _, caller := range []string{"ip:203.0.113.7", "ip:2001:db8:1:1::/64"} {
		if n := countRows(t, env, `select count(*) from rl_counters where key = $1`, counterkey.Caller(120, caller).String()); n != 1 {
			t.Errorf("counters of %s: %d, want 1", caller, n)
		}
	}
}

func countRows(t *testing.T, env *apitest.Env, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := env.Store.Pool().QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Bad networks and client addresses: 400 naming the field, nothing stored.
func TestNetworkValidation(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	for _, c := range []struct{ subject, want string }{
		{"10.1.0.1/16", "subject: has host bits set: the network is 10.1.0.0/16"},
		{"10.0.0.0/33", `subject: prefix length "33": must be a number from 0 to 32`},
		{"10.1.2.3", "write 10.1.2.3/32 for the one address"},
	} {
		_, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: c.subject,
			Groups: []string{"anonymous"}}, client.WriteOptions{})
		var ve *client.APIError
		if !errors.As(err, &ve) || ve.StatusCode != 400 || len(ve.Errors) != 1 || ve.Errors[0].Field != "subject" || !strings.Contains(ve.Errors[0].Message, c.want) {
			t.Errorf("network %q: %v, want a 400 on subject saying %q", c.subject, err, c.want)
		}
		a := send(t, hc, env.URL, call{method: "POST", path: "/api/rate-limit-quarantine/network:" + c.subject, token: env.AdminToken})
		if a.status != 400 || !strings.Contains(string(a.body), strings.ReplaceAll(c.want, `"`, `\"`)) {
			t.Errorf("quarantine network %q: %d %s", c.subject, a.status, a.body)
		}
	}
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8",
		Groups: []string{ratelimit.GroupQuarantineTargets}}, client.WriteOptions{}); err == nil {
		t.Error("a network in quarantine-targets was accepted")
	}
	if n := countRows(t, env, `select count(*) from rl_memberships where subject_type = 'network'`); n != 0 {
		t.Errorf("refused networks left %d rows", n)
	}
	// The database refuses a network that is not one, should a write get past validation.
	_, err := env.Store.Pool().Exec(t.Context(), `insert into rl_memberships (subject_type, subject, groups) values ('network', '10.1.0.1/16', '{a}')`)
	if err == nil || !strings.Contains(err.Error(), "rl_memberships_network_subject") {
		t.Errorf("database insert of a host-bits network: %v, want the check constraint", err)
	}
	for _, ip := range []string{"300.1.2.3", "10.0.0.1:80", "fe80::1%eth0", "10.0.0.0/8"} {
		a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
			body: fmt.Sprintf(`{"target_type":"mcp_server","target_name":"srv","client_ip":%q}`, ip)})
		if a.status != 400 || !strings.Contains(string(a.body), `"field":"client_ip"`) || !strings.Contains(string(a.body), "client_ip: must be an IPv4 or IPv6 address") {
			t.Errorf("client_ip %q: %d %s, want a 400 naming client_ip", ip, a.status, a.body)
		}
	}
	// A network membership reads back by its id, slashes and all.
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "2001:db8::/48",
		Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := admin.GetMembership(t.Context(), "network:2001:DB8::/48")
	if err != nil || m.Subject != "2001:db8::/48" || m.Groups[0] != "anonymous" {
		t.Errorf("get network membership: %+v, %v", m, err)
	}
}

// rlapi's --ipv6-prefix (Config.IPv6Prefix) reaches the decisions: with
// /48, two /64s of one /48 are one anonymous caller.
func TestIPv6PrefixConfig(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{IPv6Prefix: 48})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 120)
	define(t, env, admin, group("anonymous", 120, 1, 0))
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "2001:db8::/32",
		Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	for i, s := range []struct{ ip, reason string }{
		{"2001:db8:1:1::1", "allowed"}, {"2001:db8:1:2::1", "throttled"}, {"2001:db8:2::1", "allowed"},
	} {
		if r := checkIP(t, hc, env, gw, "", s.ip); r.Reason != s.reason {
			t.Errorf("step %d, anonymous from %s: %+v, want %s", i+1, s.ip, r, s.reason)
		}
	}
}
