package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeCountsInRedis: with RLAPI_COUNTERS_URL, POST /api/check counts
// in Redis (a limit of 1 admits one call, nothing lands in rl_counters),
// while the configuration stays in PostgreSQL; the counters API, which
// reads and resets PostgreSQL's counters only, answers 501 saying where
// the counters are, instead of an empty list or a reset of nothing.
func TestServeCountsInRedis(t *testing.T) {
	t.Parallel()
	ru := redistest.URL(t, "REDIS_URL")
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	// A target of its own name: the shared Redis keeps other tests' keys.
	name := "redis-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	one := 1
	srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: name, WindowSeconds: 3600,
		MaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce}, map[string]string{"RLAPI_COUNTERS_URL": ru})
	st := srv.st
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		return srv.do(t, method, path, body)
	}
	check := `{"username": "alice", "target_type": "mcp_server", "target_name": "` + name + `"}`
	if code, m := do("POST", "/api/check", check); code != 200 || m["allowed"] != true {
		t.Fatalf("first check: %d %v, want allowed", code, m)
	}
	if code, m := do("POST", "/api/check", check); code != 429 && (code != 200 || m["allowed"] != false) || m["reason"] != "throttled" {
		t.Fatalf("second check on a limit of 1: %d %v, want throttled", code, m)
	}
	var rows int
	if err := st.Pool().QueryRow(ctx, `select count(*) from rl_counters`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("rl_counters holds %d rows: the decisions counted in PostgreSQL, not Redis", rows)
	}
	for _, method := range []string{"GET", "DELETE"} {
		code, m := do(method, "/api/rate-limit-counters?target=mcp_server:"+name, "")
		if code != http.StatusNotImplemented || !strings.HasSuffix(m["type"].(string), "counters-elsewhere") ||
			!strings.Contains(m["detail"].(string), "Redis") {
			t.Errorf("%s /api/rate-limit-counters with counters in Redis: %d %v, want a 501 counters-elsewhere problem naming Redis", method, code, m)
		}
	}
	srv.stop()
	if !strings.Contains(srv.stderr.String(), "counters in Redis") {
		t.Errorf("the start-up log does not say where the counters are:\n%s", srv.stderr.String())
	}
}

// TestServeRefusesABadCountersURL: a counters URL rlapi cannot use is a
// usage error naming the flag, before anything is opened.
func TestServeRefusesABadCountersURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"memcached://127.0.0.1:1", "redis+cluster://127.0.0.1", "redis+cluster://h:1/3"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve"}, env(map[string]string{"RLAPI_COUNTERS_URL": u}), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--counters-url") {
			t.Errorf("RLAPI_COUNTERS_URL=%s: exit %d, %q; want a usage error naming --counters-url", u, code, errOut.String())
		}
	}
}

// waitReady waits until serve answers /readyz on addr (or fails the test
// if it exits).
// served is an rlapi serving on a free address (serveWith).
type served struct {
	addr, token string
	st          *store.Store
	stderr      *syncBuffer
	// stop ends the server and waits for it.
	stop func()
}

// serveWith stores d in the migrated database dsn, creates an admin
// token and serves rlapi with serveEnv (DATABASE_URL added) until stop or
// the test's end.
func serveWith(t *testing.T, dsn string, d ratelimit.Definition, serveEnv map[string]string) served {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.InTx(ctx, func(q *store.Queries) error { _, err := q.PutDefinition(ctx, d, store.Write{}); return err }); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "token")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"token", "create", "--name", "gw", "--role", "admin", "--output-file", file},
		env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut); code != 0 {
		t.Fatalf("token create: exit %d: %s", code, errOut.String())
	}
	tok, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DATABASE_URL": dsn}
	maps.Copy(vars, serveEnv)
	s := served{addr: freeAddr(t), token: strings.TrimSpace(string(tok)), st: st, stderr: &syncBuffer{}}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var stdout syncBuffer
	go func() { done <- run(sctx, []string{"serve", "--addr", s.addr}, env(vars), &stdout, s.stderr) }()
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(s.stop)
	waitReady(t, s.addr, done, s.stderr)
	return s
}

// do sends an authenticated request to the server and decodes its JSON
// answer.
func (s served) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func waitReady(t *testing.T, addr string, done chan int, stderr *syncBuffer) {
	t.Helper()
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if i > 600 { // 30 s: bounds a hang only
			t.Fatalf("server never answered: %v; stderr: %s", err, stderr.String())
		}
	}
}

// TestServeRefusesAnEvictingRedis: a Redis whose maxmemory-policy evicts
// (here allkeys-lru under maxmemory 2mb) would drop counters and with
// them the limits, so serve refuses it with a usage error naming the
// node's policy, the command that fixes it and the flag that overrides;
// with --counters-allow-eviction it serves, warns, and /metrics says
// rlctl_redis_eviction_safe 0.
func TestServeRefusesAnEvictingRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru")
	dsn := pgtest.NewMigratedDatabase(t)
	var out, errOut syncBuffer
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr},
			env(map[string]string{"DATABASE_URL": dsn, "RLAPI_COUNTERS_URL": srv.URL}), &out, &errOut)
	}()
	// serve listens before it opens the counters: a ready check that
	// reaches the listener then waits for no answer, so it is bounded.
	probe := &http.Client{Timeout: time.Second}
	code := -1
	for end := time.Now().Add(30 * time.Second); code < 0; {
		select {
		case code = <-done:
		case <-time.After(20 * time.Millisecond):
			if resp, err := probe.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
				cancel()
				<-done
				t.Fatalf("serve started on an allkeys-lru Redis; stderr:\n%s", errOut.String())
			}
			if time.Now().After(end) {
				t.Fatalf("serve neither refused nor started within 30 s; stderr:\n%s", errOut.String())
			}
		}
	}
	if code != 2 {
		t.Fatalf("serve on an allkeys-lru Redis: exit %d, want 2 (a usage error); stderr:\n%s", code, errOut.String())
	}
	for _, want := range []string{"maxmemory-policy allkeys-lru", "CONFIG SET maxmemory-policy noeviction", "--counters-allow-eviction"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("serve's refusal does not say %q:\n%s", want, errOut.String())
		}
	}

	one := 1
	s := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "evicting", WindowSeconds: 3600,
		MaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce},
		map[string]string{"RLAPI_COUNTERS_URL": srv.URL, "RLAPI_COUNTERS_ALLOW_EVICTION": "true"})
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "\nrlctl_redis_eviction_safe 0\n") ||
		!strings.Contains(string(body), `rlctl_redis_maxmemory_policy{node="`+strings.TrimPrefix(srv.URL, "redis://")+`",policy="allkeys-lru"} 1`) {
		t.Errorf("/metrics (%d) does not report the evicting policy:\n%s", resp.StatusCode, grepLines(string(body), "rlctl_redis_"))
	}
	if !strings.Contains(s.stderr.String(), "may evict counters") {
		t.Errorf("serve with --counters-allow-eviction logged no warning:\n%s", s.stderr.String())
	}
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
