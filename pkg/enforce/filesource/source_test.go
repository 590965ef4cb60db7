package filesource_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func stateFile(limit string) string {
	return `definitions:
  - {axis: target, entity_type: mcp_server, name: s, window_seconds: 60, max_requests: ` + limit + `}
`
}

func write(t *testing.T, path, content string) {
	t.Helper()
	// Write and rename, as editors and config management do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// look has src look at the file twice, as two polls would: the first
// sees a change, the second reads it, the file having held still.
func look(t *testing.T, src *filesource.Source) enforce.State {
	t.Helper()
	var st enforce.State
	for range 2 {
		var err error
		if st, err = src.Load(context.Background()); err != nil {
			t.Fatalf("Load: %v (want the last good state)", err)
		}
	}
	return st
}

func limitOf(t *testing.T, st enforce.State) int {
	t.Helper()
	for _, d := range st.Definitions {
		if d.ID == "target:mcp_server:s:60" {
			return *d.MaxRequests
		}
	}
	t.Fatalf("no target definition in %+v", st.Definitions)
	return 0
}

// TestReload: the Source serves the file, a change is served and
// notified, a bad change keeps the last good state (and says why), and a
// fixed file loads again.
func TestReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.yaml")
	write(t, path, stateFile("5"))
	src, err := filesource.New(path, filesource.Options{Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := src.Load(ctx)
	if err != nil || limitOf(t, st) != 5 {
		t.Fatalf("first load: %v", err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, changes := make(chan struct{}), make(chan enforce.Change, 16)
	done := make(chan error, 1)
	go func() {
		done <- src.Watch(wctx, func() { close(ready) }, func(c enforce.Change) { changes <- c })
	}()
	<-ready

	write(t, path, stateFile("50"))
	select {
	case c := <-changes:
		if !c.All {
			t.Errorf("change = %+v, want All", c)
		}
	case <-time.After(10 * time.Second): // bounds a hang only
		t.Fatal("no change notice after the file changed")
	}
	st, _ = src.Load(ctx)
	if limitOf(t, st) != 50 {
		t.Errorf("after the change, limit %d, want 50", limitOf(t, st))
	}
	rows, err := src.LoadTables(ctx, enforce.TablesRequest{Definitions: []string{"target:mcp_server:s:60", "gone:x:y:1"}})
	if err != nil || len(rows.Definitions) != 1 || *rows.Definitions[0].MaxRequests != 50 {
		t.Errorf("LoadTables = %+v, %v", rows, err)
	}
	rows, err = src.LoadTables(ctx, enforce.TablesRequest{AllDefinitions: true})
	if err != nil || len(rows.Definitions) != len(st.Definitions) || len(rows.Memberships) != 0 {
		t.Errorf("LoadTables of all definitions = %d definitions, %d memberships, %v; want the %d definitions alone",
			len(rows.Definitions), len(rows.Memberships), err, len(st.Definitions))
	}

	for _, bad := range []string{stateFile("fifty"), "definitions: [\n", ""} {
		write(t, path, bad)
		st = look(t, src)
		if limitOf(t, st) != 50 {
			t.Errorf("bad file %q: limit %d, want the last good 50", bad, limitOf(t, st))
		}
		if src.Err() == nil {
			t.Errorf("bad file %q: Err() is nil", bad)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if st, _ = src.Load(ctx); limitOf(t, st) != 50 || src.Err() == nil {
		t.Errorf("file removed: limit %d, err %v; want 50 and an error", limitOf(t, st), src.Err())
	}

	write(t, path, stateFile("7"))
	for {
		c := <-changes // the fix is notified (bounded by the test timeout)
		_ = c
		if st, _ = src.Load(ctx); limitOf(t, st) == 7 {
			break
		}
	}
	if src.Err() != nil {
		t.Errorf("after the fix, Err() = %v", src.Err())
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Watch returned %v, want context.Canceled", err)
	}
}

// TestNewRefusesABadFile: a file that does not load at start is an error
// naming the problem, not an empty state.
func TestNewRefusesABadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.yaml")
	write(t, path, "definitions:\n  - {axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 3}\n")
	_, err := filesource.New(path, filesource.Options{})
	if err == nil || !strings.Contains(err.Error(), "user_max_requests") {
		t.Errorf("New with a limit under the floor: %v", err)
	}
	if _, err := filesource.New(path, filesource.Options{NoFloors: true}); err != nil {
		t.Errorf("New with floors off: %v", err)
	}
	if _, err := filesource.New(filepath.Join(dir, "missing.yaml"), filesource.Options{}); err == nil {
		t.Error("New with a missing file: no error")
	}
}

// TestSentinelsServed: quarantine works from a file as from a fresh
// database: the sentinels are there, enabled.
func TestSentinelsServed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.yaml")
	write(t, path, "memberships:\n  - {subject_type: user, subject: eve, groups: [quarantine-callers], quarantine_reason: abuse}\n")
	src, err := filesource.New(path, filesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := src.Load(context.Background())
	on := 0
	for _, d := range st.Definitions {
		if ratelimit.IsSentinel(d.ID) && d.Enabled {
			on++
		}
	}
	if on != 2 || len(st.Memberships) != 1 {
		t.Errorf("state = %+v, want both sentinels enabled and eve's membership", st)
	}
}

// The file source declares it writes no lockouts and counts no
// quarantines (both answer enforce.ErrNotImplemented), and reads tables
// whole or by id from the file's state.
func TestSourceCapabilities(t *testing.T) {
	t.Parallel()
	enforcetest.TestSourceCapabilities(t, func(t *testing.T) enforce.Source {
		path := filepath.Join(t.TempDir(), "rlctl.yaml")
		write(t, path, stateFile("5"))
		src, err := filesource.New(path, filesource.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return src
	})
}
