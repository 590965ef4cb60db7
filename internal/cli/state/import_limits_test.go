package state_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// envoyOfSize is a valid Envoy configuration of about size bytes: one
// domain, a flat list of descriptors with a rate each (some 85 bytes a
// descriptor, as the configurations that exhausted memory had).
func envoyOfSize(size int) (config string, descriptors int) {
	var b strings.Builder
	b.WriteString("domain: edge\ndescriptors:\n")
	for ; b.Len() < size; descriptors++ {
		fmt.Fprintf(&b, "  - key: k%d\n    value: v%d\n    rate_limit:\n      unit: second\n      requests_per_unit: %d\n",
			descriptors%7, descriptors, descriptors%100)
	}
	return b.String(), descriptors
}

// heapPeak samples the heap every millisecond until the returned function
// is called, which answers the peak above the heap at the start: live
// objects and garbage not yet collected, what the process holds. A sample
// can only miss the peak, never overstate it.
func heapPeak() func() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, top := ms.HeapAlloc, ms.HeapAlloc
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return top - base
	}
}

// TestImportEnvoyMemoryIsLinear: importing a 1 MiB configuration holds a
// small multiple of its size (it held 400 times it, and a 50 MB one
// exhausted the machine). The tree of YAML nodes alone is some twenty
// times the file; the bound leaves room for the collector's slack. Not
// parallel: the heap is the process's.
func TestImportEnvoyMemoryIsLinear(t *testing.T) {
	config, n := envoyOfSize(1 << 20)
	path := writeFile(t, t.TempDir(), "big.yaml", config)
	r := clitest.New(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := heapPeak()
	res := r.Run("import", "envoy-ratelimit", path)
	held := peak()
	runtime.ReadMemStats(&after)
	if res.Code != 0 {
		t.Fatalf("import exited %d: %s", res.Code, res.ErrOut)
	}
	if got := strings.Count(res.Out, "\n- axis: target\n"); got != n {
		t.Fatalf("import wrote %d definitions, want %d", got, n)
	}
	size := uint64(len(config))
	t.Logf("%d bytes, %d descriptors: peak heap %.1fx the file, %.0fx allocated in all", size, n,
		float64(held)/float64(size), float64(after.TotalAlloc-before.TotalAlloc)/float64(size))
	if limit := 64 * size; held > limit {
		t.Errorf("import of a %d-byte file held %d MiB of heap (%.0fx), want at most %d MiB (64x)",
			size, held>>20, float64(held)/float64(size), limit>>20)
	}
}

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

// cancelOnWrite ends a context at the first write it passes on.
type cancelOnWrite struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c.cancel()
	return c.w.Write(p)
}

// TestImportEnvoyStopsWhenCancelled: an import whose context ends
// (SIGTERM, Ctrl-C) before it reads, or while it writes the document,
// stops there: an error saying so, and not the whole document.
func TestImportEnvoyStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	config, _ := envoyOfSize(256 << 10)
	path := writeFile(t, t.TempDir(), "big.yaml", config)
	r := clitest.New(t)
	full := r.Must("import", "envoy-ratelimit", path)
	for _, whileWriting := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		ios, _, out, errOut := iostreams.Test()
		if whileWriting {
			ios.Out = cancelOnWrite{out, cancel}
		} else {
			cancel()
		}
		code := cli.Run(ctx, []string{"import", "envoy-ratelimit", path}, ios, r.Getenv(nil))
		cancel()
		if code == 0 || out.Len() >= len(full) || (!whileWriting && out.Len() > 0) {
			t.Errorf("import cancelled (while writing: %v) exited %d having written %d of %d bytes, want an error and less",
				whileWriting, code, out.Len(), len(full))
		}
		if !strings.Contains(errOut.String(), "stopped") {
			t.Errorf("stderr %q does not say the import stopped", errOut.String())
		}
	}
}
