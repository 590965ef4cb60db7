package apitest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

func TestContractDocumentValidates(t *testing.T) {
	c := apitest.NewContract(t) // fails the test when the document does not validate
	doc := c.Doc()
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	public := map[string]bool{"/healthz": true, "/readyz": true, "/api/version": true}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			secured := op.Security == nil || len(*op.Security) > 0
			if secured == public[path] {
				t.Errorf("%s %s: secured = %v, want %v", method, path, secured, !public[path])
			}
			if op.Responses.Value("200") == nil && op.Responses.Value("201") == nil {
				t.Errorf("%s %s documents no success response", method, path)
			}
			if !public[path] {
				for _, status := range []string{"401", "403", "429", "503"} {
					if op.Responses.Value(status) == nil {
						t.Errorf("%s %s does not document %s", method, path, status)
					}
				}
			}
		}
	}
}

// routePattern finds the route patterns of internal/api/routes.go: the
// quoted "METHOD /path" strings of its table (and of checkRoute).
var routePattern = regexp.MustCompile(`"(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^"]*)"`)

// TestContractCoversEveryRoute compares the server's route table with the
// document in both directions: every route is documented and every
// documented operation is a route.
func TestContractCoversEveryRoute(t *testing.T) {
	src, err := os.ReadFile("../api/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
		path := strings.NewReplacer("{id...}", "{id}", "{name...}", "{name}", "{address...}", "{address}").Replace(m[2])
		routes[m[1]+" "+path] = true
	}
	if len(routes) < 20 {
		t.Fatalf("found only %d routes in routes.go; has its format changed?", len(routes))
	}
	documented := map[string]bool{}
	for path, item := range apitest.NewContract(t).Doc().Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for r := range routes {
		if !documented[r] {
			t.Errorf("route %s is not in docs/openapi.yaml", r)
		}
	}
	for d := range documented {
		if !routes[d] {
			t.Errorf("docs/openapi.yaml documents %s, which internal/api/routes.go does not serve", d)
		}
	}
}

// caller sends requests through the contract's transport and checks the
// status each call expects.
type caller struct {
	t      *testing.T
	base   string
	client *http.Client
}

// call sends method path with the bearer token (none when empty) and the
// body (none when empty), plus header name/value pairs, and returns the
// response and its body after checking the status.
func (c *caller) call(want int, method, path, token, body string, header ...string) (*http.Response, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if resp.StatusCode != want {
		c.t.Errorf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return resp, b
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// TestContractLiveServer answers a representative set of calls with a real
// rlapi and checks each response against the document.
func TestContractLiveServer(t *testing.T) {
	env := apitest.Start(t, api.Config{})
	contract := apitest.NewContract(t)
	c := &caller{t: t, base: env.URL, client: &http.Client{Transport: contract.Transport(nil)}}
	admin := env.AdminToken
	viewer := env.Token(t, "test-viewer", "viewer")

	// Service routes.
	c.call(200, "GET", "/healthz", "", "")
	c.call(200, "GET", "/readyz", "", "")
	c.call(200, "GET", "/api/version", "", "")
	c.call(200, "GET", "/metrics", admin, "")
	resp, _ := c.call(200, "GET", "/metrics", admin, "",
		"Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.google.protobuf") {
		t.Errorf("metrics in protobuf: Content-Type %q", resp.Header.Get("Content-Type"))
	}
	_, raw := c.call(200, "GET", "/api/openapi.json", admin, "")
	served := decodeJSON(t, raw)
	if served["openapi"] != "3.0.3" {
		t.Errorf("served document has openapi = %v", served["openapi"])
	}
	if paths, _ := served["paths"].(map[string]any); len(paths) != len(contract.Doc().Paths.Map()) {
		t.Errorf("served document has %d paths, the embedded one %d", len(paths), len(contract.Doc().Paths.Map()))
	}

	// Authentication and roles.
	resp, _ = c.call(401, "GET", "/api/rate-limits", "", "")
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	const devs = `{"axis":"caller","entity_type":"group","name":"developers","window_seconds":60,"user_max_requests":100}`
	c.call(403, "PUT", "/api/rate-limits/caller:group:developers:60", viewer, devs)
	c.call(403, "GET", "/api/tokens", viewer, "")

	// Definitions.
	c.call(200, "GET", "/api/rate-limits", admin, "")
	resp, _ = c.call(201, "PUT", "/api/rate-limits/caller:group:developers:60", admin, devs)
	if resp.Header.Get("Location") == "" || resp.Header.Get("ETag") != `"1"` {
		t.Errorf("201 headers: Location %q, ETag %q", resp.Header.Get("Location"), resp.Header.Get("ETag"))
	}
	_, raw = c.call(200, "GET", "/api/rate-limits/caller:group:developers:60", admin, "")
	c.call(200, "PUT", "/api/rate-limits/caller:group:developers:60", admin, string(raw), "If-Match", `"1"`) // a GET sent back
	c.call(412, "PUT", "/api/rate-limits/caller:group:developers:60", admin, devs, "If-Match", `"99"`)
	c.call(200, "GET", "/api/rate-limits/caller:group:developers:60", viewer, "")
	_, raw = c.call(400, "PUT", "/api/rate-limits/caller:group:interns:60", admin,
		`{"axis":"caller","entity_type":"group","name":"interns","window_seconds":60,"user_max_requests":3}`)
	if p := decodeJSON(t, raw); p["errors"] == nil || !strings.Contains(p["detail"].(string), "floor") {
		t.Errorf("floor refusal: %s", raw)
	}
	c.call(400, "PUT", "/api/rate-limits/caller:group:developers:60", admin, `{"axis":"caller",`)
	c.call(400, "PUT", "/api/rate-limits/caller:group:developers:60", admin,
		`{"axis":"caller","entity_type":"group","name":"developers","window_seconds":60,"user_max_request":100}`)
	c.call(413, "PUT", "/api/rate-limits/caller:group:developers:60", admin,
		`{"description":"`+strings.Repeat("x", 1<<20)+`"}`)
	c.call(404, "GET", "/api/rate-limits/caller:group:nobody:60", admin, "")

	// An id with '/' in it, percent-encoded and raw.
	const agent = `{"axis":"target","entity_type":"a2a_agent","name":"/booking-agent","window_seconds":60,"max_requests":500}`
	c.call(201, "PUT", "/api/rate-limits/target:a2a_agent:%2Fbooking-agent:60", admin, agent)
	c.call(200, "GET", "/api/rate-limits/target:a2a_agent:%2Fbooking-agent:60", admin, "")
	c.call(200, "GET", "/api/rate-limits/target:a2a_agent:/booking-agent:60", admin, "")
	c.call(200, "POST", "/api/rate-limits-enabled/target:a2a_agent:%2Fbooking-agent:60?enabled=false", admin, "")
	c.call(400, "POST", "/api/rate-limits-enabled/target:a2a_agent:%2Fbooking-agent:60?enabled=maybe", admin, "")

	// Dry runs: a create (before is null), an update and a delete (after is null).
	_, raw = c.call(200, "PUT", "/api/rate-limits/caller:group:qa:60?dry_run=true", admin,
		`{"axis":"caller","entity_type":"group","name":"qa","window_seconds":60,"user_max_requests":50}`)
	if r := decodeJSON(t, raw); r["dry_run"] != true || r["action"] != "create" || r["before"] != nil {
		t.Errorf("dry-run create report: %s", raw)
	}
	c.call(404, "GET", "/api/rate-limits/caller:group:qa:60", admin, "")
	c.call(200, "POST", "/api/rate-limits-enabled/target:a2a_agent:%2Fbooking-agent:60?enabled=true&dry_run=true", admin, "")
	_, raw = c.call(200, "DELETE", "/api/rate-limits/target:a2a_agent:%2Fbooking-agent:60?dry_run=true", admin, "")
	if r := decodeJSON(t, raw); r["action"] != "delete" || r["after"] != nil {
		t.Errorf("dry-run delete report: %s", raw)
	}
	c.call(409, "DELETE", "/api/rate-limits/quarantine:group:quarantine-callers:1", admin, "")
	c.call(200, "DELETE", "/api/rate-limits/target:a2a_agent:%2Fbooking-agent:60", admin, "")
	c.call(404, "DELETE", "/api/rate-limits/target:a2a_agent:%2Fbooking-agent:60", admin, "")
	c.call(200, "GET", "/api/rate-limits?limit=1", admin, "")
	c.call(200, "GET", "/api/rate-limits?axis=caller&enabled=true", admin, "")
	c.call(400, "GET", "/api/rate-limits?limit=0", admin, "")

	// Memberships.
	const alice = `{"subject_type":"user","subject":"alice","groups":["developers"]}`
	resp, _ = c.call(201, "PUT", "/api/rate-limit-memberships/user:alice", admin, alice)
	if resp.Header.Get("ETag") == "" {
		t.Error("membership 201 without ETag")
	}
	c.call(200, "PUT", "/api/rate-limit-memberships/user:alice", admin, alice)
	c.call(200, "PUT", "/api/rate-limit-memberships/user:alice?dry_run=true", admin,
		`{"subject_type":"user","subject":"alice","groups":["developers","qa"]}`)
	c.call(400, "PUT", "/api/rate-limit-memberships/user:bob", admin, alice)
	c.call(200, "GET", "/api/rate-limit-memberships/user:alice", admin, "")
	c.call(404, "GET", "/api/rate-limit-memberships/user:nobody", admin, "")
	c.call(200, "GET", "/api/rate-limit-memberships", admin, "")
	c.call(200, "GET", "/api/rate-limit-memberships?group=developers&limit=1", admin, "")
	c.call(200, "GET", "/api/rate-limits-status?username=alice", admin, "")
	c.call(200, "GET", "/api/rate-limits-status?identity=developers&entity_type=mcp_server&name=mcpgw", viewer, "")

	// Quarantine.
	c.call(201, "POST", "/api/rate-limit-quarantine/user:mallory", admin, `{"reason":"scraping","expires_in_seconds":3600}`)
	c.call(200, "POST", "/api/rate-limit-quarantine/user:mallory", admin, `{"reason":"still scraping"}`)
	c.call(201, "POST", "/api/rate-limit-quarantine/server:%2Fflaky", admin, "")
	c.call(200, "POST", "/api/rate-limit-quarantine/user:alice?dry_run=true", admin, "")
	c.call(400, "POST", "/api/rate-limit-quarantine/user:mallory", admin, `{"expires_in_seconds":-1}`)
	_, raw = c.call(200, "GET", "/api/rate-limit-quarantine", admin, "")
	if q := decodeJSON(t, raw); len(q["callers"].([]any)) != 1 || len(q["targets"].([]any)) != 1 {
		t.Errorf("quarantine list: %s", raw)
	}
	c.call(200, "DELETE", "/api/rate-limit-quarantine/server:%2Fflaky?dry_run=true", admin, "")
	_, raw = c.call(200, "DELETE", "/api/rate-limit-quarantine/server:%2Fflaky", admin, "")
	if r := decodeJSON(t, raw); r["removed"] != true {
		t.Errorf("unquarantine: %s", raw)
	}
	_, raw = c.call(200, "DELETE", "/api/rate-limit-quarantine/server:%2Fflaky", admin, "")
	if r := decodeJSON(t, raw); r["removed"] != false {
		t.Errorf("second unquarantine: %s", raw)
	}

	// Administrators.
	resp, _ = c.call(201, "PUT", "/api/rate-limit-admins/user:carol", admin, `{"note":"on call"}`)
	if resp.Header.Get("Location") == "" {
		t.Error("admin 201 without Location")
	}
	c.call(200, "PUT", "/api/rate-limit-admins/user:carol", admin, `{"subject_type":"user","subject":"carol","note":"on call"}`)
	c.call(200, "PUT", "/api/rate-limit-admins/user:dan?dry_run=true", admin, "")
	c.call(400, "PUT", "/api/rate-limit-admins/server:mcpgw", admin, "")
	c.call(403, "POST", "/api/rate-limit-quarantine/user:carol", admin, "")
	c.call(403, "PUT", "/api/rate-limit-memberships/user:carol", admin,
		`{"subject_type":"user","subject":"carol","groups":["quarantine-callers"]}`)
	c.call(409, "PUT", "/api/rate-limit-admins/user:mallory", admin, "")
	c.call(200, "GET", "/api/rate-limit-admins", viewer, "")
	c.call(200, "DELETE", "/api/rate-limit-admins/user:carol", admin, "")
	c.call(404, "DELETE", "/api/rate-limit-admins/user:carol", admin, "")

	// Tokens.
	_, raw = c.call(201, "POST", "/api/tokens", admin, `{"name":"ci","role":"viewer","expires_in_seconds":3600}`)
	if tok := decodeJSON(t, raw); tok["token"] == nil || tok["token"] == "" {
		t.Errorf("created token without secret: %s", raw)
	}
	c.call(409, "POST", "/api/tokens", admin, `{"name":"ci","role":"viewer"}`)
	c.call(400, "POST", "/api/tokens", admin, `{"name":"","role":"root"}`)
	c.call(200, "POST", "/api/tokens?dry_run=true", admin, `{"name":"ci2","role":"enforcer"}`)
	c.call(200, "GET", "/api/tokens", admin, "")
	c.call(200, "DELETE", "/api/tokens/ci?dry_run=true", admin, "")
	c.call(200, "DELETE", "/api/tokens/ci", admin, "")
	c.call(404, "DELETE", "/api/tokens/ci", admin, "")

	// Memberships and audit last, so the log has rows of every kind.
	c.call(200, "DELETE", "/api/rate-limit-memberships/user:alice?dry_run=true", admin, "")
	c.call(412, "DELETE", "/api/rate-limit-memberships/user:alice", admin, "", "If-Match", `"42"`)
	c.call(200, "DELETE", "/api/rate-limit-memberships/user:alice", admin, "")
	c.call(404, "DELETE", "/api/rate-limit-memberships/user:alice", admin, "")
	_, raw = c.call(200, "GET", "/api/audit?limit=2", admin, "")
	if p := decodeJSON(t, raw); p["next_cursor"] == nil {
		t.Errorf("audit page without next_cursor: %s", raw)
	}
	c.call(200, "GET", "/api/audit", viewer, "")
	c.call(200, "GET", "/api/audit?resource=definition&after=1", admin, "")
	c.call(400, "GET", "/api/audit?since=yesterday", admin, "")

	seen := contract.Seen()
	t.Logf("contract checked %d method/path/status combinations:\n%s", len(seen), strings.Join(seen, "\n"))
	for _, want := range []string{"GET /api/rate-limits/{id} 200", "PUT /api/rate-limits/{id} 201", "GET /api/audit 200"} {
		if !slices.Contains(seen, want) {
			t.Errorf("Seen() lacks %q", want)
		}
	}
}

// TestContractReportsMismatches checks the checker itself: a path the
// document does not have fails the test that made the call.
func TestContractReportsMismatches(t *testing.T) {
	env := apitest.Start(t, api.Config{})
	inner := &recordingTB{TB: t}
	contract := apitest.NewContract(inner)
	client := &http.Client{Transport: contract.Transport(nil)}
	req, _ := http.NewRequest("GET", env.URL+"/api/no-such-route", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || len(b) == 0 {
		t.Errorf("response not returned intact: %d %s", resp.StatusCode, b)
	}
	if len(inner.errors) != 1 || !strings.Contains(inner.errors[0], "/api/no-such-route") {
		t.Errorf("errors = %q, want one naming the path", inner.errors)
	}
}

// recordingTB records Errorf calls instead of failing.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
