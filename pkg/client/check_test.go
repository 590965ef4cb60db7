package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestCheckSendsTheCallAndReadsTheDecision(t *testing.T) {
	t.Parallel()
	var method, path, body, auth string
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, path, body, auth = r.Method, r.URL.Path, string(b), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"allowed":false,"reason":"throttled","limit":2,"remaining":0,"reset":1772409660,"retry_after":40,
			"gates":[{"definition_id":"target:mcp_server:srv:60","axis":"target","entity_type":"mcp_server","window_seconds":60,
			"limit":2,"count":2,"remaining":0,"reset":1772409660,"shadow":false}]}`)
	}), Options{Token: "rlt_gateway"})

	res, err := c.Check(context.Background(), CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "srv", Cost: 2})
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodPost || path != "/api/check" || auth != "Bearer rlt_gateway" {
		t.Errorf("sent %s %s with %q", method, path, auth)
	}
	if want := `{"username":"alice","target_type":"mcp_server","target_name":"srv","cost":2}`; body != want {
		t.Errorf("body %s, want %s", body, want)
	}
	if res.Allowed || res.Reason != ReasonThrottled || res.Limit != 2 || res.RetryAfterDuration() != 40*time.Second ||
		!res.ResetTime().Equal(time.Date(2026, 3, 2, 0, 1, 0, 0, time.UTC)) || len(res.Gates) != 1 ||
		res.Gates[0].DefinitionID != "target:mcp_server:srv:60" || res.Gates[0].Count != 2 {
		t.Errorf("result = %+v", res)
	}
	if (CheckResult{}).ResetTime() != (time.Time{}) {
		t.Error("a result without gates has a reset time")
	}
}

func TestCheckIsNeverRetried(t *testing.T) {
	t.Parallel()
	var calls counter
	c, sl, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.inc()
		writeProblem(w, http.StatusServiceUnavailable, "this rlapi serves the management API only")
	}), Options{Retries: 5})
	_, err := c.Check(context.Background(), CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "srv"})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	if calls.get() != 1 || len(sl.got()) != 0 {
		t.Errorf("%d calls, %d sleeps: a check must not be retried (it would count twice)", calls.get(), len(sl.got()))
	}
}
