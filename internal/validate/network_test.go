package validate

import (
	"errors"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestNetworkMembership(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"10.1.0.0/16", "10.1.0.0/16"},
		{" 10.1.2.3/32 ", "10.1.2.3/32"},
		{"2001:DB8::/48", "2001:db8::/48"},
		{"2001:db8:0:0::/64", "2001:db8::/64"},
		{"0.0.0.0/0", "0.0.0.0/0"},
		{"::/0", "::/0"},
	} {
		m, err := Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: c.in,
			Groups: []string{"anonymous", ratelimit.GroupQuarantineCallers}})
		if err != nil {
			t.Errorf("network %q: %v", c.in, err)
			continue
		}
		if m.Subject != c.want || m.ID != "network:"+c.want {
			t.Errorf("network %q: subject %q id %q, want %q", c.in, m.Subject, m.ID, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"10.1.0.1/16", `subject: has host bits set: the network is 10.1.0.0/16 (got "10.1.0.1/16")`},
		{"2001:db8::1/48", `subject: has host bits set: the network is 2001:db8::/48 (got "2001:db8::1/48")`},
		{"10.1.2.3", `subject: must be a network in CIDR form: write 10.1.2.3/32 for the one address (got "10.1.2.3")`},
		{"10.0.0.0/33", `subject: prefix length "33": must be a number from 0 to 32 for an IPv4 network (got "10.0.0.0/33")`},
		{"2001:db8::/129", `subject: prefix length "129": must be a number from 0 to 128 for an IPv6 network (got "2001:db8::/129")`},
		{"10.0.0.0/-1", `subject: prefix length "-1": must be a number from 0 to 32 for an IPv4 network (got "10.0.0.0/-1")`},
		{"::ffff:10.0.0.0/104", `subject: an IPv4-mapped IPv6 network: write it as IPv4 (10.0.0.0/8): client addresses are unmapped before matching (got "::ffff:10.0.0.0/104")`},
		{"fe80::%eth0/64", `subject: must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48 (got "fe80::%eth0/64")`},
		{"example.com/24", `subject: must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48 (got "example.com/24")`},
		{"", `subject: must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48`},
	} {
		_, err := Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: c.in, Groups: []string{"anonymous"}})
		var ve *Error
		if !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Field != "subject" || ve.Errors[0].Message != c.want {
			t.Errorf("network %q: %v, want %s", c.in, err, c.want)
		}
	}
	_, err := Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{ratelimit.GroupQuarantineTargets}})
	if err == nil || !strings.Contains(err.Error(), "use quarantine-callers to quarantine a network") {
		t.Errorf("network in quarantine-targets: %v", err)
	}
	// Networks are not administrators.
	if _, err := Admin(ratelimit.Admin{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8"}); err == nil {
		t.Error("a network was accepted as an administrator")
	}
	if id, err := MembershipID("network:2001:DB8::/48"); err != nil || id != "network:2001:db8::/48" {
		t.Errorf("MembershipID(network:2001:DB8::/48) = %q, %v", id, err)
	}
}

// FuzzNetworkCIDR: what the network rule accepts is a masked prefix in
// canonical form that it accepts unchanged, never an IPv4-mapped one, and
// it fits the database's check (hex digits, dots, colons, a slash and a
// length).
func FuzzNetworkCIDR(f *testing.F) {
	for _, s := range []string{"10.1.0.0/16", "10.1.0.1/16", "2001:DB8::/48", "::/0", "::ffff:1.2.3.0/120", "1.2.3.4",
		"fe80::%x/64", "10.0.0.0/33", " 10.0.0.0/8 ", "1.2.3.4/032", "::1.2.3.4/128"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, fe := networkCIDR("subject", s)
		if fe != nil {
			if !strings.HasPrefix(fe.Message, "subject: ") {
				t.Fatalf("message %q does not name the field", fe.Message)
			}
			return
		}
		again, fe := networkCIDR("subject", out)
		if fe != nil || again != out {
			t.Fatalf("%q -> %q -> %q, %v: not canonical", s, out, again, fe)
		}
		p, err := netip.ParsePrefix(out)
		if err != nil || p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			t.Fatalf("%q -> %q: not a masked prefix (%v)", s, out, err)
		}
		if !regexp.MustCompile(`^[0-9a-f.:]+/[0-9]{1,3}$`).MatchString(out) {
			t.Fatalf("%q -> %q: the database's check refuses it", s, out)
		}
	})
}
