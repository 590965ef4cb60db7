package simulate

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/filesource"
)

func TestParseTimestamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-12-01T13:00:09Z", time.Date(2026, 12, 1, 13, 0, 9, 0, time.UTC)},
		{"2026-12-01T14:00:09.123456789+01:00", time.Date(2026, 12, 1, 13, 0, 9, 123456789, time.UTC)},
		{"1796130000", time.Unix(1796130000, 0)},
		{"1796130000.5", time.Unix(1796130000, 500_000_000)},
		// Read exactly: no float64 rounding of the nanoseconds.
		{"1796130000.000000001", time.Unix(1796130000, 1)},
		{" 0.25 ", time.Unix(0, 250_000_000)},
	}
	for _, tt := range tests {
		got, err := parseTimestamp(tt.in)
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("parseTimestamp(%q) = %v, %v; want %v in UTC", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-1", "1e9", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "99999999999", "7258118400", "1.", ".5", "1.0000000001", "2026-12-01", "13:00:09", "0x10", "1_000"} {
		if _, err := parseTimestamp(bad); err == nil {
			t.Errorf("parseTimestamp(%q): no error", bad)
		}
	}
}

// TestHistogramWidens: a trace longer than maxBuckets buckets widens them
// (to a multiple of the width asked for), keeping every call.
func TestHistogramWidens(t *testing.T) {
	t.Parallel()
	h := newHistogram(2, time.Second)
	start := time.Unix(1796130000, 0)
	const calls = 50_000 // one a second: 50,000 buckets of 1 s
	for i := range calls {
		b := h.index(start.Add(time.Duration(i) * time.Second))
		h.count(0, b, true)
		h.count(1, b, i%2 == 0)
	}
	// 1 s: 50,000 buckets; 2 s: 25,000; 5 s: 10,000 (not fewer than the
	// cap); 10 s: 5,000.
	if h.width != 10*time.Second || len(h.runs[0]) != 5000 || len(h.runs[1]) != 5000 {
		t.Fatalf("width %v, %d buckets: want 10s and 5000", h.width, len(h.runs[0]))
	}
	var a0, a1, d1 int64
	for i := range h.runs[0] {
		a0 += h.runs[0][i].allowed
		a1 += h.runs[1][i].allowed
		d1 += h.runs[1][i].denied
	}
	if a0 != calls || a1 != calls/2 || d1 != calls/2 {
		t.Errorf("counts %d, %d/%d: calls lost in the merges", a0, a1, d1)
	}
	if h.origin%int64(h.width) != 0 {
		t.Errorf("origin %d is not aligned on the width", h.origin)
	}
}

// TestHistogramDisplay: automatic buckets merge into the narrowest nice
// width with at most autoBuckets of them, aligned on the epoch.
func TestHistogramDisplay(t *testing.T) {
	t.Parallel()
	h := newHistogram(1, 0)
	start := time.Unix(1796130000, 0).Add(700 * time.Millisecond)
	for _, d := range []time.Duration{0, time.Second, 90 * time.Second, 299 * time.Second} {
		h.count(0, h.index(start.Add(d)), true)
	}
	cells, origin, width := h.display()
	// 299.7 s at 5 s is 61 buckets (from 1796130000 to 1796130299.7);
	// at 10 s, 30.
	if width != 10*time.Second || len(cells[0]) != 30 || origin != 1796130000*int64(time.Second) {
		t.Fatalf("width %v, %d buckets from %d", width, len(cells[0]), origin)
	}
	if cells[0][0].allowed != 2 || cells[0][9].allowed != 1 || cells[0][29].allowed != 1 {
		t.Errorf("cells %v", cells[0])
	}
}

// FuzzTrace: whatever the bytes, the reader returns rows in order, a
// *RowError naming a line, or the end; never a panic.
func FuzzTrace(f *testing.F) {
	f.Add("timestamp,caller,target,tool,cost\n2026-12-01T13:00:09Z,user:a,mcp_server:x,t,2\n", "")
	f.Add("1796130000,agent:b,a2a_agent:p/q\n1796130000.5,user:a,mcp_server:x\n", FormatCSV)
	f.Add(`{"timestamp": 1796130000.25, "caller": "user:a", "target": "mcp_server:x", "cost": 3}`+"\n", "")
	f.Add("{\"timestamp\": \"x\"}\n\n{", FormatJSONL)
	f.Fuzz(func(t *testing.T, data, format string) {
		if format != FormatCSV && format != FormatJSONL {
			format = ""
		}
		tr := newTraceReader(strings.NewReader(data), "f", format)
		var last time.Time
		for range 1000 {
			row, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			var re *RowError
			if err != nil {
				if !errors.As(err, &re) || re.Line < 1 {
					t.Fatalf("error %v (%T): want a *RowError with a line", err, err)
				}
				return
			}
			if row.Time.Before(last) || row.Call.Cost < 1 || (row.Call.Username == "") == (row.Call.ClientID == "") {
				t.Fatalf("row %+v after %v", row, last)
			}
			last = row.Time
		}
	})
}

// FuzzReplay: whatever the trace, a replay through the Enforcer ends with
// a report, a *RowError or the empty-trace error; never a panic.
func FuzzReplay(f *testing.F) {
	st, err := filesource.Parse("limits.yaml", []byte(`definitions:
  - {axis: target, entity_type: mcp_server, name: x, window_seconds: 10, max_requests: 3, enabled: true}
  - {axis: caller, entity_type: group, name: g, window_seconds: 3600, user_max_requests: 2, enabled: true}
memberships:
  - {subject_type: user, subject: a, groups: [g]}
`), filesource.Floors{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("1796130000,user:a,mcp_server:x\n1796130009.999,user:a,mcp_server:x\n2199-12-31T23:59:59.999999999Z,user:a,mcp_server:x,t,1000000\n")
	f.Add(`{"timestamp": 0, "caller": "agent:b", "target": "a2a_agent:x/y"}` + "\n")
	f.Fuzz(func(t *testing.T, data string) {
		for _, algos := range [][]string{nil, {"token_bucket", "sliding_window"}} {
			rep, err := replayTrace(context.Background(), newTraceReader(strings.NewReader(data), "f", ""), specs(st, algos), 0)
			var re *RowError
			switch {
			case err == nil:
				doc := rep.report("f")
				if doc.Runs[0].Calls != rep.rows || len(doc.Runs[0].Buckets) > autoBuckets {
					t.Fatalf("report %+v of %d rows", doc, rep.rows)
				}
				if err := writeSVG(io.Discard, doc); err != nil {
					t.Fatal(err)
				}
			case errors.As(err, &re), errors.Is(err, errNoCalls):
			default:
				t.Fatalf("error %v (%T)", err, err)
			}
		}
	})
}
