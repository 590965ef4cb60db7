package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
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
	// The status endpoint explains through the enforcer, as rlapi's does.
	enf, err := postgres.New(context.Background(), st.Pool(), enforce.Options{SweepInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(enf.Close)
	// No auth lockout: the fuzzer is one client sending many requests.
	srv := api.New(st, api.Config{AuthMaxFailures: -1}, api.Opts{Enforcer: enf})
	return inProcess{handler: srv.Handler(), token: secret}
}

// checkAnswer fails on the answers bad input must never get: 5xx, or an
// error that is not problem+json.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s: status %d: %s", what, rec.Code, rec.Body)
	}
	if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s: status %d without problem+json: %s", what, rec.Code, rec.Body)
	}
}

// FuzzPathIDs puts arbitrary bytes, percent-encoded, into every id of the
// API's paths: reads, and deletes and writes as dry runs. None may answer
// 5xx (NUL and invalid UTF-8 used to reach PostgreSQL and answer 500).
func FuzzPathIDs(f *testing.F) {
	for _, s := range []string{"caller:group:g:60", "caller:group:\xff\xfe:60", "user:alice", "user:\x00", "\x00", "\xff",
		"target:mcp_server:/srv/:60", "a/b", "..", "%", "user:caf\u00e9", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	st := pgtest.NewStore(f)
	env := startInProcess(f, st)
	f.Fuzz(func(t *testing.T, id string) {
		esc := url.PathEscape(id)
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/api/rate-limits/" + esc, ""},
			{"DELETE", "/api/rate-limits/" + esc + "?dry_run=true", ""},
			{"POST", "/api/rate-limits-enabled/" + esc + "?dry_run=true", `{"enabled":true}`},
			{"GET", "/api/rate-limit-memberships/" + esc, ""},
			{"DELETE", "/api/rate-limit-memberships/" + esc + "?dry_run=true", ""},
			{"POST", "/api/rate-limit-quarantine/" + esc + "?dry_run=true", ""},
			{"DELETE", "/api/rate-limit-quarantine/" + esc + "?dry_run=true", ""},
			{"PUT", "/api/rate-limit-admins/" + esc + "?dry_run=true", `{}`},
			{"DELETE", "/api/rate-limit-admins/" + esc + "?dry_run=true", ""},
			{"DELETE", "/api/tokens/" + esc + "?dry_run=true", ""},
		} {
			req := httptest.NewRequest(c.method, "http://rlapi"+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+env.token)
			rec := httptest.NewRecorder()
			env.handler.ServeHTTP(rec, req)
			checkAnswer(t, fmt.Sprintf("%s %s", c.method, c.path), rec)
		}
	})
}

// FuzzQueryFilters sends arbitrary names and values as query parameters of
// every list and filter endpoint. None may answer 5xx.
func FuzzQueryFilters(f *testing.F) {
	for _, s := range [][2]string{{"name", "\x00"}, {"name", "g"}, {"group", "\xff"}, {"actor", "a\x00"}, {"caller", "user:\x00"},
		{"definition", "caller:group:\xfe:60"}, {"since", "2026-01-01T00:00:00Z"}, {"limit", "99999999999999999999"},
		{"cursor", "\xff"}, {"\x00", "x"}, {"username", "caf\u00e9"}, {"enabled", "maybe"}, {"dry_run", "\x00"}} {
		f.Add(s[0], s[1])
	}
	st := pgtest.NewStore(f)
	env := startInProcess(f, st)
	f.Fuzz(func(t *testing.T, key, value string) {
		q := url.Values{key: {value}}.Encode()
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/rate-limits"}, {"GET", "/api/rate-limit-memberships"}, {"GET", "/api/rate-limit-quarantine"},
			{"GET", "/api/rate-limit-admins"}, {"GET", "/api/tokens"}, {"GET", "/api/audit"},
			{"GET", "/api/rate-limits-status"}, {"GET", "/api/rate-limit-counters"},
			{"DELETE", "/api/rate-limit-counters"}, // at most a reset of nothing: the fuzz store counts nothing
		} {
			req := httptest.NewRequest(c.method, "http://rlapi"+c.path+"?"+q, nil)
			req.Header.Set("Authorization", "Bearer "+env.token)
			rec := httptest.NewRecorder()
			env.handler.ServeHTTP(rec, req)
			checkAnswer(t, fmt.Sprintf("%s %s?%s", c.method, c.path, q), rec)
		}
	})
}
