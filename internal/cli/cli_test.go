package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

var (
	timestamp = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
	hexID     = regexp.MustCompile(`"request_id": "[0-9a-f]+"`)
)

// golden compares got with testdata/<name>, after masking timestamps.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = timestamp.ReplaceAllString(got, "<TIME>")
	got = hexID.ReplaceAllString(got, `"request_id": "<ID>"`)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./internal/cli -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
