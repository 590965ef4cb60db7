package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeWritesTheEventsLog: with RLAPI_EVENTS_LOG set, the throttles
// rlapi decides through POST /api/check are one JSON line per aggregated
// event in that file (written at the latest when rlapi stops), and rows
// in rl_events.
func TestServeWritesTheEventsLog(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	limit := 1
	if err := st.InTx(ctx, func(q *store.Queries) error {
		_, err := q.PutDefinition(ctx, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "busy", WindowSeconds: 3600,
			MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce}, store.Write{Actor: "test"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok := func(role string) string {
		file := filepath.Join(dir, role+".token")
		var out, errOut bytes.Buffer
		if code := run(ctx, []string{"token", "create", "--name", role, "--role", role, "--output-file", file}, env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut); code != 0 {
			t.Fatalf("token create: %d %s", code, errOut.String())
		}
		b, _ := os.ReadFile(file)
		return strings.TrimSpace(string(b))
	}
	gw := tok("enforcer")
	logFile := filepath.Join(dir, "events.jsonl")

	addr := freeAddr(t)
	sctx, stop := context.WithCancel(ctx)
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(sctx, []string{"serve", "--addr", addr}, env(map[string]string{"DATABASE_URL": dsn, "RLAPI_EVENTS_LOG": logFile}), &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second) // bounds a hang only
	for !strings.Contains(stdout.String(), "rlapi listening") {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("serve never listened: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	call := func(method, path, token, body string) *http.Response {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for range 4 {
		call("POST", "/api/check", gw, `{"username":"alice","target_type":"mcp_server","target_name":"busy"}`).Body.Close()
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 1 || lines[0]["subject"] != "mcp_server:busy" || lines[0]["count"] != float64(3) || lines[0]["kind"] != "rate_limit_exceeded" {
		t.Errorf("events log: %s, want one line of 3 throttles of mcp_server:busy", b)
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{})
	if err != nil || len(evs) != 1 || evs[0].Count != 3 {
		t.Errorf("rows %+v %v, want one counting 3", evs, err)
	}
}

func TestEventsFlagErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--events-retention", "30s"}, nil, "--events-retention: must be at least 1m (got 30s)"},
		{[]string{"serve", "--events-retention", "-1h"}, nil, "--events-retention: must be at least 1m"},
		{[]string{"serve"}, map[string]string{"RLAPI_EVENTS_RETENTION": "a week"}, "RLAPI_EVENTS_RETENTION"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), c.args, env(c.env), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit %d %q, want 2 naming %q", c.args, c.env, code, errOut.String(), c.want)
		}
	}
}
