package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad flags exit 2 naming the flag, before anything is dialled.
func TestRealMainRefusesBadFlags(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: rlenvoy-diff configs"},
		{[]string{"compare"}, "usage: rlenvoy-diff configs"},
		{[]string{"configs", "-out", "x"}, "-envoy-repo (or ENVOY_RLS_REPO) and -out are required"},
		{[]string{"run", "-envoy", "a:1", "-rlapi", "b:1"}, "-envoy, -rlapi and -config are required"},
		{[]string{"run", "-envoy", "a:1", "-rlapi", "b:1", "-config", "d", "-sequences", "0"}, "-sequences: at least 1"},
		{[]string{"run", "-envoy", "a:1", "-rlapi", "b:1", "-config", "d", "-max-requests", "1"}, "-max-requests: at least 2"},
		{[]string{"run", "-envoy", "a:1", "-rlapi", "b:1", "-config", "d", "-guard", "1s"}, "-guard: between 0 and 1s"},
		{[]string{"run", "-envoy", "a:1", "-rlapi", "b:1", "-config", "d", "-trace", "3,x"}, `-trace: "x" is not a sequence number`},
	} {
		var stdout, stderr bytes.Buffer
		if code := realMain(tc.args, getenv, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q, want it to say %q", tc.args, stderr.String(), tc.want)
		}
	}
}
