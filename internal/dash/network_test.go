package dash

import (
	"io"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The Members view lists networks like any subject, and type:network
// selects them.
func TestMembersViewListsNetworks(t *testing.T) {
	t.Parallel()
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	v := newMembersView(&keys, &styles, fixedNow)
	v.SetSize(120, 20)
	v.SetMemberships([]ratelimit.Membership{
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"developers"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "2001:db8:42::/48", Groups: []string{"anonymous"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "203.0.113.0/24", Groups: []string{ratelimit.GroupQuarantineCallers}},
	})
	out := v.View()
	for _, want := range []string{"network", "2001:db8:42::/48", "anonymous", "203.0.113.0/24", "alice"} {
		if !strings.Contains(out, want) {
			t.Errorf("Members view lacks %q:\n%s", want, out)
		}
	}
	v.list.setQuery("type:network")
	if out := v.View(); strings.Contains(out, "alice") || !strings.Contains(out, "2001:db8:42::/48") || !strings.Contains(out, "203.0.113.0/24") {
		t.Errorf("type:network shows:\n%s", out)
	}
}
