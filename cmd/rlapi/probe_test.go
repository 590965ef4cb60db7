package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
)

// TestProbe: rlapi probe exits 0 and says "ready" for a serving rlapi,
// found through RLAPI_ADDR as serve reads it (a wildcard host probed on
// loopback); 1 with the URL and the reason when nothing answers; 2 on a
// flag it cannot use.
func TestProbe(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"DATABASE_URL": pgtest.NewMigratedDatabase(t)})
	addr, _ := startServe(t, vars)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	probe := func(getenv func(string) string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append([]string{"probe"}, args...), getenv, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"RLAPI_ADDR", map[string]string{"RLAPI_ADDR": addr}, nil},
		{"a wildcard host", map[string]string{"RLAPI_ADDR": "0.0.0.0:" + port}, nil},
		{"--addr and /healthz", nil, []string{"--addr", addr, "--path", "/healthz"}},
	} {
		code, out, errOut := probe(env(tc.env), tc.args...)
		if code != 0 || !strings.Contains(out, "127.0.0.1:"+port) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and the URL probed", tc.name, code, out, errOut)
		}
	}
	if code, out, _ := probe(env(map[string]string{"RLAPI_ADDR": addr})); !strings.HasSuffix(out, ": ready\n") {
		t.Errorf("exit %d, stdout %q: want the answer of /readyz, ready", code, out)
	}

	closed := freeAddr(t)
	code, _, errOut := probe(env(nil), "--addr", closed)
	if code != 1 || !strings.Contains(errOut, "http://"+closed+"/readyz") {
		t.Errorf("nothing listening: exit %d, stderr %q; want 1 naming the URL", code, errOut)
	}
	for _, args := range [][]string{{"--path", "/metrics"}, {"--addr", "8080"}, {"--timeout", "0s"}, {"extra"}} {
		if code, _, errOut := probe(env(nil), args...); code != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a usage error", args, code, errOut)
		}
	}
}
