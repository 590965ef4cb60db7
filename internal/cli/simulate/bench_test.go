package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/filesource"
)

// BenchmarkReplay: decisions per second of a replay, one run, a trace of
// 1,000 callers over 20 targets under a target, a caller and a
// caller_target limit.
func BenchmarkReplay(b *testing.B) {
	var lim strings.Builder
	lim.WriteString(`definitions:
  - {axis: target, entity_type: mcp_server, name: s1, window_seconds: 10, max_requests: 20, enabled: true}
  - {axis: caller, entity_type: group, name: devs, window_seconds: 3600, user_max_requests: 100, enabled: true}
  - {axis: caller_target, entity_type: group, name: devs, window_seconds: 60, user_max_requests: 30, enabled: true}
memberships:
`)
	for i := range 1000 {
		fmt.Fprintf(&lim, "  - {subject_type: user, subject: u%d, groups: [devs]}\n", i)
	}
	st, err := filesource.Parse("limits.yaml", []byte(lim.String()), filesource.Floors{})
	if err != nil {
		b.Fatal(err)
	}
	const rows = 10_000
	var tr strings.Builder
	tr.WriteString("timestamp,caller,target\n")
	for i := range rows {
		fmt.Fprintf(&tr, "%d.%03d,user:u%d,mcp_server:s%d\n", 1796130000+i/50, i%50*20, i*7919%1000, i*31%20)
	}
	trace := tr.String()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := replayTrace(context.Background(), newTraceReader(strings.NewReader(trace), "t.csv", ""), specs(st, nil), time.Second)
		if err != nil || rep.rows != rows {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "decisions/s")
}
