package api_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// POST /api/check has no request deadline of its own: its counters' round
// trip is bounded by the backend timeout. With a counter store that never
// answers, the call is still decided, by the fail policy (open here), and
// the store's later calls count again once it answers.
func TestCheckWithAStuckCounterStoreFollowsTheFailPolicy(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	counters := enforcetest.Hanging(memory.New())
	enf, err := enforce.New(context.Background(), enforce.Options{Counters: counters,
		Source: enforcetest.StaticSource(enforcetest.PolicyState(false)), SweepInterval: -1, BackendTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enf.Close)
	srv := api.New(st, api.Config{BackendTimeout: 5 * time.Second}, api.Opts{Enforcer: enf, Counters: postgres.NewCounterStore(st.Pool())})
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
	gw, err := client.New(env.URL, client.Options{Token: env.Token(t, "gateway", "enforcer"), Retries: -1, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	call := client.CheckRequest{Username: "u", TargetType: "mcp_server", TargetName: "s"}
	res, err := gw.Check(context.Background(), call)
	if err != nil {
		t.Fatalf("check with the store stuck: %v (want a fail-open decision, not a failed request)", err)
	}
	if !res.Allowed || res.Reason != client.ReasonFailOpen {
		t.Fatalf("check with the store stuck: allowed %v, reason %s; want allowed, fail-open", res.Allowed, res.Reason)
	}
	counters.Release()
	res, err = gw.Check(context.Background(), call)
	if err != nil || !res.Allowed || res.Reason != client.ReasonAllowed || res.Remaining != 99 {
		t.Fatalf("check once the store answers: %+v, %v; want allowed by its counter with 99 left", res, err)
	}
}
