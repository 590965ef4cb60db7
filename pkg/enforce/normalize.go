package enforce

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// normalizeTargetName is the target-name rule Call.Normalize applies: the
// one definitions and memberships name targets by (pkg/ratelimit's, which
// internal/validate calls too). It returns the canonical name, or why name
// is not one (without a field name: "must not be empty").
func normalizeTargetName(targetType, name string) (canonical, problem string) {
	canonical, _, err := ratelimit.NormalizeTargetName(targetType, name)
	if err != nil {
		return "", strings.TrimPrefix(err.Error(), "name: ")
	}
	return canonical, ""
}

// normalizeClientIP is the client_ip rule of Call.Normalize: an IPv4 or
// IPv6 address without zone or port, returned in canonical form (an
// IPv4-mapped IPv6 address unmapped).
func normalizeClientIP(s string) (canonical, problem string) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		if len(s) > 64 {
			s = s[:64] + "..."
		}
		return "", fmt.Sprintf("must be an IPv4 or IPv6 address without port or zone, such as 203.0.113.7 or 2001:db8::1 (got %q)", s)
	}
	return a.Unmap().String(), ""
}

// clientAddr reads a normalized Call's ClientIP (the zero Addr when there
// is none or it is not an address).
func clientAddr(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}
	}
	return a.Unmap()
}
