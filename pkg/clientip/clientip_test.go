package clientip_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/clientip"
)

func mustResolver(t testing.TB, header string, trusted ...string) *clientip.Resolver {
	t.Helper()
	var ps []netip.Prefix
	for _, s := range trusted {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	r, err := clientip.New(ps, header)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolveHostileHeaders(t *testing.T) {
	t.Parallel()
	proxy := []string{"10.0.0.0/8", "2001:db8:ffff::/48"}
	cases := []struct {
		name   string
		header string // the header the resolver believes
		peer   string
		values []string // of that header
		other  map[string]string
		want   string
	}{
		{name: "untrusted peer: headers ignored", peer: "198.51.100.9", values: []string{"203.0.113.7"}, want: "198.51.100.9"},
		{name: "untrusted peer: X-Real-IP ignored", header: clientip.HeaderXRealIP, peer: "198.51.100.9", values: []string{"203.0.113.7"}, want: "198.51.100.9"},
		{name: "untrusted peer: Forwarded ignored", header: clientip.HeaderForwarded, peer: "198.51.100.9", values: []string{"for=203.0.113.7"}, want: "198.51.100.9"},
		{name: "trusted peer, one hop", peer: "10.0.0.1", values: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "spoofed left-most entries", peer: "10.0.0.1", values: []string{"1.1.1.1, 8.8.8.8, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "chain of trusted proxies", peer: "10.0.0.1", values: []string{"6.6.6.6, 203.0.113.7, 10.2.0.1, 10.3.0.1"}, want: "203.0.113.7"},
		{name: "several header lines", peer: "10.0.0.1", values: []string{"6.6.6.6", "203.0.113.7, 10.2.0.1"}, want: "203.0.113.7"},
		{name: "no header: the trusted peer", peer: "10.0.0.1", want: "10.0.0.1"},
		{name: "garbage right of the client ends the walk", peer: "10.0.0.1", values: []string{"203.0.113.7, not-an-ip"}, want: "10.0.0.1"},
		{name: "garbage after trusted hops: the nearest vouched hop", peer: "10.0.0.1", values: []string{"203.0.113.7, <script>, 10.9.9.9"}, want: "10.9.9.9"},
		{name: "empty entries are garbage", peer: "10.0.0.1", values: []string{"203.0.113.7,,"}, want: "10.0.0.1"},
		{name: "port dropped", peer: "10.0.0.1", values: []string{"203.0.113.7:4711"}, want: "203.0.113.7"},
		{name: "bracketed IPv6 with port", peer: "10.0.0.1", values: []string{"[2001:db8::1]:443"}, want: "2001:db8::1"},
		{name: "IPv6 zone dropped", peer: "10.0.0.1", values: []string{"fe80::1%eth0"}, want: "fe80::1"},
		{name: "IPv4-mapped hop unmapped", peer: "10.0.0.1", values: []string{"::ffff:203.0.113.7"}, want: "203.0.113.7"},
		{name: "IPv4-mapped peer unmapped, trusted", peer: "::ffff:10.0.0.1", values: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "IPv4-mapped trusted hop skipped", peer: "10.0.0.1", values: []string{"203.0.113.7, ::ffff:10.4.0.1"}, want: "203.0.113.7"},
		{name: "IPv6 proxy", peer: "2001:db8:ffff::5", values: []string{"2001:db8:1::7"}, want: "2001:db8:1::7"},
		{name: "a header not believed is ignored", peer: "10.0.0.1", other: map[string]string{"Forwarded": "for=6.6.6.6", "X-Real-IP": "6.6.6.7"}, want: "10.0.0.1"},
		{name: "X-Forwarded-For ignored when Forwarded is believed", header: clientip.HeaderForwarded, peer: "10.0.0.1",
			other: map[string]string{"X-Forwarded-For": "6.6.6.6"}, values: []string{"for=203.0.113.7"}, want: "203.0.113.7"},
		{name: "Forwarded, several elements", header: clientip.HeaderForwarded, peer: "10.0.0.1",
			values: []string{`for=6.6.6.6, for=203.0.113.7;proto=https;by=10.0.0.1, for=10.1.1.1`}, want: "203.0.113.7"},
		{name: "Forwarded, quoted IPv6 with port", header: clientip.HeaderForwarded, peer: "10.0.0.1",
			values: []string{`for="[2001:db8:cafe::17]:4711"`}, want: "2001:db8:cafe::17"},
		{name: "Forwarded, case of for=", header: clientip.HeaderForwarded, peer: "10.0.0.1", values: []string{`proto=http; For=203.0.113.7`}, want: "203.0.113.7"},
		{name: "Forwarded, unknown node ends the walk", header: clientip.HeaderForwarded, peer: "10.0.0.1", values: []string{`for=203.0.113.7, for=unknown`}, want: "10.0.0.1"},
		{name: "Forwarded, obfuscated node ends the walk", header: clientip.HeaderForwarded, peer: "10.0.0.1", values: []string{`for=203.0.113.7, for=_hidden`}, want: "10.0.0.1"},
		{name: "Forwarded, element without for=", header: clientip.HeaderForwarded, peer: "10.0.0.1", values: []string{`for=203.0.113.7, proto=https`}, want: "10.0.0.1"},
		{name: "Forwarded, unbalanced quote", header: clientip.HeaderForwarded, peer: "10.0.0.1", values: []string{`for="[2001:db8::1]`}, want: "10.0.0.1"},
		{name: "X-Real-IP", header: clientip.HeaderXRealIP, peer: "10.0.0.1", values: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "X-Real-IP garbage", header: clientip.HeaderXRealIP, peer: "10.0.0.1", values: []string{"nope"}, want: "10.0.0.1"},
		{name: "hop far too long", peer: "10.0.0.1", values: []string{strings.Repeat("1", 100)}, want: "10.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := mustResolver(t, c.header, proxy...)
			h := http.Header{}
			for _, v := range c.values {
				h.Add(r.Header(), v)
			}
			for k, v := range c.other {
				h.Set(k, v)
			}
			if got := r.Resolve(netip.MustParseAddr(c.peer), h); got.String() != c.want {
				t.Errorf("client of %s with %s %q: %s, want %s", c.peer, r.Header(), c.values, got, c.want)
			}
		})
	}
}

// A chain longer than MaxHops made of trusted-looking addresses is the
// client's own writing: the walk stops and the client is the last hop read.
func TestResolveBoundsHops(t *testing.T) {
	t.Parallel()
	r := mustResolver(t, "", "10.0.0.0/8")
	hops := []string{"203.0.113.7"}
	for range clientip.MaxHops + 10 {
		hops = append(hops, "10.1.2.3")
	}
	h := http.Header{"X-Forwarded-For": {strings.Join(hops, ",")}}
	if got := r.Resolve(netip.MustParseAddr("10.0.0.1"), h); got.String() != "10.1.2.3" {
		t.Errorf("client behind %d trusted hops: %s, want the last hop read (10.1.2.3)", len(hops)-1, got)
	}
}

func TestZeroResolverBelievesNothing(t *testing.T) {
	t.Parallel()
	var r *clientip.Resolver
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "[::ffff:10.0.0.1]:5555"
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	if got := r.FromRequest(req); got.String() != "10.0.0.1" {
		t.Errorf("nil resolver: %s, want the unmapped peer 10.0.0.1", got)
	}
	req.RemoteAddr = "pipe"
	if got := r.FromRequest(req); got.IsValid() {
		t.Errorf("peer without an address: %s, want none", got)
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr string
		bits int
		want string
	}{
		{"203.0.113.7", 64, "203.0.113.7"},
		{"::ffff:203.0.113.7", 64, "203.0.113.7"},
		{"2001:db8:1:2:aaaa::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::2", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", 64, "2001:db8:1:3::/64"},
		{"2001:db8:1:2:aaaa::1", 0, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:aaaa::1", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:aaaa::1", 128, "2001:db8:1:2:aaaa::1/128"},
	}
	for _, c := range cases {
		if got := clientip.Key(netip.MustParseAddr(c.addr), c.bits); got != c.want {
			t.Errorf("Key(%s, %d) = %q, want %q", c.addr, c.bits, got, c.want)
		}
	}
	if got := clientip.Key(netip.Addr{}, 64); got != "" {
		t.Errorf("Key of no address: %q, want empty", got)
	}
}

func TestNewUnmapsTrustedPrefixes(t *testing.T) {
	t.Parallel()
	r := mustResolver(t, "", "::ffff:10.0.0.0/104")
	if !r.Trusted(netip.MustParseAddr("10.9.9.9")) {
		t.Error("::ffff:10.0.0.0/104 does not trust 10.9.9.9")
	}
	if _, err := clientip.New(nil, "X-Client-IP"); err == nil || !strings.Contains(err.Error(), "X-Forwarded-For, Forwarded, X-Real-IP") {
		t.Errorf("unknown header: %v, want an error naming the headers", err)
	}
	if h, err := clientip.ParseHeader("x-real-ip"); err != nil || h != clientip.HeaderXRealIP {
		t.Errorf("ParseHeader(x-real-ip) = %q, %v", h, err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "1.1.1.1, 10.0.0.2", `for="[2001:db8::1]:80";proto=http, for=10.0.0.3`,
		"[::ffff:1.2.3.4]:5", ",,,", "for=\"\\\"", "fe80::1%zone"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, v string, which uint8) {
		header := clientip.Headers()[int(which)%len(clientip.Headers())]
		r := mustResolver(t, header, "10.0.0.0/8", "2001:db8::/32")
		peer := netip.MustParseAddr("10.0.0.1")
		got := r.Resolve(peer, http.Header{header: {v}})
		if !got.IsValid() || got.Is4In6() || got.Zone() != "" {
			t.Fatalf("Resolve(%q) = %v: want a valid, unmapped address without zone", v, got)
		}
		// The client is the peer, or an address written in the header.
		if got != peer && !strings.Contains(strings.ToLower(v), strings.Split(got.String(), ":")[0]) && !got.Is4() {
			t.Fatalf("Resolve(%q) = %v: neither the peer nor in the header", v, got)
		}
		if k := clientip.Key(got, 64); k == "" || len(k) > 50 {
			t.Fatalf("Key(%v) = %q", got, k)
		}
		// An untrusted peer is never overridden.
		untrusted := netip.MustParseAddr("198.51.100.1")
		if got := r.Resolve(untrusted, http.Header{header: {v}}); got != untrusted {
			t.Fatalf("untrusted peer with %q: %v", v, got)
		}
	})
}

// Moved from internal/api (rlapi's own parser before this package).
func TestParseHop(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"10.0.0.77", "10.0.0.77"},
		{" 10.0.0.77:1234 ", "10.0.0.77"},
		{"[2001:db8::1]:443", "2001:db8::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"unknown", ""},
		{"10.0.0.77:", ""},
	} {
		a, ok := clientip.ParseHop(c.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != c.want {
			t.Errorf("ParseHop(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
