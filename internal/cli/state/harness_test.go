package state_test

import (
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes content to name under dir (created if needed) and
// returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr(n int) *int { return &n }
