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
// in rl_events. With RLAPI_EVENTS_ROWS_PER_MINUTE (and _PER_FLUSH) at 1,
// the second subject's throttles are the minute's summary row.
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
		for _, name := range []string{"busy", "busier"} {
			if _, err := q.PutDefinition(ctx, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: name, WindowSeconds: 3600,
				MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce}, store.Write{Actor: "test"}); err != nil {
				return err
			}
		}
		return nil
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
		done <- run(sctx, []string{"serve", "--addr", addr}, env(map[string]string{"DATABASE_URL": dsn, "RLAPI_EVENTS_LOG": logFile,
			"RLAPI_EVENTS_ROWS_PER_MINUTE": "1", "RLAPI_EVENTS_ROWS_PER_FLUSH": "1"}), &stdout, &stderr)
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
	for _, target := range []string{"busy", "busier"} {
		for range 4 {
			call("POST", "/api/check", gw, `{"username":"alice","target_type":"mcp_server","target_name":"`+target+`"}`).Body.Close()
		}
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
	bySubject := map[string]map[string]any{}
	for _, l := range lines {
		bySubject[l["subject"].(string)] = l
	}
	busy, more := bySubject["mcp_server:busy"], bySubject[ratelimit.EventSubjectOverflow]
	if len(lines) != 2 || busy["count"] != float64(3) || busy["kind"] != "rate_limit_exceeded" ||
		more["count"] != float64(3) || more["more_subjects"] != float64(1) || more["definition_id"] != "target:mcp_server:busier:3600" {
		t.Errorf("events log: %s, want a line of 3 throttles of mcp_server:busy and the summary of mcp_server:busier's", b)
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{})
	if err != nil || len(evs) != 2 || evs[0].Count != 3 || evs[1].Count != 3 {
		t.Errorf("rows %+v %v, want two counting 3", evs, err)
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
		{[]string{"serve", "--events-rows-per-minute", "0"}, nil, "--events-rows-per-minute (RLAPI_EVENTS_ROWS_PER_MINUTE): must be between 1 and 100000 (got 0)"},
		{[]string{"serve"}, map[string]string{"RLAPI_EVENTS_ROWS_PER_MINUTE": "200000"}, "--events-rows-per-minute (RLAPI_EVENTS_ROWS_PER_MINUTE): must be between 1 and 100000 (got 200000)"},
		{[]string{"serve", "--events-rows-per-flush", "2000"}, nil, "--events-rows-per-flush (RLAPI_EVENTS_ROWS_PER_FLUSH): must be between 1 and --events-rows-per-minute, 1000 (got 2000)"},
		{[]string{"serve"}, map[string]string{"RLAPI_EVENTS_ROWS_PER_FLUSH": "many"}, "RLAPI_EVENTS_ROWS_PER_FLUSH"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), c.args, env(c.env), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit %d %q, want 2 naming %q", c.args, c.env, code, errOut.String(), c.want)
		}
	}
}
