package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// benchState is the size the apply must handle comfortably: 10,000
// definitions of every kind and 100,000 memberships of users and clients
// in a few groups each.
func benchState(definitions, memberships int) client.State {
	var s client.State
	s.Definitions = make([]ratelimit.Definition, 0, definitions)
	for i := range definitions {
		var d ratelimit.Definition
		switch i % 6 {
		case 0:
			d = group(fmt.Sprintf("team-%05d", i), 60, 100, 50)
		case 1:
			d = ratelimit.Definition{Axis: "caller_target", EntityType: "group", Name: fmt.Sprintf("partner-%05d", i),
				WindowSeconds: 3600, UserMaxRequests: ptr(1000), Enabled: true}
		case 2:
			d = ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: fmt.Sprintf("server-%05d", i),
				WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true, Description: "an MCP server"}
		case 3:
			d = ratelimit.Definition{Axis: "target", EntityType: "a2a_agent", Name: fmt.Sprintf("/agent-%05d", i),
				WindowSeconds: 60, MaxRequests: ptr(200), Enabled: true, Mode: "shadow"}
		case 4:
			d = ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: fmt.Sprintf("server-%05d:search", i-2),
				WindowSeconds: 60, MaxRequests: ptr(50), Enabled: true}
		case 5:
			d = ratelimit.Definition{Axis: "target", EntityType: "server_group", Name: fmt.Sprintf("pool-%05d", i),
				WindowSeconds: 60, MaxRequests: ptr(1000), Enabled: true, FailClosed: true,
				Members: []string{fmt.Sprintf("server-%05d", i-3), fmt.Sprintf("server-%05d", i-9), "mcpgw"}}
		}
		s.Definitions = append(s.Definitions, d)
	}
	groups := []string{"team-00000", "team-00006", "team-00012", "partner-00001", "partner-00007", "team-00018", "partner-00013"}
	s.Memberships = make([]ratelimit.Membership, 0, memberships)
	for i := range memberships {
		m := ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("user-%06d@example.com", i)}
		if i%3 == 0 {
			m = ratelimit.Membership{SubjectType: "client", Subject: fmt.Sprintf("client-%06d", i)}
		}
		m.Groups = []string{groups[i%len(groups)]}
		if i%2 == 0 {
			m.Groups = append(m.Groups, groups[(i/7+1)%len(groups)])
		}
		s.Memberships = append(s.Memberships, m)
	}
	return s
}

// BenchmarkApply applies 10,000 definitions and 100,000 memberships to an
// empty server through the SDK (HTTP, decoding, validation, diff, COPY and
// audit included), then the same state again, which must change nothing.
// apply-s and noop-s are the seconds of each, per iteration.
//
//	DATABASE_URL=$(scripts/devdb.sh url) go test ./internal/api -run '^$' -bench BenchmarkApply -benchtime 1x -count 3
func BenchmarkApply(b *testing.B) {
	state := benchState(10_000, 100_000)
	want := len(state.Definitions) + len(state.Memberships)
	ctx := context.Background()
	var applied, noop time.Duration
	n := 0
	peak := sampleHeap()
	for b.Loop() {
		b.StopTimer()
		env := apitest.Start(b, api.Config{})
		c, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		start := time.Now()
		res, err := c.Apply(ctx, state, client.ApplyOptions{})
		applied += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Created != want {
			b.Fatalf("created %d, want %d", res.Created, want)
		}

		start = time.Now()
		res, err = c.Apply(ctx, state, client.ApplyOptions{})
		noop += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Unchanged != want || res.Changed() {
			b.Fatalf("re-apply: %+v, want %d unchanged", res, want)
		}
		n++
	}
	b.ReportMetric(applied.Seconds()/float64(n), "apply-s")
	b.ReportMetric(noop.Seconds()/float64(n), "noop-s")
	b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
}

// sampleHeap samples the heap every millisecond until the returned
// function is called, which answers the peak above the heap at the start
// (live objects and garbage not yet collected: what the process holds).
// Server and client share the process, so it bounds the server's share.
func sampleHeap() func() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		return float64(top - min(top, base))
	}
}

// BenchmarkApplyJunk posts {"definitions":[1,1,...]} of 2 MB (a million
// elements) to a real rlapi and reports the process's peak heap while it
// is answered: it once peaked at 928 MB, an error kept per element.
//
//	DATABASE_URL=$(scripts/devdb.sh url) go test ./internal/api -run '^$' -bench BenchmarkApplyJunk -benchtime 3x
func BenchmarkApplyJunk(b *testing.B) {
	env := apitest.Start(b, api.Config{})
	body := `{"definitions":[` + strings.TrimSuffix(strings.Repeat("1,", 1_000_000), ",") + `]}`
	peak := sampleHeap()
	var answered int
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, env.URL+"/api/apply", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			b.Fatalf("status %d, want 400", resp.StatusCode)
		}
		answered = int(n)
	}
	b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(len(body))/(1<<20), "body-MiB")
	b.ReportMetric(float64(answered)/(1<<10), "answer-KiB")
}
