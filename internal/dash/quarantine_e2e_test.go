package dash_test

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDashboardQuarantinesNetworksAndTeams runs the real rlctl binary in a
// pseudo-terminal against a real rlapi: a mistyped network is refused in
// the form, naming the field, and the server holds nothing; a network and
// a team quarantined through the form are listed, held by the server and
// deny the calls from inside them.
func TestDashboardQuarantinesNetworksAndTeams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	env, bin, ctx, c := startDashboardE2E(t)

	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "dashboard", "--server", env.URL, "--token", env.AdminToken, "--refresh", "500ms")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8"}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	scr := newScreen(40, 120)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(scr, ptmx)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = ptmx.Close()
		<-readDone
	})
	term := &driver{t: t, scr: scr, in: ptmx}
	term.waitFor("the dashboard", func(s string) bool { return strings.Contains(s, "connected") })
	term.keys("3")
	term.waitFor("the Quarantine view", func(s string) bool {
		return strings.Contains(s, "[3 Quarantine]") && strings.Contains(s, "no quarantined subjects")
	})

	// A network with host bits set is refused in the form.
	term.keys("a")
	term.waitFor("the form", func(s string) bool { return strings.Contains(s, "( ) network") && strings.Contains(s, "( ) team") })
	term.keys("n", "\t")
	term.keys(strings.Split("10.9.8.7/16", "")...)
	term.keys("\t", "\t", "\r")
	term.waitFor("the form's refusal", func(s string) bool {
		return strings.Contains(s, "subject: has host bits set: the network is 10.9.0.0/16") && !strings.Contains(s, "Quarantine network:")
	})
	if q, err := c.ListQuarantine(ctx); err != nil || len(q.Callers)+len(q.Targets) != 0 {
		t.Fatalf("server's quarantine after a refused network: %+v, %v", q, err)
	}
	term.keys("\x1b")
	term.waitFor("the form closed", func(s string) bool { return strings.Contains(s, "canceled: quarantine") })

	// The network, right this time, and then a team.
	for _, tt := range []struct{ key, subject, id string }{
		{"n", "10.9.0.0/16", "network:10.9.0.0/16"},
		{"t", "e2e-acme", "team:e2e-acme"},
	} {
		term.keys("a")
		term.waitFor("the form", func(s string) bool { return strings.Contains(s, "Quarantine a caller or a target") })
		term.keys(tt.key, "\t")
		term.keys(strings.Split(tt.subject, "")...)
		term.keys("\t")
		term.keys(strings.Split("e2e scan", "")...)
		term.keys("\t", "2", "h", "\r")
		term.waitFor("the confirmation of "+tt.id, func(s string) bool {
			return strings.Contains(s, "Quarantine "+tt.id+"?") && strings.Contains(s, "Lifted after 2h.")
		})
		term.keys("y")
		term.waitFor(tt.id+" listed", func(s string) bool {
			return strings.Contains(s, "✓ quarantined "+tt.id) && rowWith(s, tt.id, "e2e scan", "active")
		})
	}
	q, err := c.ListQuarantine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range q.Callers {
		got[e.SubjectType+":"+e.Subject] = e.ExpiresAt != nil && e.Reason == "e2e scan"
	}
	if len(q.Callers) != 2 || len(q.Targets) != 0 || !got["network:10.9.0.0/16"] || !got["team:e2e-acme"] {
		t.Fatalf("server's quarantine: %+v", q)
	}

	// The quarantines deny: a call from inside the network, and one naming
	// the team; a call from outside both is let through.
	if err := env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		call enforce.Call
		want string
	}{
		{enforce.Call{Username: "e2e-someone", ClientIP: "10.9.200.1", TargetType: ratelimit.EntityMCPServer, TargetName: "e2e-tools"}, enforce.ReasonQuarantined},
		{enforce.Call{Username: "e2e-someone", Team: "e2e-acme", ClientIP: "192.0.2.1", TargetType: ratelimit.EntityMCPServer, TargetName: "e2e-tools"}, enforce.ReasonQuarantined},
		{enforce.Call{Username: "e2e-someone", ClientIP: "192.0.2.1", TargetType: ratelimit.EntityMCPServer, TargetName: "e2e-tools"}, enforce.ReasonAllowed},
	} {
		if d, err := env.Enforcer.Check(ctx, tt.call); err != nil || d.Reason != tt.want {
			t.Errorf("%+v: %+v, %v; want %s", tt.call, d, err, tt.want)
		}
	}
	term.keys("q")
}
