package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/testenv"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"sigs.k8s.io/yaml"
)

// nginxBinary finds nginx, or ends the test: it fails under make test and
// CI=true (the gateway contract would go untested; make test installs
// nginx when root) and skips otherwise (testenv.Missing).
func nginxBinary(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	testenv.Missing(t, "nginx is not installed (/usr/sbin/nginx, nor in PATH): apt-get install nginx to run the gateway end-to-end tests")
	return ""
}

// nginxMain is the main configuration around docs/nginx/rlctl.conf: every
// path nginx writes is in the test's directory, and it runs in the
// foreground as one process so the test owns it whole.
const nginxMain = `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log notice;
{{user}}
events { worker_connections 128; }
http {
    access_log {{dir}}/access.log;
    client_body_temp_path {{dir}}/client_body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;
    include {{dir}}/rlctl.conf;
}
`

// replaceOnce replaces old in s, failing the test unless it occurs exactly
// once: the test runs the documented file, and a changed file must not
// silently run with the example's values.
func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("docs/nginx/rlctl.conf: %q occurs %d times, want once (update nginx_test.go with the file)", old, n)
	}
	return strings.Replace(s, old, repl, 1)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

// lockedBuffer collects a subprocess's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startNginx renders docs/nginx/rlctl.conf for rlapi at rlapiURL and the
// backend at backendURL, starts nginx on a free loopback port and returns
// its base URL. nginx is stopped at cleanup.
func startNginx(t *testing.T, bin, rlapiURL, backendURL, secret string) string {
	t.Helper()
	return startNginxEdited(t, bin, rlapiURL, backendURL, secret, nil)
}

// startNginxEdited is startNginx with edit (when not nil) applied to the
// rendered docs/nginx/rlctl.conf, for a test that adds what docs/nginx.md
// tells a gateway to add.
func startNginxEdited(t *testing.T, bin, rlapiURL, backendURL, secret string, edit func(conf string) string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "nginx", "rlctl.conf"))
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	conf := string(doc)
	conf = replaceOnce(t, conf, "server 127.0.0.1:8080;", "server "+strings.TrimPrefix(rlapiURL, "http://")+";")
	conf = replaceOnce(t, conf, "server 127.0.0.1:9000;", "server "+strings.TrimPrefix(backendURL, "http://")+";")
	conf = replaceOnce(t, conf, "listen 8000;", "listen 127.0.0.1:"+strconv.Itoa(port)+";")
	conf = replaceOnce(t, conf, `"change-me-to-a-long-random-secret"`, `"`+secret+`"`)
	if edit != nil {
		conf = edit(conf)
	}

	dir := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the test's directory belongs to root
	}
	main := strings.NewReplacer("{{dir}}", dir, "{{user}}", user).Replace(nginxMain)
	for name, content := range map[string]string{"nginx.conf": main, "rlctl.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var out lockedBuffer
	cmd := exec.Command(bin, "-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	errorLog := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return out.String() + string(b)
	}
	t.Cleanup(func() {
		// SIGQUIT is nginx's graceful stop; kill it if it lingers.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("nginx output and error log:\n%s", errorLog())
		}
	})

	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("nginx exited at start (%v):\n%s", err, errorLog())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not listen on %s after 15s:\n%s", addr, errorLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNginxGateway runs docs/nginx/rlctl.conf in a real nginx in front of a
// backend, with a real rlapi deciding through GET /api/validate.
func TestNginxGateway(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-5f0c1a"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)

	var reached sync.Map // path -> *atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := reached.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "backend %s %s %s", r.Method, r.URL.Path, body)
	}))
	t.Cleanup(backend.Close)
	reachedCount := func(path string) int64 {
		if n, ok := reached.Load(path); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	gw := startNginx(t, bin, env.URL, backend.URL, secret)

	type reply struct {
		status int
		header http.Header
		body   string
		close  bool // the server closes the connection after it
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	send := func(method, path, user string) reply {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		}
		req, err := http.NewRequest(method, gw+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Username", user)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s through nginx: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, string(b), resp.Close}
	}
	rateHeaders := []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit", "Retry-After"}

	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 2))

	// 2/min on the MCP server srv: 200, 200, then 429.
	for i, remaining := range []string{"1", "0"} {
		r := send(http.MethodPost, "/srv/mcp", "alice")
		if r.status != http.StatusOK || !strings.HasPrefix(r.body, "backend POST /srv/mcp {") {
			t.Fatalf("call %d: %d %q, want the backend's 200 with the body passed on", i+1, r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Limit") != "2" || r.header.Get("X-RateLimit-Remaining") != remaining ||
			r.header.Get("RateLimit-Policy") != `"target:mcp_server:srv:60";q=2;w=60` || r.header.Get("Retry-After") != "" {
			t.Errorf("call %d: allowed response headers %v", i+1, r.header)
		}
	}
	r := send(http.MethodPost, "/srv/mcp", "alice")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("third call: %d %q, want 429", r.status, r.body)
	}
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Errorf("429 Retry-After %q, want 1..60", r.header.Get("Retry-After"))
	}
	if r.header.Get("X-RateLimit-Limit") != "2" || r.header.Get("X-RateLimit-Remaining") != "0" ||
		r.header.Get("X-RateLimit-Reset") == "" || r.header.Get("RateLimit") == "" || r.header.Get("X-RateLimit-Throttled") != "" {
		t.Errorf("429 headers: %v", r.header)
	}
	if !r.close {
		t.Errorf("429 without Connection: close, want the refused client's connection closed")
	}
	var denial struct {
		Error      string `json:"error"`
		RetryAfter int    `json:"retry_after"`
	}
	if err := json.Unmarshal([]byte(r.body), &denial); err != nil || denial.Error != "rate_limited" || denial.RetryAfter != retry {
		t.Errorf("429 body %q (%v)", r.body, err)
	}
	if n := reachedCount("/srv/mcp"); n != 2 {
		t.Errorf("backend saw %d calls to /srv/mcp, want 2", n)
	}
	// Another server has its own (here: no) limit; GET and other methods
	// are decided too.
	if r := send(http.MethodGet, "/other/sse", "alice"); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("unlimited server: %d %v", r.status, r.header)
	}

	// Quarantine: a plain 403 without any rate-limit header.
	if _, err := admin.Quarantine(t.Context(), "user", "mallory", client.QuarantineRequest{Reason: "nginx test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	r = send(http.MethodPost, "/other/mcp", "mallory")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "forbidden") {
		t.Errorf("quarantined caller: %d %q, want 403", r.status, r.body)
	}
	for _, h := range rateHeaders {
		if v := r.header.Get(h); v != "" {
			t.Errorf("quarantine 403 carries %s: %q", h, v)
		}
	}
	if n := reachedCount("/other/mcp"); n != 0 {
		t.Errorf("the quarantined call reached the backend")
	}

	// The control plane is never limited: not for the quarantined caller,
	// not past the limit.
	for i := range 4 {
		for _, user := range []string{"mallory", "alice"} {
			if r := send(http.MethodGet, "/api/x", user); r.status != 200 || r.body != "backend GET /api/x " || r.header.Get("X-RateLimit-Limit") != "" {
				t.Errorf("control plane call %d as %s: %d %q %v", i+1, user, r.status, r.body, r.header)
			}
		}
	}

	// Fail-closed (the counters are gone, and the definition says deny):
	// 503 with Retry-After, never a 429.
	closed := targetLimit("mcp_server", "vault", 60, 100)
	closed.FailClosed = true
	define(t, env, admin, closed)
	breakCounters(t, env)
	r = send(http.MethodPost, "/vault/mcp", "alice")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" || r.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("fail-closed: %d %q %v, want 503 with Retry-After: 1", r.status, r.body, r.header)
	}
}

// TestNginxPathVariantsAreThrottled sends the spellings of one path (dot
// segments, doubled slashes, encodings) through a real nginx, exactly as written on the request
// line: once the limit is used, every one of them is a 429, a disguised
// control-plane path is a 403, and none reaches the backend.
func TestNginxPathVariantsAreThrottled(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-7a21c9"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprintf(w, "backend %s", r.URL.RawPath)
	}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	addr := strings.TrimPrefix(gw, "http://")
	// raw writes the request line as given: no client library re-encodes it.
	raw := func(path string) int {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: gw\r\nX-Auth-Username: alice\r\nConnection: close\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET %s through nginx: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srvlim", 60, 2), targetLimit("a2a_agent", "/agx", 60, 2))
	for _, p := range []string{"/srvlim/mcp", "/srvlim/mcp", "/agent/agx", "/agent/agx"} {
		if got := raw(p); got != http.StatusOK {
			t.Fatalf("%s within the limit: %d", p, got)
		}
	}
	before := reached.Load()
	for _, p := range []string{"/srvlim/mcp", "/SRVLIM/mcp", "/srvlim/MCP", "/srvlim/mcp%20", "/srvlim/mcp;x", "/srvlim;x/mcp",
		`/srvlim\mcp`, "/srvlim%5Cmcp", "/%73rvlim/mcp", "/agent/AGX", "/agent/agx;v=1"} {
		if got := raw(p); got != http.StatusTooManyRequests {
			t.Errorf("%s after the limit is used: %d through nginx, want 429", p, got)
		}
	}
	if got := raw("/%61pi/srvlim/mcp"); got != http.StatusForbidden {
		t.Errorf("/%%61pi/srvlim/mcp: %d through nginx, want 403", got)
	}
	if n := reached.Load() - before; n != 0 {
		t.Errorf("%d denied calls reached the backend", n)
	}
	// Paths that decode to a NUL or to bytes that are not UTF-8 are
	// decided like any other call, never a 500.
	for _, p := range []string{"/x%00/mcp", "/srvx%FF/mcp"} {
		if got := raw(p); got != http.StatusOK && got != http.StatusBadRequest {
			t.Errorf("%s through nginx: %d, want 200 (or nginx's own 400)", p, got)
		} else {
			t.Logf("%s through nginx: %d", p, got)
		}
	}
}

// TestNginxClientIP runs docs/nginx/rlctl.conf with rlapi trusting nginx
// (127.0.0.1) only, and clients on other loopback addresses: the client
// address rlapi decides on is the one nginx saw, whatever the client
// writes in X-Forwarded-For; a quarantined network is refused with 403,
// and anonymous calls are limited per address by their network's group.
func TestNginxClientIP(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-clientip"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.1/32"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)

	// from sends a call to the MCP server srv from the loopback address
	// local, with X-Forwarded-For xff when not empty.
	from := func(local, user, xff string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-Auth-Username", user)
		}
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("call from %s: %v", local, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	awayFromWindowEdge(t, 120)
	define(t, env, admin, group("anonymous", 120, 2, 0))
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "127.0.0.0/24",
		Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Quarantine(t.Context(), ratelimit.SubjectNetwork, "127.0.0.66/32", client.QuarantineRequest{Reason: "nginx test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)

	steps := []struct {
		local, user, xff string
		status           int
	}{
		{"127.0.0.66", "alice", "", http.StatusForbidden},                    // quarantined network, users included
		{"127.0.0.66", "alice", "203.0.113.9", http.StatusForbidden},         // a spoofed hop changes nothing
		{"127.0.0.2", "", "127.0.0.66", http.StatusOK},                       // nor does claiming a quarantined address
		{"127.0.0.2", "", "198.51.100.1", http.StatusTooManyRequests},        // 127.0.0.2's second and third
		{"127.0.0.3", "", "127.0.0.2", http.StatusOK},                        // another address: its own bucket
		{"127.0.0.3", "", "", http.StatusOK},                                 //
		{"127.0.0.3", "", "10.9.9.9, 127.0.0.4", http.StatusTooManyRequests}, // spoofing another address does not help
		{"127.0.0.3", "bob", "", http.StatusOK},                              // a user keeps their identity
	}
	// 127.0.0.2's first call is the third step's; send its second here.
	for i, s := range steps {
		if i == 3 {
			if got := from("127.0.0.2", "", ""); got != http.StatusOK {
				t.Fatalf("127.0.0.2's second anonymous call: %d, want 200", got)
			}
		}
		if got := from(s.local, s.user, s.xff); got != s.status {
			t.Errorf("step %d: from %s as %q with X-Forwarded-For %q: %d, want %d", i+1, s.local, s.user, s.xff, got, s.status)
		}
	}
}

// TestNginxAuthLockout runs the brute-force scenario through a real nginx
// (docs/nginx/rlctl.conf): 5 failed authentications reported for an IPv6
// client (POST /api/auth-events, as the gateway's authentication would)
// lock its /64: a call from a second address of it is answered 429 with
// Retry-After by nginx and never reaches the backend; the next /64 passes.
// rlapi trusts the whole loopback range, as it would a load balancer in
// front of nginx, so the client's own X-Forwarded-For entry is believed.
func TestNginxAuthLockout(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-authlock"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret})
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	hc := &http.Client{Timeout: 10 * time.Second}
	from := func(ip string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Username", "alice")
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("call from %s: %v", ip, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if r := from("2001:db8:5:6::abcd"); r.StatusCode != http.StatusOK {
		t.Fatalf("before any failure: %d", r.StatusCode)
	}
	gwc := clientFor(t, env, env.Token(t, "gateway", ratelimit.RoleEnforcer))
	for range 5 {
		if _, err := gwc.ReportAuth(t.Context(), client.AuthEvent{ClientIP: "2001:db8:5:6::1", Outcome: client.AuthFailure}); err != nil {
			t.Fatal(err)
		}
	}
	before := reached.Load()
	r := from("2001:db8:5:6::abcd")
	if r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second address of the locked /64: %d through nginx, want 429", r.StatusCode)
	}
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || retry < 290 || retry > 300 {
		t.Errorf("429 Retry-After %q, want about 300", r.Header.Get("Retry-After"))
	}
	var denial struct {
		Error      string `json:"error"`
		RetryAfter int    `json:"retry_after"`
	}
	if err := json.NewDecoder(r.Body).Decode(&denial); err != nil || denial.Error != "rate_limited" || denial.RetryAfter != retry {
		t.Errorf("429 body: %+v (%v)", denial, err)
	}
	if n := reached.Load() - before; n != 0 {
		t.Errorf("the locked-out call reached the backend")
	}
	if r := from("2001:db8:5:7::abcd"); r.StatusCode != http.StatusOK {
		t.Errorf("the next /64: %d, want 200", r.StatusCode)
	}
}

// TestNginxEscalationLockout runs an escalation lockout through a real
// nginx: alice's 5th throttled call within 5 minutes locks her out for 15
// minutes; nginx answers 429 with Retry-After and X-Lockout-Remaining, and
// so it answers her next call, on another server, too.
func TestNginxEscalationLockout(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-escalation"
	env := apitest.StartWith(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret},
		apitest.Options{Escalation: &escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}})
	admin := clientFor(t, env, env.AdminToken)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"hourly"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	define(t, env, admin, group("hourly", 3600, 1, 0))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	hc := &http.Client{Timeout: 10 * time.Second}
	send := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Username", "alice")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := send("/srv/mcp"); r.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d", r.StatusCode)
	}
	for i := 1; i <= 4; i++ {
		if r := send("/srv/mcp"); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Lockout-Remaining") != "" {
			t.Fatalf("violation %d: %d %v, want a plain 429", i, r.StatusCode, r.Header)
		}
	}
	r := send("/srv/mcp")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "900" || r.Header.Get("X-Lockout-Remaining") != "900" {
		t.Fatalf("5th violation: %d, Retry-After %q, X-Lockout-Remaining %q; want 429, 900, 900",
			r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get("X-Lockout-Remaining"))
	}
	refresh(t, env)
	r = send("/other/mcp")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Lockout-Remaining") == "" {
		t.Errorf("locked out, another server: %d %v, want 429 with X-Lockout-Remaining", r.StatusCode, r.Header)
	}
}

// TestNginxRouteTiers: docs/examples/004-endpoint-tiers.yaml (read as rlctl
// apply reads it: YAML as JSON, so absent fields take their defaults) behind a real
// nginx with docs/nginx/rlctl.conf: the CRITICAL tier refuses a user's
// 11th POST to /auth/email/* in a minute with a 429, another user from
// another address passes, and paths of no tier reach the backend.
func TestNginxRouteTiers(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-routes"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.1/32"), GatewaySecret: secret})
	admin := clientFor(t, env, env.AdminToken)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)

	raw, err := os.ReadFile("../../docs/examples/004-endpoint-tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var state client.State
	if err := yaml.Unmarshal(raw, &state); err != nil {
		t.Fatal(err)
	}
	awayFromWindowEdge(t, 60)
	if _, err := admin.Apply(t.Context(), state, client.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	// Calls come from 127.0.0.5 unless said: a client address nginx
	// appends to X-Forwarded-For (127.0.0.1, nginx itself, is the trusted
	// proxy).
	callFrom := func(local, method, path, user string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		req, err := http.NewRequest(method, gw+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Username", user)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	call := func(method, path, user string) int { t.Helper(); return callFrom("127.0.0.5", method, path, user) }
	for i := range 10 {
		if got := call("POST", "/auth/email/login", "alice"); got != http.StatusOK {
			t.Fatalf("alice's login %d: %d, want 200", i+1, got)
		}
	}
	if got := call("POST", "/Auth/Email/login?retry=1", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("alice's 11th login: %d, want 429 (CRITICAL is 10/min)", got)
	}
	// bob from alice's address: the address is over (the ip dimension);
	// carol from another address passes.
	if got := call("POST", "/auth/sso/start", "bob"); got != http.StatusTooManyRequests {
		t.Errorf("bob from the same address: %d, want 429 (the ip dimension)", got)
	}
	if got := callFrom("127.0.0.6", "POST", "/auth/sso/start", "carol"); got != http.StatusOK {
		t.Errorf("carol from another address: %d, want 200", got)
	}
	if got := call("GET", "/about", "alice"); got != http.StatusOK {
		t.Errorf("a path of no tier: %d, want 200", got)
	}
	if got := call("POST", "/tokens/new", "alice"); got != http.StatusOK {
		t.Errorf("the HIGH tier is another bucket: %d, want 200", got)
	}
}

// TestNginxAuthThrottleSuccessAndExpired: the rest of the brute-force
// scenario behind a real nginx: 4 failures, a success, 4 more failures
// leave the address passing (the success reset the count); 20 expired
// tokens reported leave it passing (an expired token is not a failure);
// then the 5th failure since the success locks it, and nginx answers 429
// with Retry-After about 300 s without reaching the backend.
func TestNginxAuthThrottleSuccessAndExpired(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-authreset"
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret})
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	hc := &http.Client{Timeout: 10 * time.Second}
	const ip = "192.0.2.77"
	status := func() (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Username", "alice")
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	gwc := clientFor(t, env, env.Token(t, "gateway", ratelimit.RoleEnforcer))
	reportN := func(n int, outcome string) {
		t.Helper()
		for range n {
			if _, err := gwc.ReportAuth(t.Context(), client.AuthEvent{ClientIP: ip, Outcome: outcome}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reportN(4, client.AuthFailure)
	reportN(1, client.AuthSuccess)
	reportN(4, client.AuthFailure)
	if s, _ := status(); s != http.StatusOK {
		t.Fatalf("4 failures, a success, 4 failures: %d through nginx, want 200 (the success reset the count)", s)
	}
	reportN(20, client.AuthExpired)
	if s, _ := status(); s != http.StatusOK {
		t.Fatalf("after 20 expired tokens: %d through nginx, want 200 (expired tokens are no failures)", s)
	}
	reportN(1, client.AuthFailure)
	before := reached.Load()
	s, retry := status()
	if n, err := strconv.Atoi(retry); s != http.StatusTooManyRequests || err != nil || n < 290 || n > 300 {
		t.Errorf("the 5th failure since the success: %d, Retry-After %q; want 429 for about 300 s", s, retry)
	}
	if reached.Load() != before {
		t.Error("the locked-out call reached the backend")
	}
}

// TestNginxAnonymousEscalationLockout: an anonymous caller behind a real
// nginx, keyed by its client IP, is escalation-locked like a user: its
// 5th throttled call within 5 minutes locks its address (network
// 198.51.100.9/32) for 15 minutes, answered 429 with Retry-After and
// X-Lockout-Remaining, on another server too; another address of the
// same /24 still passes, and so does a user calling from the locked one.
func TestNginxAnonymousEscalationLockout(t *testing.T) {
	t.Parallel()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-anonlock"
	env := apitest.StartWith(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: secret},
		apitest.Options{Escalation: &escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}})
	admin := clientFor(t, env, env.AdminToken)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "198.51.100.0/24",
		Groups: []string{"hourly"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	define(t, env, admin, group("hourly", 3600, 1, 0))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	gw := startNginx(t, bin, env.URL, backend.URL, secret)
	hc := &http.Client{Timeout: 10 * time.Second}
	send := func(path, ip, user string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", ip)
		if user != "" {
			req.Header.Set("X-Auth-Username", user)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	const ip = "198.51.100.9"
	if r := send("/srv/mcp", ip, ""); r.StatusCode != http.StatusOK {
		t.Fatalf("first anonymous call: %d", r.StatusCode)
	}
	for i := 1; i <= 4; i++ {
		if r := send("/srv/mcp", ip, ""); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Lockout-Remaining") != "" {
			t.Fatalf("violation %d: %d %v, want a plain 429", i, r.StatusCode, r.Header)
		}
	}
	r := send("/srv/mcp", ip, "")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "900" || r.Header.Get("X-Lockout-Remaining") != "900" {
		t.Fatalf("5th violation: %d, Retry-After %q, X-Lockout-Remaining %q; want 429, 900, 900",
			r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get("X-Lockout-Remaining"))
	}
	refresh(t, env)
	if r := send("/other/mcp", ip, ""); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Lockout-Remaining") == "" {
		t.Errorf("locked out, another server: %d %v, want 429 with X-Lockout-Remaining", r.StatusCode, r.Header)
	}
	if r := send("/srv/mcp", "198.51.100.10", ""); r.StatusCode != http.StatusOK {
		t.Errorf("another address of the /24: %d, want 200", r.StatusCode)
	}
	if r := send("/srv/mcp", ip, "carol"); r.StatusCode != http.StatusOK {
		t.Errorf("a user from the locked address: %d, want 200", r.StatusCode)
	}
}
