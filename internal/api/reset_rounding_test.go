package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A token bucket's reset falls between seconds: POST /api/check's body and
// its X-RateLimit-Reset header round it the same way (up: a client that
// waits until then never arrives before the bucket is full).
func TestCheckResetAgreesWithItsHeader(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "tb", WindowSeconds: 7,
		MaxRequests: ptr(3), Algorithm: ratelimit.AlgorithmTokenBucket, Enabled: true}
	if _, err := admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	tok := env.Token(t, "gw", ratelimit.RoleEnforcer)
	body := `{"username":"alice","target_type":"mcp_server","target_name":"tb"}`
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := send(t, contractHTTPClient(t), env.URL, call{method: "POST", path: "/api/check", token: tok, body: body})
		m := a.json(t)
		if m["limit"] == float64(0) {
			if time.Now().After(deadline) {
				t.Fatalf("the definition never applied: %s", a.body)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		header, err := strconv.ParseInt(a.header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			t.Fatalf("X-RateLimit-Reset %q: %v", a.header.Get("X-RateLimit-Reset"), err)
		}
		if got := int64(m["reset"].(float64)); got != header {
			t.Fatalf("body reset %d, header X-RateLimit-Reset %d: want the same second", got, header)
		}
		return
	}
}
