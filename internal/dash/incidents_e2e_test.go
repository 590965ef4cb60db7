package dash_test

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDashboardIncidents runs the real rlctl binary in a pseudo-terminal
// against a real rlapi whose Enforcer throttled a caller: the Incidents
// view lists the caller with its count and limit, a quarantines it through
// the prefilled form and the confirmation, and the server holds the
// quarantine; an anonymous ip: caller is quarantined the same way as its
// network and listed.
func TestDashboardIncidents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	env, bin, ctx, c := startDashboardE2E(t)
	d := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "e2e-busy", WindowSeconds: 3600,
		MaxRequests: ptr(2), Enabled: true, Mode: "enforce"}
	if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	throttled := 0 // as the decisions say: a call that timed out on a loaded machine failed open
	for range 9 {
		if d, _ := env.Enforcer.Check(ctx, enforce.Call{Username: "e2e-flooder", TargetType: "mcp_server", TargetName: "e2e-busy"}); d.Reason == enforce.ReasonThrottled {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("no call was throttled")
	}
	if err := env.Violations.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:e2e-flooder",
		DefinitionID: "caller:group:e2e-tier:60", Count: 7}); err != nil {
		t.Fatal(err)
	}
	// An anonymous caller, keyed by its client address.
	if err := env.Violations.RecordEvent(ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: "ip:203.0.113.7",
		DefinitionID: "caller:group:anonymous:60", Count: 5}); err != nil {
		t.Fatal(err)
	}
	env.Violations.Flush(ctx)

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
	term.keys("6")
	// The target's limit throttled the calls past 2 (its subject is the
	// target); the caller's own row, 7 calls, was recorded directly.
	term.waitFor("the throttled subjects", func(s string) bool {
		return strings.Contains(s, "[6 Incidents]") && rowWith(s, "mcp_server:e2e-busy", strconv.Itoa(throttled), "target:mcp_server:e2e-busy:3600") &&
			rowWith(s, "user:e2e-flooder", "7", "caller:group:e2e-tier:60") && rowWith(s, "ip:203.0.113.7", "5", "caller:group:anonymous:60")
	})
	term.keys(strings.Split("/subject:user:e2e-flooder", "")...)
	term.keys("\r")
	term.waitFor("the filter kept", func(s string) bool {
		return strings.Contains(s, "filter: subject:user:e2e-flooder") && !strings.Contains(s, "mcp_server:e2e-busy ")
	})
	term.keys("a")
	term.waitFor("the prefilled form", func(s string) bool {
		return strings.Contains(s, "Quarantine a caller or a target") && strings.Contains(s, "e2e-flooder") && strings.Contains(s, "incident: 7 calls refused")
	})
	term.keys("\r", "\r")
	term.waitFor("the confirmation", func(s string) bool {
		return strings.Contains(s, "Quarantine user:e2e-flooder?") && strings.Contains(s, "Lifted after 1h.")
	})
	term.keys("y")
	term.waitFor("the answer", func(s string) bool { return strings.Contains(s, "✓ quarantined user:e2e-flooder") })
	q, err := c.ListQuarantine(ctx)
	if err != nil || len(q.Callers) != 1 || q.Callers[0].Subject != "e2e-flooder" || q.Callers[0].ExpiresAt == nil ||
		!strings.HasPrefix(q.Callers[0].Reason, "incident: 7 calls refused") {
		t.Fatalf("server's quarantine: %+v, %v", q, err)
	}

	// The anonymous caller is quarantined as the network its key names,
	// the one address, and the Quarantine view lists it.
	term.keys("\x1b")
	term.waitFor("the filter cleared", func(s string) bool { return !strings.Contains(s, "filter: subject:user:e2e-flooder") })
	term.keys(strings.Split("/subject:ip:203.0.113.7", "")...)
	term.keys("\r")
	term.waitFor("the ip filter kept", func(s string) bool {
		return strings.Contains(s, "filter: subject:ip:203.0.113.7") && !strings.Contains(s, "user:e2e-flooder ")
	})
	term.keys("a")
	term.waitFor("the form prefilled with the network", func(s string) bool {
		return strings.Contains(s, "Quarantine a caller or a target") && strings.Contains(s, "(*) network") &&
			strings.Contains(s, "203.0.113.7/32") && strings.Contains(s, "incident: 5 calls refused")
	})
	term.keys("\r", "\r")
	term.waitFor("the network's confirmation", func(s string) bool {
		return strings.Contains(s, "Quarantine network:203.0.113.7/32?") && strings.Contains(s, "Lifted after 1h.")
	})
	term.keys("y")
	term.waitFor("the network's answer", func(s string) bool { return strings.Contains(s, "✓ quarantined network:203.0.113.7/32") })
	q, err = c.ListQuarantine(ctx)
	if err != nil || len(q.Callers) != 2 {
		t.Fatalf("server's quarantine: %+v, %v", q, err)
	}
	var network *client.QuarantineEntry
	for i, e := range q.Callers {
		if e.SubjectType == ratelimit.SubjectNetwork {
			network = &q.Callers[i]
		}
	}
	if network == nil || network.Subject != "203.0.113.7/32" || network.ExpiresAt == nil || !strings.HasPrefix(network.Reason, "incident: 5 calls refused") {
		t.Fatalf("server's quarantine of the network: %+v", q.Callers)
	}
	term.keys("3")
	term.waitFor("the network listed in Quarantine", func(s string) bool {
		return strings.Contains(s, "[3 Quarantine]") && strings.Contains(s, "203.0.113.7/32")
	})
	term.keys("q")
}
