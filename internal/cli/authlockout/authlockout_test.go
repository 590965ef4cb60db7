package authlockout_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// rlctl auth-lockout list shows a gateway's locked address; lift asks
// first (refusing without --yes when stdin is no terminal, lifting
// nothing), --dry-run lifts nothing, --yes lifts it so the server answers
// "not locked" again, a second lift exits 4, and bad input exits 2
// before anything is sent. Against a real rlapi.
func TestListAndLift(t *testing.T) {
	h := clitest.StartParallel(t)
	gw := h.ClientAs(h.Env.Token(t, "gateway", ratelimit.RoleEnforcer))
	const ip = "198.51.100.9"
	for range 5 {
		if _, err := gw.ReportAuth(t.Context(), client.AuthEvent{ClientIP: ip, Outcome: client.AuthFailure}); err != nil {
			t.Fatal(err)
		}
	}
	locked := func() bool {
		t.Helper()
		st, err := h.Client().AuthLockout(t.Context(), ip)
		if err != nil {
			t.Fatal(err)
		}
		return st.Locked
	}

	out := h.MustWith(clitest.Opts{TTY: true}, "auth-lockout", "list").Out
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ADDRESS") || !strings.Contains(lines[1], ip) ||
		!strings.Contains(lines[1], "gateway") || !strings.Contains(lines[1], "true") {
		t.Fatalf("list:\n%s\nwant a header and %s locked in scope gateway", out, ip)
	}
	if js := h.Must("auth-lockout", "list", "-o", "json"); !strings.Contains(js, `"remaining_seconds"`) {
		t.Errorf("list -o json: %s", js)
	}

	r := h.Run("auth-lockout", "lift", ip)
	if r.Code != 2 || !strings.Contains(r.ErrOut, "--yes") || !locked() {
		t.Fatalf("lift without --yes, stdin not a terminal: exit %d, %q; want 2 naming --yes, still locked", r.Code, r.ErrOut)
	}
	if r := h.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "auth-lockout", "lift", ip); r.Code == 0 || !strings.Contains(r.ErrOut, "canceled") || !locked() {
		t.Fatalf("lift answered no: %+v; want canceled, still locked", r)
	}
	if out := h.Must("auth-lockout", "lift", ip, "--dry-run"); !strings.Contains(out, "would be lifted") || !locked() {
		t.Fatalf("--dry-run: %q; want 'would be lifted', still locked", out)
	}
	out = h.Must("auth-lockout", "lift", ip, "--yes")
	if !strings.Contains(out, "auth-lockout/gateway/"+ip+" lifted (locked,") || locked() {
		t.Fatalf("lift --yes: %q; want it lifted, and the address served", out)
	}
	if r := h.Run("auth-lockout", "lift", ip, "--yes"); r.Code != 4 || !strings.Contains(r.ErrOut, "nothing to lift") {
		t.Errorf("second lift: exit %d, %q; want 4, nothing to lift", r.Code, r.ErrOut)
	}
	if r := h.Run("auth-lockout", "lift", ip, "--yes", "--scope", "ssh"); r.Code != 2 || !strings.Contains(r.ErrOut, "--scope") {
		t.Errorf("--scope ssh: exit %d, %q; want 2 naming --scope", r.Code, r.ErrOut)
	}
	if r := h.Run("auth-lockout", "lift", "nope", "--yes"); r.Code != 5 || !strings.Contains(r.ErrOut, "address") {
		t.Errorf("lift nope: exit %d, %q; want 5 naming the address", r.Code, r.ErrOut)
	}
}
