package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestEveryServeFlagHasItsEnvironmentVariable: the usage promises that
// every flag has an environment fallback named in its help. Each serve
// flag's help names one, and setting it changes the flag's default.
func TestEveryServeFlagHasItsEnvironmentVariable(t *testing.T) {
	t.Parallel()
	// What each variable is set to, and the default -h then shows.
	vars := map[string][2]string{
		"RLAPI_ADDR":                    {"127.0.0.9:9999", `"127.0.0.9:9999"`},
		"RLAPI_LOG_LEVEL":               {"debug", `"debug"`},
		"RLAPI_ACCESS_LOG_DECISIONS":    {"true", "true"},
		"RLAPI_USER_FLOOR_PER_MIN":      {"21", "21"},
		"RLAPI_AGENT_FLOOR_PER_MIN":     {"11", "11"},
		"RLAPI_SHUTDOWN_TIMEOUT":        {"7s", "7s"},
		"RLAPI_TRUSTED_PROXIES":         {"10.0.0.0/8", `"10.0.0.0/8"`},
		"RLAPI_AUTH_MAX_FAILURES":       {"9", "9"},
		"RLAPI_AUTH_WINDOW":             {"2m", "2m0s"},
		"RLAPI_AUTH_LOCKOUT":            {"9m", "9m0s"},
		"RLAPI_FAIL_CLOSED":             {"true", "true"},
		"RLAPI_FAIL_POLICY":             {"degrade", `"degrade"`},
		"RLAPI_REPLICAS":                {"3", "3"},
		"RLAPI_QUARANTINE_FAIL_CLOSED":  {"true", "true"},
		"RLAPI_BACKEND_TIMEOUT":         {"300ms", "300ms"},
		"RLAPI_CACHE_TTL":               {"45s", "45s"},
		"RLAPI_ENFORCEMENT":             {"off", `"off"`},
		"RLAPI_TOKEN_CACHE_TTL":         {"3s", "3s"},
		"RLAPI_DECISION_MAX_CONNS":      {"6", "6"},
		"RLAPI_MAX_CLIENT_CONNS":        {"100", "100"},
		"RLAPI_CLIENT_IP_HEADER":        {"Forwarded", `"Forwarded"`},
		"RLAPI_IPV6_PREFIX":             {"56", "56"},
		"RLAPI_EVENTS_RETENTION":        {"720h", "720h0m0s"},
		"RLAPI_EVENTS_LOG":              {"/var/log/rlapi-events.jsonl", `"/var/log/rlapi-events.jsonl"`},
		"RLAPI_EVENTS_ROWS_PER_FLUSH":   {"250", "250"},
		"RLAPI_EVENTS_ROWS_PER_MINUTE":  {"5000", "5000"},
		"RLAPI_GRPC_ADDR":               {"127.0.0.9:9998", `"127.0.0.9:9998"`},
		"RLAPI_GRPC_TRUSTED_CLIENTS":    {"10.1.0.0/16", `"10.1.0.0/16"`},
		"RLAPI_GRPC_TLS_CERT":           {"/etc/rl/cert.pem", `"/etc/rl/cert.pem"`},
		"RLAPI_GRPC_TLS_KEY":            {"/etc/rl/key.pem", `"/etc/rl/key.pem"`},
		"RLAPI_GRPC_CLIENT_CA":          {"/etc/rl/ca.pem", `"/etc/rl/ca.pem"`},
		"RLAPI_GRPC_HEADERS":            {"true", "true"},
		"RLAPI_GRPC_COUNT_MODE":         {"every-descriptor", `"every-descriptor"`},
		"RLAPI_GRPC_MAX_CONNS":          {"77", "77"},
		"RLAPI_GRPC_MAX_STREAMS":        {"33", "33"},
		"RLAPI_COUNTERS_ALLOW_EVICTION": {"true", "true"},

		// Failed-credential throttling and escalation lockouts.
		"RLAPI_GATEWAY_AUTH_MAX_FAILURES": {"7", "7"},
		"RLAPI_GATEWAY_AUTH_WINDOW":       {"90s", "1m30s"},
		"RLAPI_GATEWAY_AUTH_LOCKOUT":      {"10m", "10m0s"},
		"RLAPI_LOCKOUT_AFTER":             {"5", "5"},
		"RLAPI_LOCKOUT_WITHIN":            {"10m", "10m0s"},
		"RLAPI_LOCKOUT_DURATION":          {"30m", "30m0s"},
		"RLAPI_MCP_SUFFIXES":              {"mcp", `"mcp"`},
		"RLAPI_A2A_PREFIXES":              {"agents", `"agents"`},

		// Leases for hot keys.
		"RLAPI_LEASE_TIME":     {"2s", "2s"},
		"RLAPI_LEASE_REPLICAS": {"4", "4"},
		"RLAPI_LEASE_HOT_RATE": {"50", "50"},
		"RLAPI_LEASE_KEYS":     {"all", `"all"`},
	}
	// Read on purpose without showing them as defaults: a secret, and the
	// database URL (which may hold a password).
	hidden := map[string]bool{"RLAPI_GATEWAY_SECRET": true, "DATABASE_URL": true, "RLAPI_COUNTERS_URL": true}
	env := map[string]string{}
	for k, v := range vars {
		env[k] = v[0]
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, func(k string) string { return env[k] }, &out, &errOut); code != 0 {
		t.Fatalf("serve -h: exit %d: %s", code, errOut.String())
	}
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	envName := regexp.MustCompile(`\((RLAPI_[A-Z0-9_]+|DATABASE_URL)`)
	lines := strings.Split(errOut.String(), "\n")
	flags := 0
	for i, line := range lines {
		m := flagLine.FindStringSubmatch(line)
		if m == nil || i+1 == len(lines) {
			continue
		}
		flags++
		name, help := m[1], lines[i+1]
		e := envName.FindStringSubmatch(help)
		if e == nil {
			t.Errorf("--%s names no environment variable: %s", name, strings.TrimSpace(help))
			continue
		}
		if hidden[e[1]] {
			continue
		}
		v, ok := vars[e[1]]
		if !ok {
			t.Errorf("--%s: %s is not in this test's table", name, e[1])
			continue
		}
		if !strings.Contains(help, "(default "+v[1]+")") {
			t.Errorf("--%s with %s=%s: help %q does not show it as the default", name, e[1], v[0], strings.TrimSpace(help))
		}
	}
	if flags < 15 {
		t.Errorf("found %d flags in serve -h; has its format changed?\n%s", flags, errOut.String())
	}
	// A bad value is a usage error naming the variable.
	for _, k := range []string{"RLAPI_AUTH_WINDOW", "RLAPI_CACHE_TTL", "RLAPI_AUTH_MAX_FAILURES"} {
		var o, e bytes.Buffer
		code := run(context.Background(), []string{"serve"}, func(v string) string { return map[string]string{k: "soon"}[v] }, &o, &e)
		if code != 2 || !strings.Contains(e.String(), k+`="soon"`) {
			t.Errorf("%s=soon: exit %d, %q", k, code, e.String())
		}
	}
}

// rlapi runs its collector at defaultGOGC unless the operator set GOGC,
// which the runtime has then read and rlapi leaves alone.
func TestGCPercentDefersToGOGC(t *testing.T) {
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	if got, ok := gcPercent(env("")); !ok || got != defaultGOGC {
		t.Errorf("GOGC unset: gcPercent = %d, %v; want %d, true", got, ok, defaultGOGC)
	}
	for _, v := range []string{"100", "off", "50"} {
		if got, ok := gcPercent(env(v)); ok {
			t.Errorf("GOGC=%s: gcPercent = %d, true; want it left to the runtime", v, got)
		}
	}
}

// TestFlagErrorsAreOneLine: a flag the flag package cannot read is one
// line naming the flag, its environment variable and the rule, as a bad
// environment value is, without the whole usage after it; -h still
// prints the usage.
func TestFlagErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--lease-time", "1sec"}, `rlapi: usage: --lease-time (RLAPI_LEASE_TIME): must be a duration such as 30s or 5m (got "1sec")`},
		{[]string{"serve", "--max-client-conns", "many"}, `rlapi: usage: --max-client-conns (RLAPI_MAX_CLIENT_CONNS): must be a whole number (got "many")`},
		{[]string{"serve", "--fail-closed=maybe"}, `rlapi: usage: --fail-closed (RLAPI_FAIL_CLOSED): takes no value, or =true or =false (got "maybe")`},
		{[]string{"serve", "--lease-time"}, `rlapi: usage: --lease-time needs a value`},
		{[]string{"serve", "--nope"}, `rlapi: usage: unknown flag --nope ('rlapi serve -h' lists the flags)`},
		{[]string{"migrate", "--nope"}, `rlapi: usage: unknown flag --nope ('rlapi migrate -h' lists the flags)`},
		{[]string{"serve", "--trusted-proxies", "10.0.0.1,proxy.internal"},
			`rlapi: usage: --trusted-proxies (RLAPI_TRUSTED_PROXIES): "proxy.internal" is not an address or a CIDR such as 10.0.0.0/8 or 2001:db8::/32`},
		{[]string{"serve", "--grpc-addr", "127.0.0.1:0", "--grpc-trusted-clients", "10.0.0.0/33"},
			`rlapi: usage: --grpc-trusted-clients (RLAPI_GRPC_TRUSTED_CLIENTS): "10.0.0.0/33": the prefix length after '/' must be a number from 0 to 32 for an IPv4 address (got "33")`},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, func(string) string { return "" }, &out, &errOut)
		if code != 2 || errOut.String() != c.want+"\n" {
			t.Errorf("rlapi %s: exit %d, stderr %q\nwant exit 2, %q", strings.Join(c.args, " "), code, errOut.String(), c.want+"\n")
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, &out, &errOut); code != 0 ||
		!strings.HasPrefix(errOut.String(), "Usage of rlapi serve:\n") || !strings.Contains(errOut.String(), "-lease-time duration") {
		t.Errorf("serve -h: exit %d, stderr %q", code, errOut.String())
	}
}
