package api_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
)

// TestAccessLogNamesTheActor: an operator reading the log must see which
// token made each request.
func TestAccessLogNamesTheActor(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	var logs lockedBuffer
	srv := api.New(st, api.Config{}, api.Opts{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	env := startInProcess(t, st) // creates the "fuzz" admin token in this store
	if a := do(t, ts.URL, call{method: "GET", path: "/api/rate-limits", token: env.token}); a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `route="GET /api/rate-limits"`) {
			line = l
		}
	}
	if !strings.Contains(line, "actor=fuzz") {
		t.Errorf("access log line %q does not name the token", line)
	}
	if strings.Contains(logs.String(), env.token) {
		t.Error("the token itself reached the log")
	}
}
