package envoyrls_test

// The worked examples of the Envoy ratelimit service's README
// (github.com/envoyproxy/ratelimit, "Configuration", "Examples"): each
// configuration is loaded through `rlctl import envoy-ratelimit --apply`
// and driven with the requests its text describes, asserting the outcome
// it describes. The configurations are the README's, quoted as data.

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// imported starts rlapi and the gRPC service, and imports config through
// rlctl.
func imported(t *testing.T, config string) *harness {
	t.Helper()
	r := clitest.Start(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Must("import", "envoy-ratelimit", path, "--apply")
	h := startOn(t, r.Env, nil)
	h.refresh(t)
	return h
}

// drive sends n requests and returns the codes of the last one, failing
// when an earlier one is not want.
func (h *harness) drive(t *testing.T, n int, want, domain string, ds ...*ratelimitv3.RateLimitDescriptor) {
	t.Helper()
	for i := range n {
		if got := codesOf(h.ask(t, domain, ds...)); got != want {
			t.Fatalf("%s request %d of %d: %s, want %s", domain, i+1, n, got, want)
		}
	}
}

func TestReadmeExample1(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`)
	// 500 requests per second each, on separate counters.
	h.drive(t, 500, "OK OK", "mongo_cps", rd("database", "users"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "mongo_cps", rd("database", "users"))
	h.drive(t, 500, "OK OK", "mongo_cps", rd("database", "default"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "mongo_cps", rd("database", "default"))
}

func TestReadmeExample2(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`)
	// Each number gets 5 marketing messages a day.
	for _, n := range []string{"2061111111", "2062222222"} {
		h.drive(t, 5, "OK OK", "messaging", rd("message_type", "marketing", "to_number", n))
		h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "messaging", rd("message_type", "marketing", "to_number", n))
	}
	// And 100 messages a day to any unique number.
	h.drive(t, 100, "OK OK", "messaging", rd("to_number", "2063333333"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "messaging", rd("to_number", "2063333333"))
	// Both descriptors in one request: the aggregate (logical OR) decides.
	h.drive(t, 5, "OK OK OK", "messaging", rd("message_type", "marketing", "to_number", "2064444444"), rd("to_number", "2064444444"))
	r := h.ask(t, "messaging", rd("message_type", "marketing", "to_number", "2064444444"), rd("to_number", "2064444444"))
	if codesOf(r) != "OVER_LIMIT OVER_LIMIT OK" || r.Statuses[1].LimitRemaining != 95 {
		t.Errorf("sixth marketing message: %s, to_number remaining %d; want OVER_LIMIT by the marketing limit, 95 left on the number", codesOf(r), r.Statuses[1].LimitRemaining)
	}
}

func TestReadmeExample3(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`)
	h.drive(t, 10, "OK OK", "edge_proxy_per_ip", rd("remote_address", "50.0.0.1"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "edge_proxy_per_ip", rd("remote_address", "50.0.0.1"))
	// The most specific match: the listed address gets nothing.
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "edge_proxy_per_ip", rd("remote_address", "50.0.0.5"))
}

func TestReadmeExample4(t *testing.T) {
	t.Parallel()
	req := rd("key", "value", "subkey", "subvalue")
	h := imported(t, `domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`)
	if r := h.ask(t, "example4", req); codesOf(r) != "OK OK" || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("two tuples against one level: %s %v, want no match", codesOf(r), r.Statuses[0].CurrentLimit)
	}
	h = imported(t, `domain: example4
descriptors:
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit:
          requests_per_unit: 300
          unit: second
`)
	if r := h.ask(t, "example4", req); codesOf(r) != "OK OK" || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 300 {
		t.Errorf("two tuples against two levels: %s %v, want the 300/s limit", codesOf(r), r.Statuses[0].CurrentLimit)
	}
}

func TestReadmeExample5(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`)
	for range 200 {
		r := h.ask(t, "internal", rd("ldap", "x"))
		if codesOf(r) != "OK OK" || r.Statuses[0].LimitRemaining != math.MaxUint32 {
			t.Fatalf("ldap: %s remaining %d, want OK with MaxUint32", codesOf(r), r.Statuses[0].LimitRemaining)
		}
	}
	h.drive(t, 100, "OK OK", "internal", rd("azure", "x"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "internal", rd("azure", "x"))
}

func TestReadmeExample6(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`)
	// user-a is never limited, whatever the rate.
	h.drive(t, 30, "OK OK", "example6", rd("service", "auth-service", "user", "user-a"))
	// user-b is limited to 20 a second.
	h.drive(t, 20, "OK OK", "example6", rd("service", "auth-service", "user", "user-b"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example6", rd("service", "auth-service", "user", "user-b"))
}

func TestReadmeExample7(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`)
	one, two := rd("key_1", "value_1", "user", "bkthomps"), rd("key_2", "value_2", "user", "bkthomps")
	// Both: 10 a second, the 5 a second limit replaced and untouched.
	h.drive(t, 10, "OK OK OK", "example7", one, two)
	h.drive(t, 1, "OVER_LIMIT OK OVER_LIMIT", "example7", one, two)
	// (key_1, value_1), (user, bkthomps) alone: its 5 a second, all left.
	h.drive(t, 5, "OK OK", "example7", one)
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example7", one)
}

func TestReadmeExample8(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
`)
	for _, v := range []string{"unspecified_value", "unspecified_value2"} {
		h.drive(t, 10, "OK OK", "example8", rd("key1", v))
		h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example8", rd("key1", v))
	}
	h.drive(t, 20, "OK OK", "example8", rd("key1", "value1"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example8", rd("key1", "value1"))
}

func TestReadmeExample9(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		config  string
		key     string
		match   []string
		noMatch []string
	}{
		{"  - key: key1\n    value: value*\n", "key1", []string{"value1", "value2", "valueXYZ"}, []string{"valu"}},
		{"  - key: path\n    value: /api/*/action\n", "path", []string{"/api/123/action", "/api/user-id/action"}, []string{"/api/123/other"}},
		{"  - key: route\n    value: /api/*/resource/*/action\n", "route", []string{"/api/v1/resource/123/action", "/api/v2/resource/456/action"}, []string{"/api/v1/resource/123"}},
	} {
		h := imported(t, "domain: example9\ndescriptors:\n"+tt.config+"    rate_limit:\n      unit: minute\n      requests_per_unit: 20\n")
		for _, v := range tt.match {
			if r := h.ask(t, "example9", rd(tt.key, v)); r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 20 {
				t.Errorf("%s=%s: limit %v, want the wildcard's 20/min", tt.key, v, r.Statuses[0].CurrentLimit)
			}
		}
		for _, v := range tt.noMatch {
			if r := h.ask(t, "example9", rd(tt.key, v)); r.Statuses[0].CurrentLimit != nil {
				t.Errorf("%s=%s: limit %v, want no match", tt.key, v, r.Statuses[0].CurrentLimit)
			}
		}
		// Each matching value has its own 20 a minute.
		h.drive(t, 19, "OK OK", "example9", rd(tt.key, tt.match[0]))
		h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example9", rd(tt.key, tt.match[0]))
		h.drive(t, 1, "OK OK", "example9", rd(tt.key, tt.match[1]))
	}
}

func TestReadmeExample10(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: example10
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit:
              unit: minute
              requests_per_unit: 60
`)
	h.drive(t, 60, "OK OK", "example10", rd("route", "api", "http_method", "GET", "subject_id", "123"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example10", rd("route", "api", "http_method", "GET", "subject_id", "123"))
	h.drive(t, 60, "OK OK", "example10", rd("route", "web", "http_method", "POST", "subject_id", "456"))

	h = imported(t, `domain: example10_wildcard
descriptors:
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit:
              unit: minute
              requests_per_unit: 100
`)
	h.drive(t, 100, "OK OK", "example10_wildcard", rd("user", "alice", "action", "readfile", "resource", "documents"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example10_wildcard", rd("user", "alice", "action", "readfile", "resource", "documents"))
	if r := h.ask(t, "example10_wildcard", rd("user", "alice", "action", "write", "resource", "documents")); r.Statuses[0].CurrentLimit != nil {
		t.Errorf("action=write: %v, want no match", r.Statuses[0].CurrentLimit)
	}
}

func TestReadmeExample11(t *testing.T) {
	t.Parallel()
	h := imported(t, `domain: example11
descriptors:
  # With share_threshold: true, all files/* matches share the same threshold
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10

  # Without share_threshold, each files_no_share/* match has its own isolated threshold
  - key: files_no_share
    value: files_no_share/*
    share_threshold: false
    rate_limit:
      unit: hour
      requests_per_unit: 10
`)
	h.drive(t, 5, "OK OK", "example11", rd("files", "files/a.pdf"))
	h.drive(t, 5, "OK OK", "example11", rd("files", "files/b.csv"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example11", rd("files", "files/c.txt"))
	h.drive(t, 10, "OK OK", "example11", rd("files_no_share", "files_no_share/a.pdf"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example11", rd("files_no_share", "files_no_share/a.pdf"))
	h.drive(t, 10, "OK OK", "example11", rd("files_no_share", "files_no_share/b.csv"))

	h = imported(t, `domain: example11_metrics
descriptors:
  - key: route
    value: api/*
    share_threshold: true
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit:
          unit: minute
          requests_per_unit: 60
`)
	// All api/* routes share the threshold (per method).
	h.drive(t, 30, "OK OK", "example11_metrics", rd("route", "api/v1", "method", "GET"))
	h.drive(t, 30, "OK OK", "example11_metrics", rd("route", "api/v2", "method", "GET"))
	h.drive(t, 1, "OVER_LIMIT OVER_LIMIT", "example11_metrics", rd("route", "api/v3", "method", "GET"))
	h.drive(t, 1, "OK OK", "example11_metrics", rd("route", "api/v1", "method", "POST"))
}
