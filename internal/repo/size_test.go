package repo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file the repository may track outside a
// testdata directory: a bigger one is nearly always a build output or a
// data dump committed by mistake (a 20 MB rlapi binary once was).
const maxTrackedSize = 1 << 20

// TestNoLargeTrackedFiles fails when git tracks a file larger than 1 MiB
// outside a directory named testdata. Outside a git checkout (a module
// download, a source tarball) it skips.
func TestNoLargeTrackedFiles(t *testing.T) {
	root := moduleRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Skipf("not a git checkout: %s", bytes.TrimSpace(out))
	}
	large, err := largeTrackedFiles(root, maxTrackedSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range large {
		t.Errorf("%s: tracked files must be at most 1 MiB (build outputs belong in bin/, test fixtures under a testdata directory)", f)
	}
}

// TestLargeTrackedFilesFindsThem checks the check on a repository of its
// own: a file over the limit is reported, one at the limit, one under
// testdata and an untracked one are not.
func TestLargeTrackedFilesFindsThem(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name string, size int) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("rlapi", 100+maxTrackedSize)
	write("docs/big file.bin", 1+maxTrackedSize)
	write("docs/exact.bin", maxTrackedSize)
	write("pkg/x/testdata/fixture.bin", 2*maxTrackedSize)
	write("small.go", 10)
	git("add", ".")
	write("untracked.bin", 2*maxTrackedSize)

	got, err := largeTrackedFiles(dir, maxTrackedSize)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docs/big file.bin (1.0 MiB)", "rlapi (1.0 MiB)"}
	if !slices.Equal(got, want) {
		t.Errorf("large files = %q, want %q", got, want)
	}
}

// largeTrackedFiles lists the files git tracks under root that are larger
// than limit, with their sizes, skipping any path with a testdata element
// and files deleted from the work tree.
func largeTrackedFiles(root string, limit int64) ([]string, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var large []string
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || slices.Contains(strings.Split(name, "/"), "testdata") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() && fi.Size() > limit {
			large = append(large, fmt.Sprintf("%s (%.1f MiB)", name, float64(fi.Size())/(1<<20)))
		}
	}
	slices.Sort(large)
	return large, nil
}
