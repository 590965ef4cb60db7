package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
)

// FuzzDecodeBodies sends arbitrary bodies to the definition and membership
// PUT handlers (as dry runs, so the database stays small) and checks the
// server never panics nor answers 5xx: bad input is always the client's
// problem, named as such. It runs the handler in-process (not through a
// listener) so each input costs microseconds, not a TCP round trip.
func FuzzDecodeBodies(f *testing.F) {
	seeds := []string{
		`{"axis":"caller","entity_type":"group","name":"g","window_seconds":60,"user_max_requests":30}`,
		`{"axis":"target","entity_type":"server_group","name":"g","window_seconds":60,"max_requests":5,"members":["a","/b/"]}`,
		`{"axis":"target","entity_type":"mcp_tool","name":"srv:tool","window_seconds":1,"max_requests":1}`,
		`{"subject_type":"user","subject":"alice","groups":["g","quarantine-callers"]}`,
		`{"subject_type":"agent","subject":"/x","groups":["quarantine-targets"]}`,
		`{"window_seconds":1e400}`, `{"members":[null]}`, `{"groups":null}`, `null`, `"x"`, `{`, "\x00", `{"name":"\u0000"}`,
		`{"quarantine_expires_at":"not a time"}`, `{"user_max_requests":-1}`, `{"user_max_requests":99999999999999999999}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	st := pgtest.NewStore(f)
	env := startInProcess(f, st)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/api/rate-limits/caller:group:g:60", "/api/rate-limit-memberships/user:alice"} {
			req := httptest.NewRequest(http.MethodPut, path+"?dry_run=true", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+env.token)
			rec := httptest.NewRecorder()
			env.handler.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("PUT %s with %q: status %d: %s", path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("PUT %s with %q: error without problem+json", path, body)
			}
		}
	})
}

type inProcess struct {
	handler http.Handler
	token   string
}

func startInProcess(tb testing.TB, st *store.Store) inProcess {
	tb.Helper()
	secret, sum := token.New()
	if _, err := st.CreateToken(context.Background(), "fuzz", "admin", sum, nil); err != nil {
		tb.Fatal(err)
	}
	// No auth lockout: the fuzzer is one client sending many requests.
	srv := api.New(st, api.Config{AuthMaxFailures: -1}, api.Opts{})
	return inProcess{handler: srv.Handler(), token: secret}
}
