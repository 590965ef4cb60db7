package filesource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadStateStopsAtTheBound: a file that grew past MaxFileSize after
// its size was checked is read only to the bound, then refused.
func TestReadStateStopsAtTheBound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(2 * MaxFileSize); err != nil { // sparse
		t.Fatal(err)
	}
	data, err := readState(path, f)
	if err == nil || !strings.Contains(err.Error(), "a state file is at most 33554432 bytes") || data != nil {
		t.Errorf("readState = %d bytes, %v; want nothing and the bound named", len(data), err)
	}
}
