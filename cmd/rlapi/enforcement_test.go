package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// serveUntilReady runs rlapi serve with vars until the test stops it (the
// returned function), once /readyz answers.
func serveUntilReady(t *testing.T, vars map[string]string, args ...string) (stop func() string) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", addr}, args...), env(vars), &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second) // bounds a hang only
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server never answered: %v; stderr: %s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() string {
		cancel()
		<-done
		return stderr.String()
	}
}

// TestEnforcementStartDefault: RLAPI_ENFORCEMENT (or the reference's
// RATE_LIMITING_ENABLED) sets the master switch only while nothing has
// set it; an operator's switch survives restarts with another default.
func TestEnforcementStartDefault(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	st, err := store.Open(context.Background(), dsn, store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()

	log := serveUntilReady(t, map[string]string{"DATABASE_URL": dsn, "RATE_LIMITING_ENABLED": "false"})()
	e, err := st.GetEnforcement(ctx)
	if err != nil || e.Enabled || e.UpdatedBy != "rlapi serve" || !strings.Contains(e.Reason, "RATE_LIMITING_ENABLED") {
		t.Fatalf("after the first start: %+v, %v; log: %s", e, err, log)
	}
	if !strings.Contains(log, "enforcement is OFF") {
		t.Errorf("start-up log does not say enforcement is off:\n%s", log)
	}
	audit, err := st.ListAudit(ctx, store.AuditFilter{Resource: "enforcement"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "rlapi serve" || audit[0].Action != "disable" {
		t.Errorf("audit of the seed: %+v, %v", audit, err)
	}

	// An operator switches it on; a restart with RLAPI_ENFORCEMENT=off keeps it on.
	if err := st.InTx(ctx, func(q *store.Queries) error {
		_, _, _, err := q.SetEnforcement(ctx, true, "incident over", "ops", 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	log = serveUntilReady(t, map[string]string{"DATABASE_URL": dsn, "RLAPI_ENFORCEMENT": "off"})()
	if e, _ = st.GetEnforcement(ctx); !e.Enabled || e.UpdatedBy != "ops" {
		t.Errorf("a restart overrode the operator's switch: %+v", e)
	}
	if !strings.Contains(log, "start-up default ignored") {
		t.Errorf("the ignored default is not logged:\n%s", log)
	}
}

func TestEnforcementFlagRefusesNonsense(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"serve", "--enforcement", "maybe"}, env(nil), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `--enforcement="maybe": must be on or off`) {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	code = run(context.Background(), []string{"serve"}, env(map[string]string{"RLAPI_ENFORCEMENT": "sometimes"}), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `RLAPI_ENFORCEMENT="sometimes"`) {
		t.Errorf("env: exit %d, stderr %q", code, errOut.String())
	}
}
