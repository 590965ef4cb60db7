package state_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// sparseFile makes a file of size bytes that takes no room on disk.
func sparseFile(t *testing.T, dir, name string, size int64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOverLimitFilesAreRefusedUnread: a file over the 32 MiB an apply may
// send (or files over it together) is refused by import and apply before
// it is read: exit 2, a message naming the file, its size and the limit,
// nothing sent, and next to nothing allocated (reading it would take 33
// MiB, parsing it gigabytes). Not parallel: allocations are counted for
// the whole process.
func TestOverLimitFilesAreRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	big := sparseFile(t, dir, "big.yaml", 33<<20)
	pair := filepath.Join(dir, "pair")
	os.Mkdir(pair, 0o755)
	a := sparseFile(t, pair, "a.yaml", 17<<20)
	sparseFile(t, pair, "b.yaml", 17<<20)
	r := clitest.Start(t)
	stdin := strings.Repeat("#", 33<<20)
	tests := []struct {
		name string
		args []string
		in   string
		want []string
	}{
		{"import a file", []string{"import", "envoy-ratelimit", big}, "", []string{big, "33 MiB", "over the 32 MiB", "nothing was sent"}},
		{"import --apply", []string{"import", "envoy-ratelimit", big, "--apply"}, "", []string{big, "33 MiB", "over the 32 MiB", "nothing was sent"}},
		{"import a directory", []string{"import", "envoy-ratelimit", pair}, "", []string{"2 files", "34 MiB", "together", "nothing was sent"}},
		{"apply -f a file", []string{"apply", "-f", big}, "", []string{big, "33 MiB", "over the 32 MiB", "nothing was sent"}},
		{"diff -f a directory", []string{"diff", "-f", pair}, "", []string{"2 files", "34 MiB", "together"}},
		{"apply -f and a file", []string{"apply", "-f", a, "-f", big}, "", []string{big, "33 MiB"}},
		{"apply -f -", []string{"apply", "-f", "-"}, stdin, []string{"<stdin>", "more than the 32 MiB", "nothing was sent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := r.RunWith(clitest.Opts{Stdin: tt.in}, tt.args...)
			runtime.ReadMemStats(&after)
			if res.Code != 2 {
				t.Fatalf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", res.Code, res.Out, res.ErrOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.ErrOut, w) {
					t.Errorf("stderr %q names no %q", res.ErrOut, w)
				}
			}
			if strings.Contains(res.ErrOut, "YAML") || res.Out != "" {
				t.Errorf("the file was parsed: stdout %q, stderr %q", res.Out, res.ErrOut)
			}
			// Standard input is read up to the limit to find it is over
			// (and copied into the test's stream first): its message says
			// it was not parsed.
			if got := after.TotalAlloc - before.TotalAlloc; tt.in == "" && got > 8<<20 {
				t.Errorf("refusing it allocated %d MiB, want at most 8 MiB: it was read", got>>20)
			}
		})
	}
	defs, err := r.Client().ListAllDefinitions(t.Context(), client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil || len(defs) != 0 {
		t.Errorf("after refused files: %d definitions (%v), want none", len(defs), err)
	}
}
