// Package clientip finds a request's client address, the one way rlapi's
// lockout, /api/validate, /api/check and httpgate.Middleware all do: the
// peer's address, or, when the peer is a trusted proxy, the right-most
// address of the forwarding header that is not itself a trusted proxy (the
// left-most entries are whatever the client chose to send). IPv4-mapped
// IPv6 addresses are unmapped first. Key masks an address to what limits
// count it by: IPv4 by the address, IPv6 by its /64 (configurable).
//
// Standard library only, so gateways can import it without rlctl's
// dependencies.
package clientip

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The forwarding headers a Resolver can believe.
const (
	// HeaderXForwardedFor is a comma-separated chain, each proxy appending
	// its peer (the default: what nginx's $proxy_add_x_forwarded_for and
	// most load balancers write).
	HeaderXForwardedFor = "X-Forwarded-For"
	// HeaderForwarded is RFC 7239's header: elements separated by commas,
	// each with a for= parameter (a token, or a quoted string holding
	// "[IPv6]:port"); each proxy appends an element.
	HeaderForwarded = "Forwarded"
	// HeaderXRealIP holds one address, set by the proxy (nginx:
	// proxy_set_header X-Real-IP $remote_addr).
	HeaderXRealIP = "X-Real-IP"
)

// Headers lists the headers a Resolver can believe, the default first.
func Headers() []string { return []string{HeaderXForwardedFor, HeaderForwarded, HeaderXRealIP} }

// ParseHeader returns the canonical spelling of one of Headers (any case),
// or an error naming them; "" is the default.
func ParseHeader(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return HeaderXForwardedFor, nil
	}
	for _, h := range Headers() {
		if strings.EqualFold(s, h) {
			return h, nil
		}
	}
	return "", fmt.Errorf("client IP header %q: must be one of %s", s, strings.Join(Headers(), ", "))
}

// MaxHops bounds the forwarding hops a Resolver reads, from the right: a
// chain of trusted proxies longer than this is a header the client wrote.
const MaxHops = 32

// DefaultIPv6Prefix is the prefix length IPv6 addresses are keyed by: one
// /64 is one site or one host's privacy addresses (RFC 4941 rotates a
// host's addresses within its /64).
const DefaultIPv6Prefix = 64

// Resolver finds client addresses. The zero value believes no header: the
// client is always the peer. It is safe for concurrent use and never
// modified.
type Resolver struct {
	trusted []netip.Prefix
	header  string
}

// New returns a Resolver that believes header (one of Headers; "" is
// X-Forwarded-For) from peers in trusted. Only that header is read: a
// proxy that writes X-Forwarded-For passes the client's own Forwarded
// header through untouched, so believing a header the proxy does not
// write would let the client choose its address.
func New(trusted []netip.Prefix, header string) (*Resolver, error) {
	h, err := ParseHeader(header)
	if err != nil {
		return nil, err
	}
	r := &Resolver{header: h}
	for _, p := range trusted {
		if p.IsValid() {
			r.trusted = append(r.trusted, netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-unmappedBits(p.Addr()), 0)).Masked())
		}
	}
	return r, nil
}

// unmappedBits is what unmapping an IPv4-mapped prefix takes off its
// length (96), 0 for any other.
func unmappedBits(a netip.Addr) int {
	if a.Is4In6() {
		return 96
	}
	return 0
}

// Header is the forwarding header r believes.
func (r *Resolver) Header() string {
	if r == nil || r.header == "" {
		return HeaderXForwardedFor
	}
	return r.header
}

// TrustedProxies are the networks r believes forwarding headers from.
func (r *Resolver) TrustedProxies() []netip.Prefix {
	if r == nil {
		return nil
	}
	return append([]netip.Prefix(nil), r.trusted...)
}

// Trusted reports whether a is in one of the trusted proxy networks.
func (r *Resolver) Trusted(a netip.Addr) bool {
	if r == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FromRequest is the client address of req: Resolve of its peer and
// headers. It is the zero Addr only when the peer's address is unknown
// (RemoteAddr not an address, as in a handler called directly).
func (r *Resolver) FromRequest(req *http.Request) netip.Addr {
	return r.Resolve(Peer(req), req.Header)
}

// Resolve is the client address of a request from peer with header h:
// peer itself unless it is trusted; else, walking the believed header's
// hops from the right, the first that is not a trusted proxy. A hop that
// is not an address (garbage, "unknown", an obfuscated RFC 7239 node) ends
// the walk, as does the MaxHops-th hop: the client is then the last
// trusted hop read, the nearest address a trusted proxy vouched for.
func (r *Resolver) Resolve(peer netip.Addr, h http.Header) netip.Addr {
	peer = peer.Unmap()
	if !r.Trusted(peer) {
		return peer
	}
	client := peer
	hops := 0
	values := h.Values(r.Header())
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			var hop string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				hop, v = v[j+1:], v[:j]
			} else {
				hop, v = v, ""
			}
			if hops++; hops > MaxHops {
				return client
			}
			a, ok := r.parse(hop)
			if !ok {
				return client
			}
			if !r.Trusted(a) {
				return a
			}
			client = a
		}
	}
	return client
}

func (r *Resolver) parse(hop string) (netip.Addr, bool) {
	if r.Header() == HeaderForwarded {
		return parseForwardedElement(hop)
	}
	return ParseHop(hop)
}

// ParseHop reads one X-Forwarded-For or X-Real-IP entry: an address, an
// address with a port as some proxies write it (10.0.0.77:1234,
// [2001:db8::1]:443), or a bracketed IPv6 address. The port and an IPv6
// zone are dropped, an IPv4-mapped address is unmapped.
func ParseHop(h string) (netip.Addr, bool) {
	h = strings.TrimSpace(h)
	if len(h) > 64 { // longer than any address with a port: garbage
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		if a, err := netip.ParseAddr(h[1 : len(h)-1]); err == nil {
			return a.WithZone("").Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// parseForwardedElement reads the for= parameter of one RFC 7239 element
// (for=192.0.2.60;proto=http;by=203.0.113.43, or for="[2001:db8::17]:4711").
// An element without for=, or whose node is "unknown" or obfuscated, has no
// address.
func parseForwardedElement(el string) (netip.Addr, bool) {
	for pair := range strings.SplitSeq(el, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "for") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = strings.ReplaceAll(value[1:len(value)-1], `\`, "")
		}
		// A bare IPv6 address must be bracketed and quoted (RFC 7239 §6);
		// ParseHop is lenient about that and about the port.
		return ParseHop(value)
	}
	return netip.Addr{}, false
}

// Peer is the address of req's peer (RemoteAddr), unmapped; the zero Addr
// when RemoteAddr is not an address.
func Peer(req *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// Network is the network a is keyed by: an IPv4 address alone (/32), an
// IPv6 address masked to ipv6Prefix bits (DefaultIPv6Prefix when 0 or out
// of range), after unmapping. The zero Addr gives the zero Prefix.
func Network(a netip.Addr, ipv6Prefix int) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.WithZone("").Unmap()
	bits := 32
	if a.Is6() {
		bits = ipv6Prefix
		if bits <= 0 || bits > 128 {
			bits = DefaultIPv6Prefix
		}
	}
	p, _ := a.Prefix(bits)
	return p
}

// Key is the text limits count a by: the IPv4 address (203.0.113.7), or
// the IPv6 network of ipv6Prefix bits in CIDR form (2001:db8:1:2::/64);
// "" for the zero Addr. Two addresses share a key exactly when they share
// the network.
func Key(a netip.Addr, ipv6Prefix int) string {
	p := Network(a, ipv6Prefix)
	if !p.IsValid() {
		return ""
	}
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}

// ValidIPv6Prefix reports whether bits is a usable IPv6 key prefix: 1 to
// 128.
func ValidIPv6Prefix(bits int) bool { return bits >= 1 && bits <= 128 }
