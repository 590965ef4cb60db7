package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// addMemberships inserts n user memberships in one statement.
func addMemberships(t *testing.T, st *store.Store, n int) {
	t.Helper()
	if _, err := st.Pool().Exec(t.Context(), `insert into rl_memberships (subject_type, subject, groups)
		select 'user', 'member-' || lpad(g::text, 6, '0'), array['staff', 'group-' || (g % 50)]
		from generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
}

// slowReader opens GET path with a tiny receive buffer and reads only the
// first byte of the answer: the server has begun writing it, and the rest
// (megabytes) waits on a client that reads nothing more.
func slowReader(t *testing.T, base, path, token string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
		})
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: rlapi\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
	return conn
}

// answered reads the first byte of conn's answer.
func answered(conn net.Conn) error {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds a hang only
	_, err := bufio.NewReaderSize(conn, 16).Peek(1)
	return err
}

// The lowest role cannot starve decisions: sixteen viewer-token clients
// that open the whole list of 60,000 memberships and read nothing do not
// keep POST /api/check and GET /api/validate from deciding correctly (a
// used-up target stays throttled), nor other readers from reading. As in
// rlapi, decisions (the Enforcer, token checks) have their own pool; the
// management pool holds four connections, fewer than the slow readers:
// before lists released their connection before writing, the readers held
// it until the write timeout, and with one shared pool decisions failed
// open or hung.
func TestSlowListReadersDoNotStarveDecisions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := pgtest.NewMigratedDatabase(t)
	st, err := store.Open(ctx, dsn, store.Opts{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	decisions, err := store.Open(ctx, dsn, store.Opts{MaxConns: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(decisions.Close)
	const secret = "gw-secret"
	env := startDecisionsApart(t, st, decisions, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	viewer := env.Token(t, "viewer", "viewer")
	gw := env.Token(t, "gateway", "enforcer")
	addMemberships(t, st, 60_000)
	awayFromWindowEdge(t, 3600)
	define(t, env, admin, targetLimit("mcp_server", "srv", 3600, 2), targetLimit("mcp_server", "other", 3600, 100))

	hc := boundedClient()
	checkBody := func(target string) string {
		return `{"username":"alice","target_type":"mcp_server","target_name":"` + target + `"}`
	}
	for range 2 {
		if r := decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: checkBody("srv")})); !r.Allowed {
			t.Fatalf("using up srv: %+v", r)
		}
	}

	var readers []net.Conn
	for range 16 {
		readers = append(readers, slowReader(t, env.URL, "/api/rate-limit-memberships", viewer))
	}
	for i, c := range readers {
		if err := answered(c); err != nil {
			t.Errorf("slow reader %d got no answer (%v): the pool is held by the others", i, err)
		}
	}

	for i := range 3 {
		r := decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: checkBody("srv")}))
		if r.Allowed || r.Reason != "throttled" {
			t.Errorf("check %d of a used-up target during the attack: %+v, want throttled", i, r)
		}
		r = decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: checkBody("other")}))
		if !r.Allowed || r.Reason != "allowed" {
			t.Errorf("check %d of a target under its limit during the attack: %+v, want allowed", i, r)
		}
		a := send(t, hc, env.URL, call{method: "GET", path: "/api/validate", header: map[string]string{
			"X-Gateway-Secret": secret, "X-Original-URI": "/srv/mcp", "X-Auth-Username": "alice"}})
		if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "1" {
			t.Errorf("validate %d of a used-up target during the attack: %d %v %s, want 403 throttled", i, a.status, a.header, a.body)
		}
	}
	// Readers are served too: the slow ones hold no connection.
	a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limit-memberships?limit=3", token: viewer})
	var page struct {
		Memberships []json.RawMessage `json:"memberships"`
		NextCursor  string            `json:"next_cursor"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &page) != nil || len(page.Memberships) != 3 || page.NextCursor != "user:member-000003" {
		t.Errorf("a page during the attack: %d %s", a.status, a.body)
	}
}

// startDecisionsApart serves rlapi as rlapi serve does: the management API
// over st, decisions (the Enforcer, token checks) over their own pool. The
// counters' deadline is 5 s rather than 250 ms so that a busy test machine
// cannot make a decision fail open: only a starved pool could.
func startDecisionsApart(t *testing.T, st, decisions *store.Store, cfg api.Config) *apitest.Env {
	t.Helper()
	enf, err := postgres.New(context.Background(), decisions.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enf.Close)
	cfg.BackendTimeout = 5 * time.Second
	srv := api.New(st, cfg, api.Opts{Enforcer: enf, AuthStore: decisions, Counters: postgres.NewCounterStore(decisions.Pool())})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("rlapi stopped with: %v", err)
		}
	})
	env := &apitest.Env{URL: "http://" + ln.Addr().String(), Store: st, Enforcer: enf}
	env.AdminToken = env.Token(t, "test-admin", "admin")
	return env
}

// Lists are read in chunks: a whole list and pages across chunk borders
// come out complete, in order, with the right cursors.
func TestListsAcrossChunks(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	addMemberships(t, env.Store, 1203)
	viewer := env.Token(t, "viewer", "viewer")
	type page struct {
		Memberships []struct {
			ID string `json:"id"`
		} `json:"memberships"`
		NextCursor *string `json:"next_cursor"`
	}
	get := func(query string) page {
		t.Helper()
		a := do(t, env.URL, call{method: "GET", path: "/api/rate-limit-memberships" + query, token: viewer})
		var p page
		if a.status != 200 {
			t.Fatalf("list%s: %d %s", query, a.status, a.body)
		}
		if err := json.Unmarshal(a.body, &p); err != nil {
			t.Fatalf("list%s is not JSON: %v", query, err)
		}
		return p
	}
	all := get("")
	if len(all.Memberships) != 1203 || all.NextCursor != nil {
		t.Fatalf("whole list: %d rows, cursor %v; want 1203 and none", len(all.Memberships), all.NextCursor)
	}
	for i, m := range all.Memberships {
		if want := fmt.Sprintf("user:member-%06d", i+1); m.ID != want {
			t.Fatalf("row %d is %s, want %s", i, m.ID, want)
		}
	}
	var ids []string
	cursor := ""
	for range 10 {
		p := get("?limit=700" + cursor)
		for _, m := range p.Memberships {
			ids = append(ids, m.ID)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *p.NextCursor
	}
	if len(ids) != 1203 || ids[699] != "user:member-000700" || ids[700] != "user:member-000701" {
		t.Errorf("pages of 700: %d rows", len(ids))
	}
	if p := get("?limit=500"); len(p.Memberships) != 500 || p.NextCursor == nil || *p.NextCursor != "user:member-000500" {
		t.Errorf("a page of exactly one chunk: %d rows, cursor %v", len(p.Memberships), p.NextCursor)
	}
	if p := get("?limit=1203"); len(p.Memberships) != 1203 || p.NextCursor != nil {
		t.Errorf("a page holding everything: %d rows, cursor %v", len(p.Memberships), p.NextCursor)
	}
}
