package migrations

import (
	"io/fs"
	"strings"
	"testing"
)

// TestSharedRlTake002IsMigration002s: the template migration 006 rolls back
// with is 002's rl_take word for word (but "create or replace"), so rolling
// back 006 gives a database the function it had before.
func TestSharedRlTake002IsMigration002s(t *testing.T) {
	mig, err := fs.ReadFile(FS, "002_counters.sql")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := fs.ReadFile(FS, "shared/rl_take_002.sql")
	if err != nil {
		t.Fatalf("the shared template is not embedded: %v", err)
	}
	want := between(t, string(mig), "create function rl_take(")
	want = "create or replace" + strings.TrimPrefix(want, "create")
	if got := between(t, string(tmpl), "create or replace function rl_take("); got != want {
		t.Errorf("shared/rl_take_002.sql differs from 002_counters.sql's rl_take:\n%s\nwant:\n%s", got, want)
	}
	// Nothing but a template comment around it: the rollback runs exactly this.
	rest := strings.Replace(string(tmpl), want, "", 1)
	if i := strings.Index(rest, "*/}}"); !strings.HasPrefix(rest, "{{/*") || i < 0 || strings.TrimSpace(rest[i+4:]) != "" {
		t.Errorf("shared/rl_take_002.sql holds more than a template comment and the function: %q", rest)
	}
}

// between returns s from start through the first "$$;" after it.
func between(t *testing.T, s, start string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q", start)
	}
	j := strings.Index(s[i:], "$$;")
	if j < 0 {
		t.Fatalf("no end of the function after %q", start)
	}
	return s[i : i+j+3]
}
