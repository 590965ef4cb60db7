package main

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/client"
	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeCountsThroughSentinel: with RLAPI_COUNTERS_URL a
// redis+sentinel:// URL of a throwaway set (a master, a replica and three
// sentinels), rlapi serves, is ready, and POST /api/check counts on the
// master the sentinels name (a limit of 1 admits one call, then
// throttles); GET /api/server says the counters are in Redis found
// through Sentinel, with the master set and the address without the
// sentinels' password. A master name the sentinels do not monitor stops
// serve with a usage error naming it.
func TestServeCountsThroughSentinel(t *testing.T) {
	t.Parallel()
	_, sentinelURL := redistest.Scratch(t, "sentinel")
	dsn := pgtest.NewMigratedDatabase(t)
	name := "sentinel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	one := 1
	// A sentinel_password the sentinels ignore (they have none): it is
	// only there to be hidden.
	withPassword := sentinelURL + "?sentinel_password=hunter2hunter2"
	srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: name, WindowSeconds: 3600,
		MaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce}, map[string]string{"RLAPI_COUNTERS_URL": withPassword})
	resp, err := http.Get("http://" + srv.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d, want 200 (the master the sentinels name answers)", resp.StatusCode)
	}
	check := `{"username": "alice", "target_type": "mcp_server", "target_name": "` + name + `"}`
	if code, m := srv.do(t, "POST", "/api/check", check); code != 200 || m["allowed"] != true {
		t.Fatalf("first check: %d %v, want allowed", code, m)
	}
	if code, m := srv.do(t, "POST", "/api/check", check); code != 429 && (code != 200 || m["allowed"] != false) || m["reason"] != "throttled" {
		t.Fatalf("second check on a limit of 1: %d %v, want throttled (counted in Redis)", code, m)
	}
	c, err := client.New("http://"+srv.addr, client.Options{Token: srv.token})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.ServerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cs := info.CounterStore
	if cs.Backend != "redis" || cs.Cluster || cs.Sentinel != "rlctl" || !cs.Reachable || cs.Address != redisstore.Redact(withPassword) ||
		strings.Contains(cs.Address, "hunter2") {
		t.Errorf("counter store %+v: want the reachable Redis of master set rlctl at %s", cs, redisstore.Redact(withPassword))
	}
	if strings.Contains(srv.stderr.String(), "hunter2") {
		t.Errorf("rlapi's log shows the sentinels' password:\n%s", srv.stderr.String())
	}

	su, err := url.Parse(sentinelURL)
	if err != nil {
		t.Fatal(err)
	}
	unknown := "redis+sentinel://" + su.Host + "/nosuchmaster"
	var out, errOut syncBuffer
	code := run(t.Context(), []string{"serve", "--addr", freeAddr(t)}, env(map[string]string{"DATABASE_URL": dsn, "RLAPI_COUNTERS_URL": unknown}), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `no master named "nosuchmaster"`) || !strings.Contains(errOut.String(), "--counters-url (RLAPI_COUNTERS_URL)") {
		t.Errorf("serve --counters-url %s: exit %d, stderr:\n%s\nwant 2 and a usage error naming the master name", unknown, code, errOut.String())
	}
}

// TestServeRefusesASentinelURLWithoutMasterName: a redis+sentinel:// URL
// that names no master set is a usage error (exit 2) saying so, before
// anything is opened, and the password stays hidden.
func TestServeRefusesASentinelURLWithoutMasterName(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis+sentinel://u:hunter2@127.0.0.1:26379", "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/?sentinel_password=hunter2"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve"}, env(map[string]string{"RLAPI_COUNTERS_URL": u}), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--counters-url") || !strings.Contains(errOut.String(), "no master name") ||
			strings.Contains(errOut.String(), "hunter2") {
			t.Errorf("RLAPI_COUNTERS_URL=%s: exit %d, %q; want a usage error naming --counters-url and the missing master name, without the password", u, code, errOut.String())
		}
	}
}
