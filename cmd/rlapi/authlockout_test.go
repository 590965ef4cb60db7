package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
)

// The dev loopback locked out by five mistyped tokens (the admin's valid
// token refused too) is served again as soon as `rlapi auth-lockout
// lift 127.0.0.1` has run against the database, without a restart, and
// the lift is in the audit log. Bad input exits 2 and lifts nothing.
func TestAuthLockoutLiftUnlocksTheLoopback(t *testing.T) {
	t.Parallel()
	srv := apitest.Start(t, api.Config{})
	admin, err := client.New(srv.URL, client.Options{Token: srv.AdminToken, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		bad, _ := client.New(srv.URL, client.Options{Token: "rlt_typo", Retries: -1})
		_, _ = bad.ListDefinitions(t.Context(), client.DefinitionFilter{})
	}
	var apiErr *client.APIError
	if _, err := admin.ListDefinitions(t.Context(), client.DefinitionFilter{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the admin after five typos: %v, want 429", err)
	}
	dsn := srv.Store.Pool().Config().ConnString()
	lift := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"auth-lockout", "lift"}, args...), env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, bad := range [][]string{{"localhost"}, {"--scope", "ssh", "127.0.0.1"}, {}} {
		if code, _, errOut := lift(bad...); code != 2 {
			t.Errorf("lift %q: exit %d (%s), want 2", bad, code, errOut)
		}
	}
	code, out, errOut := lift("127.0.0.1")
	if code != 0 || !strings.Contains(out, "lifted the auth lockout of 127.0.0.1 (rlapi)") {
		t.Fatalf("lift: exit %d, %q %q", code, out, errOut)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := admin.ListDefinitions(t.Context(), client.DefinitionFilter{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the lift the admin still gets: %v", err)
		}
	}
	page, err := admin.ListAudit(t.Context(), client.AuditFilter{Resource: "auth-lockout"})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Actor != "rlapi auth-lockout lift" || page.Entries[0].ResourceID != "127.0.0.1" {
		t.Errorf("audit: %+v, %v; want one lift of 127.0.0.1 by 'rlapi auth-lockout lift'", page, err)
	}
	if code, _, errOut := lift("127.0.0.1"); code != 1 || !strings.Contains(errOut, "nothing to lift") {
		t.Errorf("second lift: exit %d, %q; want 1, nothing to lift", code, errOut)
	}
}
