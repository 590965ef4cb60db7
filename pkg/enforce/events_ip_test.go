package enforce_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestEventLinesNameIPCallers: the aggregated throttle and quarantine
// lines of anonymous callers name their caller as their buckets do
// (caller=ip:<key>, username and client_id empty), one line per ip
// caller (two addresses of one /64 are one caller); a user's line names
// user:<name>.
func TestEventLinesNameIPCallers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	f := newMemFixtureOpts(t, enforce.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, callerGroup("anon", 60, ptr(1), ptr(1)))
	f.Member(ratelimit.SubjectNetwork, "2001:db8::/32", "anon")
	f.Member(ratelimit.SubjectNetwork, "198.51.100.0/24", "anon")
	f.Member(ratelimit.SubjectNetwork, "203.0.113.0/24", ratelimit.GroupQuarantineCallers)
	f.Member(ratelimit.SubjectUser, "alice", "anon")
	for _, c := range []enforce.Call{
		anonymous("2001:db8:1:1::1"), anonymous("2001:db8:1:1::2"), anonymous("2001:db8:1:1::3"), // 2 throttled, one /64
		anonymous("198.51.100.7"), anonymous("::ffff:198.51.100.7"), // 1 throttled
		user("alice", "srv"), user("alice", "srv"), // 1 throttled
		anonymous("203.0.113.9"), anonymous("203.0.113.9"), // 2 quarantined
	} {
		f.Check(c)
	}
	f.E.Close() // writes what is aggregated
	type line struct{ msg, caller, username, clientID string }
	got := map[line]float64{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] != "calls throttled" && m["msg"] != "calls denied: quarantined" {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		n, _ := m["count"].(float64)
		got[line{s("msg"), s("caller"), s("username"), s("client_id")}] += n
	}
	want := map[line]float64{
		{"calls throttled", "ip:2001:db8:1:1::/64", "", ""}:     2,
		{"calls throttled", "ip:198.51.100.7", "", ""}:          1,
		{"calls throttled", "user:alice", "alice", ""}:          1,
		{"calls denied: quarantined", "ip:203.0.113.9", "", ""}: 2,
	}
	if len(got) != len(want) {
		t.Errorf("lines %v, want %v\n%s", got, want, buf.String())
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("line %+v counts %v, want %v\n%s", k, got[k], n, buf.String())
		}
	}
}
