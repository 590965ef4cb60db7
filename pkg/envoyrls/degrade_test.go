package envoyrls_test

import (
	"context"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDegradedMarksTheAnswer: with the fail policy degrade and the
// counters broken, a descriptor is decided on this replica's share (2 of
// 4, for 2 replicas), and every answer so decided, OK or OVER_LIMIT,
// carries x-rlctl-degraded: 1 in its response headers, without
// Options.Headers.
func TestDegradedMarksTheAnswer(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{EventsRetention: -1})
	now := func() time.Time { return testNow }
	fb, err := degrade.New(degrade.Options{Counters: postgres.NewCounterStore(env.Store.Pool()), Replicas: func() int { return 2 },
		Now: now, ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fb.Close)
	enf, err := postgres.New(context.Background(), env.Store.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: time.Minute,
		Now: now, FailPolicy: ratelimit.FailPolicyDegrade, Fallback: fb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enf.Close)
	admin, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{env: env, admin: admin, enf: enf, rls: rlsv3.NewRateLimitServiceClient(serve(t, envoyrls.Options{Enforcer: enf, Now: now}))}
	h.define(t, desc("rl", 3600, 4, "user", ""))
	if r := h.ask(t, "rl", rd("user", "alice")); codesOf(r) != "OK OK" || hasHeader(r, envoyrls.DegradedHeader, "1") {
		t.Fatalf("with the counters working: %s, headers %v", codesOf(r), r.ResponseHeadersToAdd)
	}
	if _, err := env.Store.Pool().Exec(t.Context(), `alter function rl_take_024 rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"OK OK", "OK OK", "OVER_LIMIT OVER_LIMIT"} {
		if r := h.ask(t, "rl", rd("user", "alice")); codesOf(r) != want || !hasHeader(r, envoyrls.DegradedHeader, "1") {
			t.Errorf("call %d, counters broken: %s, headers %v; want %s marked %s: 1", i+1, codesOf(r), r.ResponseHeadersToAdd, want, envoyrls.DegradedHeader)
		}
	}
}
