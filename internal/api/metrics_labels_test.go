package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// httpSeries scrapes /metrics and returns its rlapi_http_* sample lines.
func httpSeries(t *testing.T, env *apitest.Env) []string {
	t.Helper()
	a := do(t, env.URL, call{method: "GET", path: "/metrics", token: env.AdminToken})
	if a.status != 200 {
		t.Fatalf("GET /metrics: %d %s", a.status, a.body)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "rlapi_http_") {
			out = append(out, line)
		}
	}
	return out
}

// sendMadeUp sends n unauthenticated requests, each with a method and a
// path nobody has sent before, over a few keep-alive connections.
func sendMadeUp(t *testing.T, env *apitest.Env, prefix string, n int) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	paths := []string{"/api/rate-limits/%s", "/%s", "/api/%s/x", "/metrics/%s"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				tag := fmt.Sprintf("%s%d", prefix, i)
				req, err := http.NewRequest("M"+strings.ToUpper(tag), env.URL+fmt.Sprintf(paths[i%len(paths)], tag), nil)
				if err != nil {
					errs <- err
					return
				}
				resp, err := hc.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The HTTP metrics are counted before authentication; a client choosing
// their labels could grow /metrics (and rlapi's memory) without bound.
func TestMetricLabelsAreBounded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: -1})
	sendMadeUp(t, env, "warm", 100)
	before := httpSeries(t, env)
	sendMadeUp(t, env, "attack", 10_000)
	after := httpSeries(t, env)
	// The second scrape adds at most the series of the first scrape itself.
	if len(after) > len(before)+len(before)/10+20 {
		t.Fatalf("rlapi_http_* series grew from %d to %d lines after 10,000 made-up methods and paths; e.g. %q",
			len(before), len(after), after[len(after)-1])
	}
	known := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "other": true}
	for _, line := range after {
		i := strings.Index(line, `method="`)
		if i < 0 {
			continue
		}
		m := line[i+len(`method="`):]
		m = m[:strings.IndexByte(m, '"')]
		if !known[m] {
			t.Fatalf("series with a method label from the request: %s", line)
		}
		if strings.Contains(line, "attack") || strings.Contains(line, "warm") {
			t.Fatalf("series with a label from the request path: %s", line)
		}
	}
}
