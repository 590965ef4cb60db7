package simulate_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/simulate"
)

// write puts content in a file of the test's own directory.
func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// threePer10s is one target limit: 3 calls per 10 s on mcp_server:github.
const threePer10s = `definitions:
  - axis: target
    entity_type: mcp_server
    name: github
    window_seconds: 10
    max_requests: 3
    enabled: true
`

// boundaryTrace has three calls at the end of the 10 s window
// [13:00:00, 13:00:10), three at the start of the next, then pairs of
// calls around the moments the sliding window and the token bucket admit
// their fourth call (13:00:00 is a multiple of 10 s since the epoch, so
// it starts a fixed window).
const boundaryTrace = `timestamp,caller,target
2026-12-01T13:00:09.000Z,user:alice,mcp_server:github
2026-12-01T13:00:09.200Z,user:alice,mcp_server:github
2026-12-01T13:00:09.400Z,user:alice,mcp_server:github
2026-12-01T13:00:10.000Z,user:alice,mcp_server:github
2026-12-01T13:00:10.200Z,user:alice,mcp_server:github
2026-12-01T13:00:10.400Z,user:alice,mcp_server:github
2026-12-01T13:00:12.333Z,user:alice,mcp_server:github
2026-12-01T13:00:12.334Z,user:alice,mcp_server:github
2026-12-01T13:00:13.333Z,user:alice,mcp_server:github
2026-12-01T13:00:13.334Z,user:alice,mcp_server:github
`

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, "2026-12-01T13:00:"+s+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

// simulateJSON runs simulate -o json and decodes its report.
func simulateJSON(t *testing.T, args ...string) simulate.Report {
	t.Helper()
	r := clitest.New(t)
	out := r.Must(append([]string{"simulate", "-o", "json"}, args...)...)
	var rep simulate.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return rep
}

type bucket struct{ allowed, denied int64 }

func buckets(run simulate.RunReport) []bucket {
	var out []bucket
	for _, b := range run.Buckets {
		out = append(out, bucket{b.Allowed, b.Denied})
	}
	return out
}

func TestAlgorithmsAcrossAWindowBoundary(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s)
	trace := write(t, "trace.csv", boundaryTrace)
	rep := simulateJSON(t, "-f", limits, "--algorithms", "all", "--bucket", "1s", trace)

	// Buckets of 1 s from 13:00:09 to 13:00:13, by hand:
	//
	// fixed_window: windows [0, 10) and [10, 20) of 3 each: the three
	// calls at 9.x fill the first, the three at 10.x the second (6 admitted
	// within 1.4 s: twice the limit), then nothing until 20.
	//
	// sliding_window: W = 10000 ms, prev = 3 from 13:00:10 on, so a call
	// at offset e of the new window passes iff 3*(W-e) + (cur+1)*W <= 3*W:
	// with cur = 0, e >= W/3 = 3333.3 ms. At 10.0, 10.2, 10.4 and 12.333,
	// 12.334 (e <= 2334) and 13.333 (3*6667 + 10000 = 30001) no; at 13.334
	// (3*6666 + 10000 = 29998) yes: 4 admitted.
	//
	// token_bucket (GCRA): T = ceil(10 s / 3) = 3.333333334 s, tau = 3T.
	// The full bucket admits 9.0, 9.2, 9.4 (TAT = 9.0 + 3T); the next call
	// passes once 9.0 + 4T - now <= 3T, at now >= 9.0 + T = 12.333333334:
	// 12.333 no, 12.334 yes (TAT = 9.0 + 4T = 22.33), 13.333 and 13.334
	// no (they would need now >= 9.0 + 2T = 15.67): 4 admitted.
	want := map[string]struct {
		allowed, denied int64
		firstDenial     time.Time
		buckets         []bucket
	}{
		"fixed_window":   {6, 4, at("12.333"), []bucket{{3, 0}, {3, 0}, {0, 0}, {0, 2}, {0, 2}}},
		"sliding_window": {4, 6, at("10"), []bucket{{3, 0}, {0, 3}, {0, 0}, {0, 2}, {1, 1}}},
		"token_bucket":   {4, 6, at("10"), []bucket{{3, 0}, {0, 3}, {0, 0}, {1, 1}, {0, 2}}},
	}
	if rep.Bucket != "1s" || rep.BucketSeconds != 1 || rep.Trace.Calls != 10 || !rep.Trace.First.Equal(at("09")) || !rep.Trace.Last.Equal(at("13.334")) {
		t.Errorf("trace %+v, bucket %q (%v s)", rep.Trace, rep.Bucket, rep.BucketSeconds)
	}
	var names []string
	for _, run := range rep.Runs {
		names = append(names, run.Name)
		w, ok := want[run.Name]
		if !ok {
			continue
		}
		if run.Calls != 10 || run.Allowed != w.allowed || run.Denied != w.denied || run.FirstDenial == nil || !run.FirstDenial.Equal(w.firstDenial) {
			t.Errorf("%s: calls %d, allowed %d, denied %d, first denial %v; want 10, %d, %d, %v",
				run.Name, run.Calls, run.Allowed, run.Denied, run.FirstDenial, w.allowed, w.denied, w.firstDenial)
		}
		if got := buckets(run); !slices.Equal(got, w.buckets) {
			t.Errorf("%s: buckets %v, want %v", run.Name, got, w.buckets)
		}
		if !run.Buckets[0].Start.Equal(at("09")) {
			t.Errorf("%s: first bucket starts %v, want 13:00:09", run.Name, run.Buckets[0].Start)
		}
		if len(run.Definitions) != 1 {
			t.Fatalf("%s: definitions %+v, want the one of the file", run.Name, run.Definitions)
		}
		d := run.Definitions[0]
		if d.ID != "target:mcp_server:github:10" || d.Algorithm != run.Name || d.Calls != 10 || d.Allowed != w.allowed || d.Denied != w.denied {
			t.Errorf("%s: definition %+v", run.Name, d)
		}
	}
	if want := []string{"fixed_window", "sliding_window", "token_bucket"}; !slices.Equal(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
}

func TestTableAndChart(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s)
	trace := write(t, "trace.csv", boundaryTrace)
	r := clitest.New(t)

	// Piped: the table tab-separated under its header, then the chart
	// without colour.
	out := r.Must("simulate", "-f", limits, "--bucket", "1s", trace)
	want := `RUN	DEFINITION	ALGORITHM	LIMIT	CALLS	ALLOWED	DENIED	DENIED%	FIRST DENIAL
fixed_window	(all calls)	-	-	10	6	4	40.0%	+3.333s
fixed_window	target:mcp_server:github:10	fixed_window	3 per 10s	10	6	4	40.0%	+3.333s

Calls per 1s (UTC), from 2026-12-01T13:00:09Z: █ allowed, ░ denied

          fixed_window
13:00:09  ███      3/0
13:00:10  ███      3/0
13:00:11             -
13:00:12  ░░       0/2
13:00:13  ░░       0/2
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// On a terminal: aligned, a column per run.
	res := r.MustWith(clitest.Opts{TTY: true}, "simulate", "-f", limits, "--algorithms", "fixed_window,token_bucket", "--bucket", "1s", trace)
	for _, line := range []string{
		"RUN           DEFINITION                   ALGORITHM     LIMIT      CALLS  ALLOWED  DENIED  DENIED%  FIRST DENIAL",
		"token_bucket  target:mcp_server:github:10  token_bucket  3 per 10s  10     4        6       60.0%    +1s",
		"          fixed_window  token_bucket",
		"13:00:12  ░░       0/2  █░       1/1",
	} {
		if !strings.Contains(res.Out, line+"\n") {
			t.Errorf("no line %q in\n%s", line, res.Out)
		}
	}
}

// TestJSONShape holds -o json to the shape docs/algorithms.md documents.
func TestJSONShape(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s+`  - axis: target
    entity_type: mcp_server
    name: slack
    window_seconds: 60
    max_requests: 100
    enabled: true
    mode: shadow
`)
	trace := write(t, "trace.csv", boundaryTrace)
	out := clitest.New(t).Must("simulate", "-o", "json", "-f", limits, "--algorithms", "sliding_window,fixed_window", trace)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not an object", v)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	check := func(what string, v any, want ...string) {
		t.Helper()
		slices.Sort(want)
		if got := keys(v); !slices.Equal(got, want) {
			t.Errorf("%s: fields %v, want %v", what, got, want)
		}
	}
	totals := []string{"calls", "allowed", "denied", "denial_rate", "first_denial"}
	check("document", doc, "trace", "bucket", "bucket_seconds", "runs")
	check("trace", doc["trace"], "file", "calls", "first", "last")
	runs := doc["runs"].([]any)
	if len(runs) != 2 || runs[0].(map[string]any)["name"] != "sliding_window" || runs[1].(map[string]any)["name"] != "fixed_window" {
		t.Fatalf("runs %v: want sliding_window then fixed_window, in the order asked", runs)
	}
	run := runs[1].(map[string]any)
	check("run", run, append([]string{"name", "definitions", "buckets"}, totals...)...)
	defs := run["definitions"].([]any)
	if len(defs) != 2 {
		t.Fatalf("definitions %v", defs)
	}
	check("definition", defs[0], append([]string{"id", "algorithm", "mode", "window_seconds", "max_requests"}, totals...)...)
	slack := defs[1].(map[string]any)
	if slack["mode"] != "shadow" || slack["calls"] != 0.0 || slack["first_denial"] != nil {
		t.Errorf("the shadow definition no call reaches: %v", slack)
	}
	check("bucket", run["buckets"].([]any)[0], "start", "allowed", "denied")
	if run["bucket_seconds"] != nil || doc["bucket"] != "100ms" {
		t.Errorf("bucket %v: want 100ms, the narrowest nice width with at most 60 buckets over 4.334 s", doc["bucket"])
	}
}

// TestBurstKeptByTokenBucket: switching a token bucket with a burst to a
// window drops the burst; the token bucket keeps it.
func TestBurstKeptByTokenBucket(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", `definitions:
  - {axis: target, entity_type: mcp_server, name: github, window_seconds: 10, max_requests: 3, burst: 5, algorithm: token_bucket, enabled: true}
`)
	// Six calls 100 ms apart. A fixed window of 3 admits 3. The bucket
	// (T = ceil(10 s / 3) = 3.333333334 s, tau = 5T) starts full: call k
	// (from 0) at 9.0 + 0.1k passes iff 9.0 + (k+1)T - now <= 5T, that is
	// (k+1)T - 0.1k <= 5T: k = 0..4 pass, k = 5 needs T <= 0.5 s: denied.
	var trace strings.Builder
	trace.WriteString("timestamp,caller,target\n")
	for k := range 6 {
		fmt.Fprintf(&trace, "2026-12-01T13:00:09.%dZ,user:alice,mcp_server:github\n", k)
	}
	tr := write(t, "trace.csv", trace.String())
	rep := simulateJSON(t, "-f", limits, "--algorithms", "fixed_window,token_bucket", tr)
	fixed, tb := rep.Runs[0], rep.Runs[1]
	if fixed.Allowed != 3 || fixed.Definitions[0].Burst != nil {
		t.Errorf("fixed_window: %d allowed, burst %v; want 3 and none", fixed.Allowed, fixed.Definitions[0].Burst)
	}
	if tb.Allowed != 5 || tb.Definitions[0].Burst == nil || *tb.Definitions[0].Burst != 5 || !tb.FirstDenial.Equal(at("09.5")) {
		t.Errorf("token_bucket: %d allowed, burst %v, first denial %v; want 5, 5 and 13:00:09.5", tb.Allowed, tb.Definitions[0].Burst, tb.FirstDenial)
	}
	// As written: the file's one algorithm names the run.
	if rep := simulateJSON(t, "-f", limits, tr); rep.Runs[0].Name != "token_bucket" || rep.Runs[0].Allowed != 5 {
		t.Errorf("as written: run %q allowed %d, want token_bucket and 5", rep.Runs[0].Name, rep.Runs[0].Allowed)
	}
}

// TestQuarantineDenies: the file's quarantine applies, as on a gateway:
// a denial of the call that no definition made.
func TestQuarantineDenies(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s+`memberships:
  - {subject_type: user, subject: mallory, groups: [quarantine-callers], quarantine_reason: abuse}
`)
	trace := write(t, "trace.csv", "timestamp,caller,target\n1796130000,user:mallory,mcp_server:github\n1796130001,user:alice,mcp_server:github\n")
	run := simulateJSON(t, "-f", limits, trace).Runs[0]
	if d := run.Definitions[0]; run.Allowed != 1 || run.Denied != 1 || d.Calls != 1 || d.Denied != 0 {
		t.Errorf("run %+v, definition %+v: want mallory's call denied by quarantine, alice's allowed by the limit", run.Totals, d.Totals)
	}
}

// TestCallerLimitsPerCaller: a group limit counts per caller, only for
// its members, and the table credits it.
func TestCallerLimitsPerCaller(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", `definitions:
  - {axis: caller, entity_type: group, name: devs, window_seconds: 3600, user_max_requests: 2, agent_max_requests: 1, enabled: true}
memberships:
  - {subject_type: user, subject: alice, groups: [devs]}
  - {subject_type: client, subject: ci-bot, groups: [devs]}
`)
	// JSON lines, Unix seconds with fractions: alice 3 calls (the third
	// denied), bob (no group) 3 calls (all allowed), ci-bot 2 calls with
	// a tool and a cost (the second denied).
	trace := write(t, "trace.jsonl", `{"timestamp": 1796130000.5, "caller": "user:alice", "target": "mcp_server:github"}
{"timestamp": "1796130001", "caller": "user:bob", "target": "mcp_server:github"}
{"timestamp": 1796130001.25, "caller": "user:alice", "target": "a2a_agent:planner"}

{"timestamp": 1796130002, "caller": "user:bob", "target": "mcp_server:github"}
{"timestamp": 1796130003, "caller": "agent:ci-bot", "target": "mcp_server:github", "tool": "search", "cost": 1}
{"timestamp": 1796130004, "caller": "user:alice", "target": "mcp_server:github"}
{"timestamp": 1796130004, "caller": "user:bob", "target": "mcp_server:github"}
{"timestamp": 1796130005, "caller": "agent:ci-bot", "target": "mcp_server:github", "cost": "1"}
`)
	rep := simulateJSON(t, "-f", limits, trace)
	run := rep.Runs[0]
	if run.Name != "fixed_window" || run.Calls != 8 || run.Allowed != 6 || run.Denied != 2 {
		t.Errorf("run %+v: want fixed_window, 8 calls, 6 allowed, 2 denied", run.Totals)
	}
	if want := time.Unix(1796130004, 0).UTC(); run.FirstDenial == nil || !run.FirstDenial.Equal(want) {
		t.Errorf("first denial %v, want %v (alice's third call)", run.FirstDenial, want)
	}
	d := run.Definitions[0]
	if d.ID != "caller:group:devs:3600" || d.Calls != 5 || d.Allowed != 3 || d.Denied != 2 {
		t.Errorf("definition %+v: want 5 calls of its members, 3 allowed, 2 denied", d)
	}
	if !rep.Trace.First.Equal(time.Unix(1796130000, 5e8)) {
		t.Errorf("first %v: the fraction of a Unix timestamp is kept", rep.Trace.First)
	}
}

func TestBadRows(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s)
	head := "timestamp,caller,target,tool,cost\n2026-12-01T13:00:00Z,user:a,mcp_server:github,,\n"
	tests := []struct {
		name, file, content, want string
	}{
		{"timestamp", "t.csv", head + "yesterday,user:a,mcp_server:github,,\n",
			`t.csv:3: timestamp: must be RFC 3339 (2026-12-01T13:00:00.25Z) or Unix seconds (1796130000.25) (got "yesterday")`},
		{"order", "t.csv", head + "2026-12-01T12:59:59.5Z,user:a,mcp_server:github,,\n",
			"t.csv:3: timestamp: 2026-12-01T12:59:59.5Z is before the previous row's 2026-12-01T13:00:00Z: a trace is replayed in order, sort it by time first"},
		{"caller", "t.csv", head + "2026-12-01T13:00:01Z,bob,mcp_server:github,,\n",
			`t.csv:3: caller: must be user:<name> or agent:<client id> (got "bob")`},
		{"caller kind", "t.csv", head + "2026-12-01T13:00:01Z,server:x,mcp_server:github,,\n",
			`t.csv:3: caller: must be user:<name> or agent:<client id> (got "server:x")`},
		{"target type", "t.csv", head + "2026-12-01T13:00:01Z,user:a,http:github,,\n",
			`t.csv:3: target: must be mcp_server, a2a_agent or empty (got "http")`},
		{"target name", "t.csv", head + "2026-12-01T13:00:01Z,user:a,mcp_server,,\n",
			`t.csv:3: target: must be mcp_server:<name> or a2a_agent:<path> (got "mcp_server")`},
		{"cost", "t.csv", head + "2026-12-01T13:00:01Z,user:a,mcp_server:github,,0\n",
			`t.csv:3: cost: must be a whole number from 1 to 1000000 (got "0")`},
		{"fields", "t.csv", head + "2026-12-01T13:00:01Z,user:a,mcp_server:github,,1,extra\n",
			"t.csv:3: 6 fields, more than the 5 columns (timestamp,caller,target,tool,cost)"},
		{"missing", "t.csv", "timestamp,caller\n2026-12-01T13:00:01Z,user:a\n", "t.csv:2: target: is required"},
		{"column", "t.csv", "timestamp,caller,target,when\n", `t.csv:1: header: unknown column "when" (the columns are timestamp, caller, target, tool, cost)`},
		{"quote", "t.csv", head + "2026-12-01T13:00:01Z,\"user:a,mcp_server:github\n", "t.csv:3: not CSV: extraneous or missing \" in quoted-field"},
		{"no header", "t.csv", "1796130000,user:a,mcp_server:github\n1796130001.5e3,user:a,mcp_server:github\n",
			`t.csv:2: timestamp: must be RFC 3339 (2026-12-01T13:00:00.25Z) or Unix seconds (1796130000.25) (got "1796130001.5e3")`},
		{"json field", "t.jsonl", `{"timestamp": 1796130000, "caller": "user:a", "target": "mcp_server:x", "user": "a"}`,
			"t.jsonl:1: user: unknown field (the fields are timestamp, caller, target, tool, cost)"},
		{"json type", "t.jsonl", "\n" + `{"timestamp": 1796130000, "caller": 7, "target": "mcp_server:x"}`,
			"t.jsonl:2: caller: must be a string, not a JSON number"},
		{"json cost", "t.jsonl", `{"timestamp": 1796130000, "caller": "user:a", "target": "mcp_server:x", "cost": 2.5}`,
			`t.jsonl:1: cost: must be a whole number from 1 to 1000000 (got "2.5")`},
		{"json timestamp", "t.jsonl", `{"timestamp": true, "caller": "user:a", "target": "mcp_server:x"}`,
			"t.jsonl:1: timestamp: must be a string or a number (got true)"},
		{"json missing", "t.jsonl", `{"timestamp": 1796130000, "target": "mcp_server:x"}`, "t.jsonl:1: caller: is required"},
		{"json syntax", "t.jsonl", `{"timestamp": 1796130000,`, "t.jsonl:1: not a JSON object: unexpected EOF"},
		{"json two", "t.jsonl", `{"timestamp": 1796130000, "caller": "user:a", "target": "mcp_server:x"} {}`,
			"t.jsonl:1: more than one JSON value on the line"},
		{"empty", "t.csv", "# nothing\n", "t.csv: the trace has no calls"},
		{"far future", "t.csv", head + "9999-12-31T23:59:59Z,user:a,mcp_server:github,,\n", `t.csv:3: timestamp: must be from 1970 to 2199 (got "9999-12-31T23:59:59Z")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			trace := filepath.Join(dir, tt.file)
			if err := os.WriteFile(trace, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := clitest.New(t)
			res := r.Run("simulate", "-f", limits, trace)
			wantCode := cmdutil.ExitUsage
			if res.Code != wantCode || res.ErrOut != "Error: "+filepath.Join(dir, tt.want)+"\n" || res.Out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", res.Code, res.Out, res.ErrOut, wantCode, "Error: "+filepath.Join(dir, tt.want))
			}
		})
	}
}

func TestBadDefinitions(t *testing.T) {
	t.Parallel()
	trace := write(t, "trace.csv", boundaryTrace)
	limits := write(t, "limits.yaml", `definitions:
  - {axis: caller, entity_type: group, name: devs, window_seconds: 60, user_max_requests: 5, enabled: true}
`)
	r := clitest.New(t)
	res := r.Run("simulate", "-f", limits, trace)
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, "document 1: definitions[0].user_max_requests") {
		t.Errorf("exit %d, stderr %q: want 2 and the floor's problem, named", res.Code, res.ErrOut)
	}
	// Without the floors the same file replays.
	r.Must("simulate", "--no-floors", "-f", limits, trace)

	// The algorithm rules of rlapi, every problem named.
	bad := write(t, "bad.yaml", `definitions:
  - {axis: target, entity_type: mcp_server, name: github, window_seconds: 10, max_requests: 3, burst: 5, enabled: true}
  - {axis: target, entity_type: mcp_server, name: gitlab, window_seconds: 10, max_requests: 3, algorithm: leaky, enabled: true}
`)
	res = r.Run("simulate", "-f", bad, trace)
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, "definitions[0].burst: not allowed with algorithm fixed_window") ||
		!strings.Contains(res.ErrOut, `definitions[1].algorithm: must be one of fixed_window, sliding_window, token_bucket (got "leaky")`) || res.Out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q: want 2 and both problems", res.Code, res.Out, res.ErrOut)
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		wantAlgs []string
		wantErr  string
	}{
		{[]string{"-f", "l.yaml", "t.csv"}, nil, ""},
		{[]string{"-f", "l.yaml", "--algorithms", "all", "t.csv"}, []string{"fixed_window", "sliding_window", "token_bucket"}, ""},
		{[]string{"-f", "l.yaml", "--algorithms", "token_bucket,fixed_window", "t.csv"}, []string{"token_bucket", "fixed_window"}, ""},
		{[]string{"-f", "l.yaml", "--algorithms", "token_bucket", "--algorithms", "all", "t.csv"}, []string{"token_bucket", "fixed_window", "sliding_window"}, ""},
		{[]string{"t.csv"}, nil, "-f is required"},
		{[]string{"-f", "l.yaml"}, nil, "simulate replays one trace, a CSV or JSON Lines file or - for stdin (got 0 arguments)"},
		{[]string{"-f", "-", "-"}, nil, "standard input can be read only once"},
		{[]string{"-f", "l.yaml", "--algorithms", "token_bucket,token_bucket", "t.csv"}, nil, "--algorithms: token_bucket is named twice"},
		{[]string{"-f", "l.yaml", "--bucket", "10us", "t.csv"}, nil, "--bucket: must be at least 1ms (got 10µs)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			f := clitest.Factory()
			var got *simulate.Options
			cmd := simulate.NewCmdSimulate(f, func(o *simulate.Options) error { got = o; return nil })
			err := clitest.Execute(f, cmd, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			case tt.wantErr != "" && cmdutil.ExitCode(err) != cmdutil.ExitUsage:
				t.Errorf("exit code %d, want %d (usage)", cmdutil.ExitCode(err), cmdutil.ExitUsage)
			case tt.wantErr == "" && !slices.Equal(got.Algorithms, tt.wantAlgs):
				t.Errorf("algorithms %v, want %v", got.Algorithms, tt.wantAlgs)
			}
		})
	}
	res := clitest.New(t).Run("simulate", "-o", "name", "-f", "l.yaml", "t.csv")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, "-o name: simulate names no objects") {
		t.Errorf("-o name: exit %d, %q", res.Code, res.ErrOut)
	}
}

// TestStdin: the trace (or the definitions) can come from standard input.
func TestStdin(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s)
	trace := write(t, "trace.csv", boundaryTrace)
	r := clitest.New(t)
	a := r.MustWith(clitest.Opts{Stdin: boundaryTrace}, "simulate", "-o", "json", "-f", limits, "-").Out
	b := r.MustWith(clitest.Opts{Stdin: threePer10s}, "simulate", "-o", "json", "-f", "-", trace).Out
	// The same answers; only the trace's name differs.
	var ra, rb simulate.Report
	if err := json.Unmarshal([]byte(a), &ra); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &rb); err != nil {
		t.Fatal(err)
	}
	if ra.Trace.File != "<stdin>" || rb.Trace.File != trace {
		t.Errorf("trace files %q and %q, want <stdin> and %s", ra.Trace.File, rb.Trace.File, trace)
	}
	ra.Trace.File = rb.Trace.File
	if ja, jb := mustJSON(t, ra), mustJSON(t, rb); ja != jb {
		t.Errorf("from stdin:\n%s\nfrom the file:\n%s", ja, jb)
	}
	// JSON lines on stdin are recognised by their first character.
	jl := `{"timestamp": "2026-12-01T13:00:09Z", "caller": "user:alice", "target": "mcp_server:github"}` + "\n"
	out := r.MustWith(clitest.Opts{Stdin: jl}, "simulate", "-o", "json", "-f", limits, "-").Out
	if !strings.Contains(out, `"calls": 1,`) {
		t.Errorf("JSON lines on stdin: %s", out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// svgDoc is what the test reads of an SVG chart.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Groups  []struct {
		Class string `xml:"class,attr"`
		Run   string `xml:"data-run,attr"`
		Rects []struct {
			Height float64 `xml:"height,attr"`
		} `xml:"rect"`
	} `xml:"g"`
}

func TestSVG(t *testing.T) {
	t.Parallel()
	limits := write(t, "limits.yaml", threePer10s)
	trace := write(t, "trace.csv", boundaryTrace)
	svg := filepath.Join(t.TempDir(), "chart.svg")
	clitest.New(t).Must("simulate", "-f", limits, "--algorithms", "all", "--bucket", "1s", "--svg", svg, trace)
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed XML: every token reads.
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, g := range doc.Groups {
		if g.Class == "series" {
			runs = append(runs, g.Run)
		}
	}
	if want := []string{"fixed_window", "sliding_window", "token_bucket"}; !slices.Equal(runs, want) {
		t.Errorf("series %v, want one per algorithm %v", runs, want)
	}
	// fixed_window: 2 buckets of admitted calls, 2 of denied ones.
	if n := len(doc.Groups[0].Rects); n != 4 {
		t.Errorf("fixed_window has %d bars, want 4", n)
	}
}

// TestDocsChartUpToDate: docs/algorithms/admitted.svg is what the command
// docs/algorithms.md shows (make docs-algorithms runs it) makes today.
func TestDocsChartUpToDate(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var cmdline string
	for _, line := range strings.Split(read("Makefile"), "\n") {
		if v, ok := strings.CutPrefix(line, "SIMULATE_DOCS := "); ok {
			cmdline = strings.TrimSpace(v)
		}
	}
	if cmdline == "" {
		t.Fatal("the Makefile has no SIMULATE_DOCS line")
	}
	if doc := read(filepath.Join("docs", "algorithms.md")); !strings.Contains(doc, "rlctl "+cmdline+"\n") {
		t.Errorf("docs/algorithms.md does not show the command that makes its chart: rlctl %s", cmdline)
	}
	args := strings.Fields(cmdline)
	svg, committed := filepath.Join(t.TempDir(), "admitted.svg"), ""
	for i, a := range args {
		if i > 0 && args[i-1] == "--svg" {
			committed, args[i] = a, svg
		} else if strings.HasPrefix(a, "docs/") {
			args[i] = filepath.Join(root, a)
		}
	}
	clitest.New(t).Must(args...)
	got, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != read(committed) {
		t.Errorf("%s is stale: run make docs-algorithms", committed)
	}
}
