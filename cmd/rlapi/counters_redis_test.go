package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeCountsInRedis: with RLAPI_COUNTERS_URL on a Redis server or a
// Redis Cluster, POST /api/check counts in Redis (a limit of 1 admits one
// call, nothing lands in rl_counters) while the configuration stays in
// PostgreSQL, and `rlctl counters get` and `rlctl counters reset`, through
// the real rlapi, list and reset those counters: by caller, by a target
// definition, and by a caller definition (its group members' shared
// buckets). Names are the test's own: the shared servers keep other
// tests' keys.
func TestServeCountsInRedis(t *testing.T) {
	t.Parallel()
	for _, target := range []struct{ name, env string }{{"standalone", "REDIS_URL"}, {"cluster", "REDIS_CLUSTER_URL"}} {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			countsInRedis(t, redistest.URL(t, target.env))
		})
	}
}

func countsInRedis(t *testing.T, ru string) {
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	sfx := strconv.FormatInt(time.Now().UnixNano(), 36)
	name, group, alice := "redis-"+sfx, "devs-"+sfx, "user:alice-"+sfx
	hundred := 100
	callerDef := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: group, WindowSeconds: 60,
		UserMaxRequests: &hundred, Enabled: true, Mode: ratelimit.ModeEnforce}
	callerID := ratelimit.DefinitionID(callerDef.Axis, callerDef.EntityType, callerDef.Name, callerDef.WindowSeconds)
	pre, err := store.Open(ctx, dsn, store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := pre.InTx(ctx, func(q *store.Queries) error {
		if _, err := q.PutDefinition(ctx, callerDef, store.Write{}); err != nil {
			return err
		}
		_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: strings.TrimPrefix(alice, "user:"),
			Groups: []string{group}}, store.Write{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pre.Close()
	one := 1
	srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: name, WindowSeconds: 3600,
		MaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce}, map[string]string{"RLAPI_COUNTERS_URL": ru})
	check := `{"username": "` + strings.TrimPrefix(alice, "user:") + `", "target_type": "mcp_server", "target_name": "` + name + `"}`
	if code, m := srv.do(t, "POST", "/api/check", check); code != 200 || m["allowed"] != true {
		t.Fatalf("first check: %d %v, want allowed", code, m)
	}
	if code, m := srv.do(t, "POST", "/api/check", check); code != 429 && (code != 200 || m["allowed"] != false) || m["reason"] != "throttled" {
		t.Fatalf("second check on a limit of 1: %d %v, want throttled", code, m)
	}
	var rows int
	if err := srv.st.Pool().QueryRow(ctx, `select count(*) from rl_counters`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("rl_counters holds %d rows: the decisions counted in PostgreSQL, not Redis", rows)
	}

	rlctl := clitest.New(t)
	run := func(args ...string) string {
		t.Helper()
		res := rlctl.RunWith(clitest.Opts{Bare: true}, append([]string{"--server", "http://" + srv.addr, "--token", srv.token}, args...)...)
		if res.Code != 0 {
			t.Fatalf("rlctl %s: exit %d\n%s%s", strings.Join(args, " "), res.Code, res.Out, res.ErrOut)
		}
		return res.Out
	}
	counts := func(flag, value string) map[string]int64 {
		t.Helper()
		var doc client.CounterList
		if err := json.Unmarshal([]byte(run("counters", "get", flag, value, "-o", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, c := range doc.Counters {
			out[c.Key] += c.Count
		}
		return out
	}
	bucket := counterkey.Caller(60, alice).String()
	targetKey := counterkey.Target(ratelimit.Definition{ID: ratelimit.DefinitionID(ratelimit.AxisTarget, ratelimit.EntityMCPServer, name, 3600), WindowSeconds: 3600}, "").String()
	if got := counts("--caller", alice); !maps.Equal(got, map[string]int64{bucket: 1}) {
		t.Errorf("counters get --caller %s = %v, want her caller bucket at 1 (the throttled call took nothing)", alice, got)
	}
	if got := counts("--target", "mcp_server:"+name); !maps.Equal(got, map[string]int64{targetKey: 1}) {
		t.Errorf("counters get --target mcp_server:%s = %v, want the target counter at 1", name, got)
	}
	targetDef := "target:mcp_server:" + name + ":3600"
	if out := run("counters", "reset", "--definition", targetDef, "--yes"); !strings.Contains(out, "1 counter reset") {
		t.Errorf("counters reset --definition %s: %q, want 1 counter reset", targetDef, out)
	}
	if got := counts("--target", "mcp_server:"+name); len(got) != 0 {
		t.Errorf("after the reset, target mcp_server:%s still counts %v", name, got)
	}
	if code, m := srv.do(t, "POST", "/api/check", check); code != 200 || m["allowed"] != true {
		t.Errorf("a check after the reset of the target's counter: %d %v, want allowed", code, m)
	}
	if got := counts("--definition", callerID); !maps.Equal(got, map[string]int64{bucket: 2}) {
		t.Errorf("counters get --definition %s = %v, want alice's shared bucket at 2", callerID, got)
	}
	if out := run("counters", "reset", "--definition", callerID, "--yes"); !strings.Contains(out, "1 counter reset") {
		t.Errorf("counters reset --definition %s: %q, want 1 counter reset", callerID, out)
	}
	if got := counts("--caller", alice); len(got) != 0 {
		t.Errorf("after resetting %s, %s still counts %v", callerID, alice, got)
	}
	page, err := client.New("http://"+srv.addr, client.Options{Token: srv.token, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	audit, err := page.ListAudit(ctx, client.AuditFilter{Resource: "counters"})
	if err != nil || len(audit.Entries) != 2 {
		t.Errorf("audit of the resets: %+v, %v; want 2 entries", audit, err)
	}
	srv.stop()
	if !strings.Contains(srv.stderr.String(), "counters in Redis") {
		t.Errorf("the start-up log does not say where the counters are:\n%s", srv.stderr.String())
	}
}

// TestServeLocksOutInRedis: with the counters in Redis, rlapi's own
// failed-credential lockout counts there too, shared by every replica:
// three unknown tokens at one replica and two at another lock the address
// out at both (the admin's valid token refused with 429; at the first
// replica once its cached answer is a second old), and nothing of it
// lands in rl_counters. The address is a forwarded one of the test's
// own (the shared servers serve other tests from the loopback).
func TestServeLocksOutInRedis(t *testing.T) {
	t.Parallel()
	for _, target := range []struct{ name, env string }{{"standalone", "REDIS_URL"}, {"cluster", "REDIS_CLUSTER_URL"}} {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			ru := redistest.URL(t, target.env)
			dsn := pgtest.NewMigratedDatabase(t)
			vars := map[string]string{"RLAPI_COUNTERS_URL": ru, "RLAPI_TRUSTED_PROXIES": "127.0.0.1/32"}
			one := 1
			def := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "lockout", WindowSeconds: 60,
				MaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce}
			a := serveWith(t, dsn, def, vars)
			b := serveReplica(t, a, dsn, vars)
			from := fmt.Sprintf("2001:db8:%x:%x::7", time.Now().UnixNano()&0xffff, os.Getpid()&0xffff)
			get := func(s served, token string) int {
				t.Helper()
				req, _ := http.NewRequest("GET", "http://"+s.addr+"/api/rate-limits", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("X-Forwarded-For", from)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := range 3 {
				if code := get(a, "rlt_typo"); code != http.StatusUnauthorized {
					t.Fatalf("unknown token %d at replica a: %d, want 401", i+1, code)
				}
			}
			// No valid token between the failures: a success resets the
			// address's count (enforcetest's "a success resets the failure
			// count on every replica" holds that on Redis too).
			for i := range 2 {
				if code := get(b, "rlt_typo"); code != http.StatusUnauthorized {
					t.Fatalf("unknown token %d at replica b: %d, want 401", i+4, code)
				}
			}
			if code := get(b, b.token); code != http.StatusTooManyRequests {
				t.Errorf("the admin at replica b after 5 failures over two replicas: %d, want 429 (locked out)", code)
			}
			// Replica a trusts its last "not locked" for a second
			// (AuthThrottleOptions.RecheckAfter), then reads the lockout.
			for deadline := time.Now().Add(10 * time.Second); get(a, a.token) != http.StatusTooManyRequests; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("10s after the lockout at replica b, replica a still serves the address")
				}
			}
			var rows int
			if err := a.st.Pool().QueryRow(context.Background(), `select count(*) from rl_counters`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != 0 {
				t.Errorf("rl_counters holds %d rows: the lockout counted in PostgreSQL, not Redis", rows)
			}
		})
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
	return serveReplica(t, served{token: strings.TrimSpace(string(tok)), st: st}, dsn, serveEnv)
}

// serveReplica serves another rlapi over the database of r (dsn), with
// serveEnv, sharing r's token and store.
func serveReplica(t *testing.T, r served, dsn string, serveEnv map[string]string) served {
	t.Helper()
	ctx := context.Background()
	vars := map[string]string{"DATABASE_URL": dsn}
	maps.Copy(vars, serveEnv)
	s := served{addr: freeAddr(t), token: r.token, st: r.st, stderr: &syncBuffer{}}
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

// TestServeRefusesAMismatchedRedisScheme: --counters-url redis:// at a
// node of a Redis Cluster (which would start, then fail every decision of
// gates in different hash slots open with CROSSSLOT) and
// redis+cluster:// at a standalone server both stop serve with a usage
// error (exit 2) that names the scheme to use.
func TestServeRefusesAMismatchedRedisScheme(t *testing.T) {
	t.Parallel()
	cu, err := url.Parse(redistest.URL(t, "REDIS_CLUSTER_URL"))
	if err != nil {
		t.Fatal(err)
	}
	su, err := url.Parse(redistest.URL(t, "REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	node := strings.Split(cu.Host, ",")[0]
	dsn := pgtest.NewMigratedDatabase(t)
	for _, c := range []struct{ countersURL, want string }{
		{"redis://" + node, "use redis+cluster://" + node},
		{"redis+cluster://" + su.Host, "use redis://" + su.Host},
	} {
		var out, errOut syncBuffer
		code := run(t.Context(), []string{"serve", "--addr", freeAddr(t)},
			env(map[string]string{"DATABASE_URL": dsn, "RLAPI_COUNTERS_URL": c.countersURL}), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) || !strings.Contains(errOut.String(), "--counters-url (RLAPI_COUNTERS_URL)") {
			t.Errorf("serve --counters-url %s: exit %d, stderr:\n%s\nwant 2 and a usage error saying %q", c.countersURL, code, errOut.String(), c.want)
		}
	}
}

// TestReadyzFollowsTheCounterStore: with counters in Redis, /readyz is 503
// and says "counter store (redis) unavailable" on the first probe after
// Redis stops answering (stalled: SIGSTOP; gone: killed), and 200 on the
// first probe after it answers again, each probe bounded by the check's
// own deadline (half a second) rather than cached; /healthz (liveness)
// stays 200 throughout, since restarting rlapi would not bring Redis back.
// GET /api/server (rlctl status) says the store is unreachable, and why,
// while it is.
func TestReadyzFollowsTheCounterStore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	vars := env(map[string]string{"DATABASE_URL": pgtest.NewMigratedDatabase(t), "RLAPI_COUNTERS_URL": srv.URL})
	tok := createToken(t, vars, "ops", "viewer")
	addr, _ := startServe(t, vars)
	sdk, err := client.New("http://"+addr, client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	reachable := func(when string, want bool) {
		t.Helper()
		info, err := sdk.ServerInfo(t.Context())
		if err != nil {
			t.Fatalf("%s: ServerInfo: %v", when, err)
		}
		if cs := info.CounterStore; cs.Reachable != want || (cs.Error == "") != want {
			t.Errorf("%s: counter store reachable %v, error %q; want reachable %v, with an error only when not", when, cs.Reachable, cs.Error, want)
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	check := func(when string, wantReady bool) {
		t.Helper()
		code, body := get("/readyz")
		if wantReady && (code != http.StatusOK || body != "ready\n") {
			t.Errorf("%s: /readyz %d %q, want 200 ready", when, code, body)
		}
		if !wantReady && (code != http.StatusServiceUnavailable || !strings.Contains(body, "counter store (redis) unavailable")) {
			t.Errorf("%s: /readyz %d %q, want 503 saying the counter store is unavailable", when, code, body)
		}
		if code, body := get("/healthz"); code != http.StatusOK {
			t.Errorf("%s: /healthz %d %q, want 200: liveness does not depend on Redis", when, code, body)
		}
	}
	check("Redis up", true)
	reachable("Redis up", true)
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	check("Redis stalled", false)
	reachable("Redis stalled", false)
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	check("Redis resumed", true)
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = srv.Process.Wait()
	check("Redis gone", false)
}

// TestServerInfoSaysWhereDecisionsCount: GET /api/server (the SDK's
// ServerInfo, what rlctl status shows) of an rlapi counting in the Redis
// Cluster, with leases and the gRPC listener on, says so, with the
// cluster reachable and its address without the password.
func TestServerInfoSaysWhereDecisionsCount(t *testing.T) {
	t.Parallel()
	clusterURL := redistest.URL(t, "REDIS_CLUSTER_URL")
	vars := env(map[string]string{"DATABASE_URL": pgtest.NewMigratedDatabase(t), "RLAPI_COUNTERS_URL": clusterURL})
	tok := createToken(t, vars, "ops", "viewer")
	grpcAddr := freeAddr(t)
	addr, _ := startServe(t, vars, "--lease-time", "2s", "--lease-replicas", "3", "--grpc-addr", grpcAddr, "--grpc-count-mode", "every-descriptor")
	c, err := client.New("http://"+addr, client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.ServerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cs := info.CounterStore
	if cs.Backend != "redis" || !cs.Cluster || !cs.Reachable || cs.Error != "" || cs.Address != redisstore.Redact(clusterURL) {
		t.Errorf("counter store %+v: want the reachable Redis Cluster at %s", cs, redisstore.Redact(clusterURL))
	}
	if want := (client.GRPCInfo{Enabled: true, Address: grpcAddr, CountMode: "every-descriptor"}); info.GRPC != want {
		t.Errorf("gRPC %+v, want %+v", info.GRPC, want)
	}
	if want := (client.LeaseInfo{Enabled: true, LeaseTimeSeconds: 2, Replicas: 3, Keys: "hot"}); info.Leases != want {
		t.Errorf("leases %+v, want %+v", info.Leases, want)
	}
	if host, _ := os.Hostname(); info.Replica != host {
		t.Errorf("replica %q, want this host's name %q", info.Replica, host)
	}
}
