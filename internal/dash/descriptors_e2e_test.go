package dash_test

import (
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDashboardShowsDescriptors runs the real binary against a real rlapi
// holding Envoy descriptor definitions: the table names each by domain
// and entries as written (not the percent-encoded name), the filter finds
// one by a value as written, the detail pane shows its Envoy fields, and a
// limit changed with the form is stored with every descriptor field as it
// was.
func TestDashboardShowsDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	env, bin, ctx, c := startDashboardE2E(t)
	desc := func(domain string, entries ...ratelimit.DescriptorEntry) ratelimit.Definition {
		return ratelimit.Definition{Axis: "target", EntityType: ratelimit.EntityDescriptor, Name: ratelimit.DescriptorName(domain, entries),
			DescriptorFields: ratelimit.DescriptorFields{Domain: domain, Descriptor: entries}, Enabled: true, Mode: "enforce"}
	}
	perRoute := desc("edge", ratelimit.DescriptorEntry{Key: "route", Value: "checkout"})
	perRoute.WindowSeconds, perRoute.MaxRequests, perRoute.LimitName, perRoute.Mode = 60, ptr(1000), "per-route", "shadow"
	files := desc("edge", ratelimit.DescriptorEntry{Key: "path", Value: "files/*"}, ratelimit.DescriptorEntry{Key: "user"})
	files.WindowSeconds, files.MaxRequests, files.Algorithm = 3600, ptr(100), ratelimit.AlgorithmSlidingWindow
	files.LimitName, files.Replaces, files.ShareThreshold = "files-per-user", []string{"per-route"}, true
	for _, d := range []ratelimit.Definition{perRoute, files} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Name, err)
		}
	}
	filesID := "target:descriptor:edge/path=files%2F*/user:3600"
	before, err := c.GetDefinition(ctx, filesID)
	if err != nil {
		t.Fatal(err)
	}

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

	term.waitFor("the descriptor rows", func(s string) bool {
		return rowWith(s, "descriptor", "edge: route=checkout", "1000", "shadow") &&
			rowWith(s, "descriptor", "edge: path=files/*, user", "1h", "100", "sliding") && strings.Contains(s, "connected")
	})
	// The value as written ("files/*") finds it; the canonical name has
	// "files%2F*".
	term.keys("/", "f", "i", "l", "e", "s", "/", "\r")
	term.waitFor("the filtered row", func(s string) bool {
		return rowWith(s, "> target", "edge: path=files/*, user") && !rowWith(s, "edge: route=checkout", "shadow")
	})
	term.keys("\r")
	term.waitFor("the detail pane", func(s string) bool {
		return strings.Contains(s, filesID) && rowWith(s, "domain edge", "rate 100 per hour", "unlimited no") &&
			rowWith(s, "limit name files-per-user", "replaces per-route") &&
			rowWith(s, "shadow mode no", "share threshold yes") &&
			rowWith(s, "path=files/* (wildcard, shared)", "user (every value, each its own)")
	})
	term.keys("c")
	term.waitFor("the form", func(s string) bool {
		return strings.Contains(s, "Change "+filesID) && strings.Contains(s, "(*) sliding_window")
	})
	term.keys("\t", "\x7f", "\x7f", "\x7f", "2", "5", "0", "\r")
	term.waitFor("the confirmation", func(s string) bool {
		return strings.Contains(s, "max_requests: 100 -> 250")
	})
	term.keys("y")
	term.waitFor("the change", func(s string) bool {
		return strings.Contains(s, "✓ changed "+filesID) && rowWith(s, "edge: path=files/*, user", "250")
	})
	got, err := c.GetDefinition(ctx, filesID)
	if err != nil {
		t.Fatal(err)
	}
	if *got.MaxRequests != 250 || got.Version != before.Version+1 || got.AlgorithmOrDefault() != ratelimit.AlgorithmSlidingWindow {
		t.Errorf("after the change: max %d version %d algorithm %s, want 250, %d, sliding_window", *got.MaxRequests, got.Version,
			got.AlgorithmOrDefault(), before.Version+1)
	}
	if !reflect.DeepEqual(got.DescriptorFields, before.DescriptorFields) || got.Name != before.Name || got.Mode != before.Mode {
		t.Errorf("descriptor after the change %q %s %+v, want as before %q %s %+v", got.Name, got.Mode, got.DescriptorFields,
			before.Name, before.Mode, before.DescriptorFields)
	}
	term.keys("q")
}
