package filesource_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// fullState has three definitions, the limited one last, and a caller in
// quarantine.
const fullState = `apiVersion: rlctl/v1
kind: State
definitions:
  - {axis: target, entity_type: mcp_server, name: a, window_seconds: 60, max_requests: 100}
  - {axis: target, entity_type: mcp_server, name: b, window_seconds: 60, max_requests: 100}
  - {axis: target, entity_type: mcp_server, name: s, window_seconds: 60, max_requests: 5}
memberships:
  - {subject_type: user, subject: mallory, groups: [quarantine-callers], quarantine_reason: abuse}
`

// cut is fullState cut at a line boundary just before the line holding
// marker, as a writer stopped there leaves it.
func cut(t *testing.T, marker string) string {
	t.Helper()
	i := strings.Index(fullState, marker)
	if i < 0 {
		t.Fatalf("no %q in the state", marker)
	}
	return fullState[:strings.LastIndexByte(fullState[:i], '\n')+1]
}

type guarded struct {
	src  *filesource.Source
	path string
	// log is written by the poll goroutine before Load returns, and read
	// by the test after: no lock needed, no Watch runs.
	log *bytes.Buffer
	reg *prometheus.Registry
}

func newGuarded(t *testing.T, content string, opts filesource.Options) *guarded {
	t.Helper()
	g := &guarded{path: filepath.Join(t.TempDir(), "state.yaml"), log: &bytes.Buffer{}, reg: prometheus.NewRegistry()}
	write(t, g.path, content)
	opts.Logger = slog.New(slog.NewTextHandler(g.log, nil))
	opts.Registerer = g.reg
	src, err := filesource.New(g.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	g.src = src
	return g
}

// change writes content and has the Source look at the file.
func (g *guarded) change(t *testing.T, content string) enforce.State {
	t.Helper()
	write(t, g.path, content)
	return look(t, g.src)
}

func (g *guarded) refused(t *testing.T, reason string) float64 {
	t.Helper()
	mfs, err := g.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rlctl_filesource_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no rlctl_filesource_refused_total{reason=%q}", reason)
	return 0
}

func quarantined(st enforce.State, subject string) bool {
	for _, m := range st.Memberships {
		if m.Subject == subject && m.HasGroup(ratelimit.GroupQuarantineCallers) {
			return true
		}
	}
	return false
}

// TestCutFileRefused: a state file cut at a line boundary parses, but is
// refused: cut before memberships it would lift a quarantine, cut after
// the first definition it would drop two thirds of the state. The last
// good state stays, one WARN line names the file and why, and the metric
// counts the refusal.
func TestCutFileRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, at, reason, says string
	}{
		{"before memberships", "memberships:", "quarantine", "group quarantine-callers would lose all its members (1 before, none now)"},
		{"after the first definition", "name: b", "quarantine", "group quarantine-callers would lose all its members"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarded(t, fullState, filesource.Options{})
			st := g.change(t, cut(t, tc.at))
			if !quarantined(st, "mallory") || limitOf(t, st) != 5 {
				t.Errorf("after the cut: mallory quarantined %v, limit %d; want the last good state (quarantined, 5)", quarantined(st, "mallory"), limitOf(t, st))
			}
			err := g.src.Err()
			if err == nil || !strings.Contains(err.Error(), g.path) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Err() = %v, want it to name the file and say %q", err, tc.says)
			}
			logs := g.log.String()
			if n := strings.Count(logs, "state file refused"); n != 1 || !strings.Contains(logs, "level=WARN") ||
				!strings.Contains(logs, "file="+g.path) || !strings.Contains(logs, "reason="+tc.reason) {
				t.Errorf("%d refusal lines, want one WARN naming the file and reason=%s:\n%s", n, tc.reason, logs)
			}
			if got := g.refused(t, tc.reason); got != 1 {
				t.Errorf("refused{reason=%s} = %v, want 1", tc.reason, got)
			}
		})
	}
}

// TestShrinkRefused: with no quarantine at stake, a file holding fewer
// than half the definitions and memberships of the last is refused (the
// limit on s stays); one holding half passes; MaxShrink and AllowShrink
// change the bound, and the marker as the last line lets a change
// through.
func TestShrinkRefused(t *testing.T) {
	t.Parallel()
	const three = `definitions:
  - {axis: target, entity_type: mcp_server, name: s, window_seconds: 60, max_requests: 5}
  - {axis: target, entity_type: mcp_server, name: a, window_seconds: 60, max_requests: 100}
  - {axis: target, entity_type: mcp_server, name: b, window_seconds: 60, max_requests: 100}
`
	one := three[:strings.Index(three, "  - {axis: target, entity_type: mcp_server, name: a")]
	two := three[:strings.Index(three, "  - {axis: target, entity_type: mcp_server, name: b")]
	withLimit := func(doc, limit string) string {
		return strings.Replace(doc, "max_requests: 5}", "max_requests: "+limit+"}", 1)
	}

	t.Run("default", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, three, filesource.Options{})
		st := g.change(t, withLimit(one, "6"))
		if limitOf(t, st) != 5 || len(st.Definitions) != 5 {
			t.Errorf("one of three: limit %d, %d definitions; want the last good state (5, three and the sentinels)", limitOf(t, st), len(st.Definitions))
		}
		if err := g.src.Err(); err == nil || !strings.Contains(err.Error(), "1 definitions and memberships, 3 before: more than 50% fewer") {
			t.Errorf("Err() = %v", err)
		}
		if got := g.refused(t, "shrink"); got != 1 {
			t.Errorf("refused{reason=shrink} = %v, want 1", got)
		}
		// The same file with the marker as its last line loads.
		st = g.change(t, withLimit(one, "6")+filesource.AllowShrinkMarker+"\n")
		if limitOf(t, st) != 6 || g.src.Err() != nil {
			t.Errorf("with the marker: limit %d, Err %v; want 6 and none", limitOf(t, st), g.src.Err())
		}
	})
	t.Run("half", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, three+"memberships:\n  - {subject_type: user, subject: bob, groups: [g]}\n", filesource.Options{})
		if st := g.change(t, withLimit(two, "6")); limitOf(t, st) != 6 || g.src.Err() != nil {
			t.Errorf("two of four: limit %d, Err %v; want the change loaded", limitOf(t, st), g.src.Err())
		}
	})
	t.Run("marker not last", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, three, filesource.Options{})
		if st := g.change(t, filesource.AllowShrinkMarker+"\n"+withLimit(one, "6")); limitOf(t, st) != 5 || g.src.Err() == nil {
			t.Errorf("marker on the first line: limit %d, Err %v; want the change refused", limitOf(t, st), g.src.Err())
		}
	})
	t.Run("MaxShrink", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, three, filesource.Options{MaxShrink: 0.7})
		if st := g.change(t, withLimit(one, "6")); limitOf(t, st) != 6 || g.src.Err() != nil {
			t.Errorf("MaxShrink 0.7, one of three: limit %d, Err %v; want the change loaded", limitOf(t, st), g.src.Err())
		}
	})
	t.Run("AllowShrink", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, fullState, filesource.Options{AllowShrink: true})
		st := g.change(t, cut(t, "memberships:"))
		if quarantined(st, "mallory") || g.src.Err() != nil {
			t.Errorf("AllowShrink: mallory still quarantined %v, Err %v; want the change loaded", quarantined(st, "mallory"), g.src.Err())
		}
	})
	t.Run("bad MaxShrink", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "state.yaml")
		write(t, path, three)
		for _, v := range []float64{-0.1, 1.5} {
			if _, err := filesource.New(path, filesource.Options{MaxShrink: v}); err == nil || !strings.Contains(err.Error(), "Options.MaxShrink") {
				t.Errorf("MaxShrink %v: %v, want an error naming it", v, err)
			}
		}
	})
}

// TestFirstLoadUnguarded: with no state before it, a file of any size
// loads, and so does releasing a quarantine that was not the last.
func TestFirstLoadUnguarded(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, cut(t, "name: b"), filesource.Options{})
	st, err := g.src.Load(context.Background())
	if err != nil || len(st.Memberships) != 0 || g.src.Err() != nil {
		t.Fatalf("first load of a small file: %+v, %v, %v", st, err, g.src.Err())
	}
	g = newGuarded(t, fullState+"  - {subject_type: user, subject: eve, groups: [quarantine-callers], quarantine_reason: abuse}\n", filesource.Options{})
	st = g.change(t, fullState)
	if !quarantined(st, "mallory") || quarantined(st, "eve") || g.src.Err() != nil {
		t.Errorf("releasing one of two: %+v, Err %v; want eve released", st.Memberships, g.src.Err())
	}
}

// TestOneLogLinePerRefusedChange: a bad edit written in place (the file
// truncated, then filled) is refused in one line, not one for the empty
// file seen midway and one for the edit; the next bad edit, refused for
// the same reason, has its own line; polls that find nothing new add
// none. Each line is counted once in the metric.
func TestOneLogLinePerRefusedChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuarded(t, stateFile("5"), filesource.Options{})
	inPlace := func(content string) {
		t.Helper()
		if err := os.WriteFile(g.path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A writer that truncates, and a poll that sees the empty file.
	if err := os.Truncate(g.path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := g.src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	inPlace(stateFile("fifty"))
	for range 3 {
		if st := look(t, g.src); limitOf(t, st) != 5 {
			t.Fatalf("limit %d, want the last good 5", limitOf(t, st))
		}
	}
	inPlace(stateFile("seventy")) // another size: the same mtime tick cannot hide it
	look(t, g.src)
	logs := g.log.String()
	if n := strings.Count(logs, "state file refused"); n != 2 || strings.Contains(logs, "no definitions, memberships or admins section") {
		t.Errorf("%d refusal lines for two bad edits, want 2 and none for the file seen empty midway:\n%s", n, logs)
	}
	if got := g.refused(t, "invalid"); got != 2 {
		t.Errorf("refused{reason=invalid} = %v, want 2", got)
	}
}

// TestNewRetriesWithTheSameRegisterer: a New that fails on its file
// registers nothing, so the gateway can try again with its registry.
func TestNewRetriesWithTheSameRegisterer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.yaml")
	reg := prometheus.NewRegistry()
	write(t, path, stateFile("five"))
	if _, err := filesource.New(path, filesource.Options{Registerer: reg}); err == nil {
		t.Fatal("New with a bad file: no error")
	}
	write(t, path, stateFile("5"))
	if _, err := filesource.New(path, filesource.Options{Registerer: reg}); err != nil {
		t.Errorf("New again with the same Registerer: %v", err)
	}
}
